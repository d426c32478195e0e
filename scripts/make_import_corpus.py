#!/usr/bin/env python3
"""Cuts the fuzz seed corpus (tests/tracer/import/corpus/<format>/) out of the
captured fixtures in tests/data: each seed is a small but real prefix of a
captured file (the first events, snapshots or nodes), re-serialized, so the
fuzz replay (every prefix and bit flip of every seed) stays fast.

Usage: make_import_corpus.py [--data tests/data] [--out tests/tracer/import/corpus]
"""

import argparse
import gzip
import json
import os


def load(path):
    with open(path, "rb") as f:
        data = f.read()
    return gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data


def write(out, fmt, name, data):
    d = os.path.join(out, fmt)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def chrome_seed(events, keep):
    return json.dumps({"traceEvents": events[:keep]}, separators=(",", ":")).encode()


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--data", default="tests/data")
    p.add_argument("--out", default="tests/tracer/import/corpus")
    a = p.parse_args()

    # TF1 timeline: metadata, the first ops and their tensor objects.
    ev = json.loads(load(os.path.join(a.data, "tf1/lstm-l1-t32-b2.timeline.json.gz")))["traceEvents"]
    meta = [e for e in ev if e["ph"] == "M"]
    ops = [e for e in ev if e["ph"] == "X"][:4]
    names = {o["args"]["name"] for o in ops}
    objs = [e for e in ev if e["ph"] in "NOD" and e["name"].split(":")[0] in names][:6]
    counters = [e for e in ev if e["ph"] == "C"][:2]
    write(a.out, "tf1_timeline", "seed.json", chrome_seed(meta + ops + objs + counters, 100))

    # PyTorch profiler: ops, memory events and one step.
    ev = json.loads(load(os.path.join(a.data, "torch/lstm-l4-t32-b2.trace.json.gz")))["traceEvents"]
    step = [e for e in ev if e.get("name", "").startswith("ProfilerStep#")][:1]
    ops = [e for e in ev if e.get("cat") == "cpu_op"][:4]
    mem = [e for e in ev if e.get("name") == "[memory]"][:4]
    for e in ops + mem:
        e.get("args", {}).pop("Concrete Inputs", None)
        e.get("args", {}).pop("Input type", None)
        e.get("args", {}).pop("Input Strides", None)
    write(a.out, "torch_profiler", "seed.json",
          json.dumps({"schemaVersion": 1, "traceEvents": step + ops + mem}, separators=(",", ":")).encode())

    # TF2 memory profile: a few sampled snapshots.
    doc = json.loads(load(os.path.join(a.data, "tf2/lstm-l1-t32-b2.memory_profile.json.gz")))
    for per in doc["memoryProfilePerAllocator"].values():
        per["sampledTimelineSnapshots"] = per.get("sampledTimelineSnapshots", [])[:4]
        per["memoryProfileSnapshots"] = per.get("memoryProfileSnapshots", [])[:2]
        per["activeAllocations"] = per.get("activeAllocations", [])[:2]
        per["specialAllocations"] = per.get("specialAllocations", [])[:1]
    write(a.out, "tf2_memory_profile", "seed.json", json.dumps(doc, separators=(",", ":")).encode())

    # PyTorch snapshot: the synthetic one, cut down.
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    snap = json.loads(load(os.path.join(root, "tests", "tracer", "import", "data",
                                        "synthetic.snapshot.json")))
    snap["device_traces"][0] = snap["device_traces"][0][:6]
    snap["segments"][0]["blocks"] = snap["segments"][0]["blocks"][:2]
    write(a.out, "torch_snapshot", "seed.json", json.dumps(snap, separators=(",", ":")).encode())

    # Protobufs, cut with TensorFlow's own classes.
    from tensorflow.core.framework import step_stats_pb2
    try:
        from tensorflow.tsl.profiler.protobuf import xplane_pb2
    except ImportError:
        from tsl.profiler.protobuf import xplane_pb2

    stats = step_stats_pb2.StepStats()
    stats.ParseFromString(load(os.path.join(a.data, "tf1/lstm-l1-t32-b2.step_stats.pb.gz")))
    for dev in stats.dev_stats:
        del dev.node_stats[4:]
    write(a.out, "tf1_step_stats", "seed.pb", stats.SerializeToString())

    space = xplane_pb2.XSpace()
    space.ParseFromString(load(os.path.join(a.data, "tf2/lstm-l1-t32-b2.xplane.pb.gz")))
    for plane in space.planes:
        kept = set()
        for line in plane.lines:
            wanted = [e for e in line.events
                      if plane.event_metadata[e.metadata_id].name in ("MemoryAllocation", "MemoryDeallocation")][:3]
            wanted += [e for e in line.events if ":" in plane.event_metadata[e.metadata_id].name
                       and "::" not in plane.event_metadata[e.metadata_id].name][:2]
            copies = [type(e)() for e in wanted]
            for c, e in zip(copies, wanted):
                c.CopyFrom(e)
            del line.events[:]
            line.events.extend(copies)
            kept |= {e.metadata_id for e in copies}
        for k in [k for k in plane.event_metadata if k not in kept]:
            del plane.event_metadata[k]
    write(a.out, "tf2_xplane", "seed.pb", space.SerializeToString())
    # A gzip seed: the inflater's paths.
    write(a.out, "gzip", "seed.json.gz", gzip.compress(chrome_seed(meta[:1] + ops[:1], 10), mtime=0))


if __name__ == "__main__":
    main()
