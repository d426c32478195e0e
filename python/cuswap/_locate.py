"""Where libcuswap.so is, for code that must name the file (cuswap.torch).

In order, as cuswap's own CLI looks (cli/locate.h), with the loaded copy first
so that a process never ends up with two:
  1. the copy already loaded in this process (/proc/self/maps);
  2. $CUSWAP_LIBRARY, where it is set and not empty; it must name a file;
  3. beside a `cuswap` executable on PATH: BUILD/hooks/libcuswap.so for a
     build tree's BUILD/cli/cuswap, PREFIX/lib*/libcuswap.so for an
     install's PREFIX/bin/cuswap.
"""

from __future__ import annotations

import glob
import os
import shutil
from typing import List, Optional

from . import _shim

ENV_LIBRARY = "CUSWAP_LIBRARY"


def _beside(executable: str) -> List[str]:
    """The places a libcuswap.so belongs, for a cuswap executable at this path."""
    prefix = os.path.dirname(os.path.dirname(executable))
    places = [os.path.join(prefix, "hooks", "libcuswap.so")]  # a build tree
    for libdir in ("lib", "lib64"):  # an install (GNUInstallDirs)
        places.append(os.path.join(prefix, libdir, "libcuswap.so"))
    places += sorted(glob.glob(os.path.join(prefix, "lib", "*", "libcuswap.so")))  # multiarch
    return places


def _candidates() -> List[str]:
    """The files looked at beside every `cuswap` on PATH (as found and with links resolved)."""
    executable = shutil.which("cuswap")
    if executable is None:
        return []
    places: List[str] = []
    for path in (os.path.abspath(executable), os.path.realpath(executable)):
        for place in _beside(path):
            if place not in places:
                places.append(place)
    return places


def library_path(required: bool = False) -> Optional[str]:
    """The path of libcuswap.so: the loaded one, $CUSWAP_LIBRARY, or the one beside `cuswap`.

    Returns None where none is found, or with required=True raises
    FileNotFoundError saying what was looked for and where. A $CUSWAP_LIBRARY
    that names no file is always an error (FileNotFoundError): it was meant.
    """
    loaded = _shim.mapped_path()
    if loaded is not None:
        return loaded
    named = os.environ.get(ENV_LIBRARY, "")
    if named:
        if not os.path.isfile(named):
            raise FileNotFoundError(f"${ENV_LIBRARY} is {named!r}, which is not a file")
        return os.path.abspath(named)
    places = _candidates()
    for place in places:
        if os.path.isfile(place):
            return place
    if not required:
        return None
    if places:
        where = f"no libcuswap.so beside {shutil.which('cuswap')} (looked for {', '.join(places)})"
    else:
        where = "no cuswap executable on PATH"
    raise FileNotFoundError(
        f"libcuswap.so not found: not loaded in this process, ${ENV_LIBRARY} not set, and {where}; "
        f"set {ENV_LIBRARY}=/path/to/libcuswap.so or put an installed cuswap on PATH"
    )
