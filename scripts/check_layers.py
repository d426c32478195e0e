#!/usr/bin/env python3
"""The layering of docs/architecture.md ("Folders, and which may use which"),
checked on the includes: every `#include "DIR/..."` in a production folder
names its own folder or one it may use. Prints each breach (file:line, the
include, what the folder may use) and exits 1 if there is any.

Usage: scripts/check_layers.py [ROOT]   (default: the checkout this script is in)
"""
import os
import re
import sys

# Folder -> the folders its code may include, besides its own (subfolders
# that are not listed here belong to their parent: policy/planners is policy).
MAY_USE = {
    "common": [],
    "allocator": ["common"],
    "tracer": ["common"],
    "tracer/import": ["common", "tracer", "proto"],
    "policy": ["common", "tracer"],
    "runtime": ["common", "allocator", "tracer", "policy"],
    "hooks": ["common", "allocator", "tracer", "policy", "runtime", "cuswap"],
    "cli": ["common", "tracer", "tracer/import", "policy"],
    "bench": ["common", "allocator", "tracer", "tracer/import", "policy", "cli", "tests/simcuda"],
}
# Folders includes may name that hold no production code of their own:
# generated protobuf headers, the public C header, simcuda's declarations.
OTHER_TARGETS = ["proto", "cuswap", "tests/simcuda"]
# (folder, header): why this one include crosses the table.
EXCEPTIONS = {
    ("cli", "allocator/swap_stats.h"):
        "the allocator's counters by name and meaning, a header-only list `cuswap inspect` prints",
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def folder_of(path, folders):
    """The longest folder in `folders` that holds `path`, or None."""
    best = None
    for f in folders:
        if (path == f or path.startswith(f + "/")) and (best is None or len(f) > len(best)):
            best = f
    return best


def breaches(root):
    targets = list(MAY_USE) + OTHER_TARGETS
    found = []
    for top in sorted({f.split("/")[0] for f in MAY_USE}):
        for dirpath, _, names in os.walk(os.path.join(root, top)):
            for name in sorted(names):
                if not name.endswith((".h", ".cpp", ".cu")):
                    continue
                path = os.path.relpath(os.path.join(dirpath, name), root)
                own = folder_of(path, MAY_USE)
                with open(os.path.join(root, path), errors="replace") as f:
                    for number, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if not m or "/" not in m.group(1):
                            continue
                        header = m.group(1)
                        target = folder_of(header, targets)
                        if target is None or target == own or target in MAY_USE[own]:
                            continue
                        if (own, header) in EXCEPTIONS:
                            continue
                        may = ", ".join(MAY_USE[own]) or "nothing else"
                        found.append(f"{path}:{number}: includes {header}: {own}/ may use {may}")
    return found


def main(argv):
    root = argv[1] if len(argv) > 1 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    found = breaches(root)
    for line in found:
        print(line)
    if found:
        print(f"check_layers: {len(found)} includes break docs/architecture.md's layering")
        return 1
    print("check_layers: every include keeps docs/architecture.md's layering")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
