#!/usr/bin/env python3
"""Converts a PyTorch CUDA memory snapshot pickle (torch.cuda.memory._dump_snapshot)
to the JSON that cuswap's torch-snapshot importer reads.

The pickle is untrusted: it is read with an unpickler that refuses every
global, so no code in it runs and only plain data (dicts, lists, strings,
numbers) comes out. Bytes become lists of integers; nothing else changes.

Usage: snapshot_to_json.py IN.pickle[.gz] OUT.json[.gz]
"""

import gzip
import io
import json
import pickle
import sys


class PlainData(pickle.Unpickler):
    def find_class(self, module, name):
        raise pickle.UnpicklingError(f"refusing the global {module}.{name}: not plain data")


def plain(value):
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, (bytes, bytearray)):
        return list(value)
    return value


def main(argv):
    if len(argv) != 2:
        sys.exit(__doc__)
    src, dst = argv
    with open(src, "rb") as f:
        data = f.read()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    snapshot = plain(PlainData(io.BytesIO(data)).load())
    text = json.dumps(snapshot, separators=(",", ":")).encode()
    if dst.endswith(".gz"):
        with open(dst, "wb") as f:
            f.write(gzip.compress(text, 9, mtime=0))
    else:
        with open(dst, "wb") as f:
            f.write(text)


if __name__ == "__main__":
    main(sys.argv[1:])
