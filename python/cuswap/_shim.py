"""The C interface of a libcuswap.so already in this process (include/cuswap/cuswap.h).

Nothing here loads the library. It is found where the dynamic linker already
has it: in the global scope (LD_PRELOAD, or linked into the program), or, for
a copy opened privately (RTLD_LOCAL, as PyTorch's pluggable allocator opens
it), by the path /proc/self/maps shows, reopened with RTLD_NOLOAD, which
hands back the loaded copy or fails.

A handle once found is kept: the shim is linked with -z nodelete, so it
stays as long as the process. Not finding it is kept too, so that
iteration() without the shim costs nothing per step; loaded() looks again
every time, and so picks up a library loaded later (cuswap.torch.allocator
looks again after it has PyTorch load it).
"""

from __future__ import annotations

import ctypes
import json
import os
import re
import threading
from typing import Optional

# The file names the shim is loaded under: the build's and the install's
# libcuswap.so, or a versioned name should one ever be given to it.
_LIBRARY_NAME = re.compile(r"libcuswap\.so(\.[0-9]+)*")

_lock = threading.Lock()
_NOT_LOOKED = object()
_library = _NOT_LOOKED  # the bound CDLL, or None where it was looked for and not found


def mapped_path() -> Optional[str]:
    """The path of the libcuswap.so mapped into this process, from /proc/self/maps, or None."""
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="surrogateescape") as maps:
            for line in maps:
                # address perms offset dev inode [path]; the path may hold spaces.
                fields = line.rstrip("\n").split(maxsplit=5)
                if len(fields) < 6:
                    continue
                path = fields[5]
                if path.endswith(" (deleted)"):
                    continue
                if _LIBRARY_NAME.fullmatch(os.path.basename(path)):
                    return path
    except OSError:
        pass
    return None


def _bind(lib: ctypes.CDLL) -> ctypes.CDLL:
    """Gives the three C functions their prototypes (all take no arguments)."""
    lib.cuswap_iteration_begin.argtypes = []
    lib.cuswap_iteration_begin.restype = None
    lib.cuswap_stats_json.argtypes = []
    lib.cuswap_stats_json.restype = ctypes.c_char_p
    lib.cuswap_version.argtypes = []
    lib.cuswap_version.restype = ctypes.c_char_p
    return lib


def _global_scope() -> Optional[ctypes.CDLL]:
    try:
        everything = ctypes.CDLL(None)
        everything.cuswap_version  # AttributeError where no loaded object defines it
        return everything
    except (OSError, AttributeError):
        return None


def preloaded() -> bool:
    """True when the shim is in the global scope (LD_PRELOAD, `cuswap run`, linked in).

    Only then do the process's driver calls reach its hooks, which swapping needs.
    """
    return _global_scope() is not None


def _find() -> Optional[ctypes.CDLL]:
    # The global scope first: it also finds a shim under another file name.
    everything = _global_scope()
    if everything is not None:
        return everything
    path = mapped_path()
    if path is None:
        return None
    try:
        lib = ctypes.CDLL(path, mode=os.RTLD_NOLOAD | os.RTLD_LAZY)
        lib.cuswap_version
        return lib
    except (OSError, AttributeError):
        return None


def library(look_again: bool = False) -> Optional[ctypes.CDLL]:
    """The loaded libcuswap.so with its C functions bound, or None where it is not loaded.

    Where an earlier call found none, only look_again=True looks again.
    """
    global _library
    lib = _library
    if lib is not None and lib is not _NOT_LOOKED:
        return lib
    if lib is None and not look_again:
        return None
    with _lock:
        if _library is _NOT_LOOKED or (_library is None and look_again):
            found = _find()
            _library = _bind(found) if found is not None else None
        return _library


def loaded() -> bool:
    """True when libcuswap.so is loaded in this process (LD_PRELOAD, linked, or opened)."""
    return library(look_again=True) is not None


def iteration() -> None:
    """Marks the start of a training iteration (cuswap_iteration_begin); no-op without the shim."""
    lib = library()
    if lib is not None:
        lib.cuswap_iteration_begin()


def stats() -> dict:
    """The shim's counters (cuswap_stats_json) as a dict; {} without the shim or a budget."""
    lib = library()
    if lib is None:
        return {}
    text = lib.cuswap_stats_json()
    return json.loads(text.decode("utf-8")) if text else {}


def version() -> Optional[str]:
    """The loaded shim's version, "MAJOR.MINOR.PATCH" (cuswap_version), or None without it."""
    lib = library()
    if lib is None:
        return None
    text = lib.cuswap_version()
    return text.decode("utf-8") if text else None
