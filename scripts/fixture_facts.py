#!/usr/bin/env python3
"""Reads the captured trace fixtures and writes the figures golden tests check.

Every figure is taken from the file with the framework's own readers
(TensorFlow's generated protobuf classes, Python's json), independently of
cuswap's C++ importers, so a golden test compares two separate readings.

What each figure means, per format (`format` uses cuswap's format names):
  tf1-timeline    ops: `ph:"X"` events of cat "Op"; tensors: `ph:"N"` tensor
                  objects; described_tensors: `ph:"O"` snapshots carrying an
                  allocation_description; flows: `ph:"s"` events;
                  reported_peak_bytes: max of the `ph:"C"` Memory counter of
                  `allocator` (the allocator whose counter peaks highest);
                  counter_peak_bytes: that max for every allocator.
  tf1-step-stats  ops: NodeExecStats over all devices; tensors: NodeOutputs
                  with an allocation_description; allocation_records /
                  free_records: AllocationRecords with alloc_bytes > 0 / < 0;
                  reported_peak_bytes: max AllocatorMemoryUsed.allocator_bytes_in_use
                  of `allocator` (the allocator's own count, weights included);
                  records_live_peak_bytes: max over time of the running sum of
                  that allocator's allocation records (this step's own
                  allocations only); max_op_peak_bytes: max per-op peak_bytes.
  tf2-xplane      ops: events named "<node>:<OpType>" on the host plane (one
                  per op run); tensors / deallocations: MemoryAllocation /
                  MemoryDeallocation events of `allocator`;
                  reported_peak_bytes: max `bytes_allocated` stat of those
                  events; lifetime_peak_bytes_in_use: max `peak_bytes_in_use`
                  (the allocator's peak since it was made, warm-up included).
  tf2-memory-profile  reported_peak_bytes: profileSummary.peakStats.heapAllocatedBytes
                  of `allocator`; snapshots / sampled_snapshots: lengths of
                  memoryProfileSnapshots / sampledTimelineSnapshots; ops: 0.
  torch-profiler  ops: `ph:"X"` events of cat "cpu_op"; tensors / frees:
                  "[memory]" events of the device with Bytes > 0 / < 0;
                  reported_peak_bytes: max "Total Allocated" of those events;
                  device_type: 0 CPU, 1 CUDA.
  torch-snapshot  tensors: "alloc" actions in device_traces; frees:
                  "free_completed"; reported_peak_bytes: max running sum.

GPU captures (a device lane or plane with kernels) add the figures of the
device's timeline, all in nanoseconds from the raw timestamps:
  device_ops      (PyTorch, TF2) kernels, copies and sets on the devices;
  aggregate_events, joinable_kernels (TF1) events of the stream:all and
                  memcpy lanes, and kernels on stream lanes named like an
                  op of the executor's lane;
  device          the GPU the figures are about (TF2: the one whose
                  allocator served the most bytes; PyTorch: the one with
                  the most [memory] events);
  step_span_ns    the step on the device: from the first start to the last
                  end of the device's kernels (and sets) in it; host-device
                  copies run on copy engines and are left out (TF1: every
                  X event of the GPU's lanes; PyTorch: work launched, by
                  correlation, inside the middle ProfilerStep#N; TF2: the
                  GPU plane's stream lines);
  busiest_stream_busy_ns  the largest union of kernel intervals of one
                  stream (copies excluded) within the step;
  sample_ops      a few kernels as [name, start_ns, duration_ns], start
                  from the first X event of the file (TF1) or from the
                  step's first kernel (TF2, PyTorch);
TF1 timelines captured on a CPU have step_span_ns (first op start to last
op end) and sample_ops (ops by args.name) too.
  running_peak_bytes (PyTorch) the device's live bytes as the running sum
                  of its [memory] events says, memory from before the trace
                  included: max(sum) - min(0, min(sum)).

Usage: fixture_facts.py [--root tests/data] [--write | --check | --markdown] [FILE...]
  (prints the figures as JSON; --write puts them in <root>/expected.json,
  --check compares that file with the fixtures, --markdown prints a table)
"""

import argparse
import gzip
import json
import os
import re
import sys

OP_EVENT = re.compile(r"^[^:\s]+:[A-Za-z_]\w*$")


def _load(path):
    with open(path, "rb") as f:
        data = f.read()
    return gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data


def _union_ns(intervals):
    busy, end = 0, None
    for start, stop in sorted(intervals):
        if end is None or start > end:
            busy += stop - start
            end = stop
        elif stop > end:
            busy += stop - end
            end = stop
    return busy


def _sample(kernels, origin_ns, count=5):
    """Evenly spaced kernels, by start, as [name, start from origin, duration]."""
    kernels = sorted(kernels, key=lambda k: (k[1], k[0]))
    if not kernels:
        return []
    picks = sorted({round(i * (len(kernels) - 1) / max(count - 1, 1)) for i in range(count)})
    return [[kernels[i][0], kernels[i][1] - origin_ns, kernels[i][2]] for i in picks]


def _timeline_gpu_facts(events):
    """Step span and stream busy time of a TF1 GPU timeline (lanes by process name)."""
    names = {e["pid"]: e["args"]["name"] for e in events
             if e.get("ph") == "M" and e.get("name") == "process_name"}
    lanes = {}
    for pid, name in names.items():
        low = name.lower()
        if "gpu:" not in low or not low.endswith(" compute"):
            continue
        lanes[pid] = low[: -len(" compute")]
    executor_names = {(lane, e.get("args", {}).get("name")) for e in events
                      if e.get("ph") == "X" and (lane := lanes.get(e.get("pid"))) and "/stream:" not in lane
                      and not lane.endswith("/memcpy")}
    executor_names = {name for lane, name in executor_names}
    aggregate = joinable = 0
    starts, ends, per_stream, kernels = [], [], {}, []
    # Sample starts count from the first op of the whole timeline.
    origin = min((int(e["ts"]) * 1000 for e in events if e.get("ph") == "X"), default=0)
    for e in events:
        if e.get("ph") != "X" or e.get("pid") not in lanes:
            continue
        ts, dur = int(e["ts"]) * 1000, int(e.get("dur", 0)) * 1000
        if e.get("name", "").startswith(("MEMCPYHtoD", "MEMCPYDtoH", "MEMCPYPtoP")):
            if lanes[e["pid"]].endswith(("/stream:all", "/memcpy")):
                aggregate += 1
            continue  # on a copy engine
        starts.append(ts)
        ends.append(ts + dur)
        lane = lanes[e["pid"]]
        if lane.endswith(("/stream:all", "/memcpy")):
            aggregate += 1
            continue
        m = re.search(r"/stream:(\d+)$", lane)
        if m and e.get("args", {}).get("name") in executor_names:
            joinable += 1
        if m:
            per_stream.setdefault(m.group(1), []).append((ts, ts + dur))
            kernels.append((e.get("args", {}).get("name", e.get("name")), ts, dur))
    if not per_stream:
        return {}
    return {"device": 0, "aggregate_events": aggregate, "joinable_kernels": joinable,
            "step_span_ns": max(ends) - min(starts),
            "busiest_stream_busy_ns": max(_union_ns(v) for v in per_stream.values()),
            "sample_ops": _sample(kernels, origin)}


def timeline_facts(path):
    events = json.loads(_load(path))["traceEvents"]
    counter_peak = {}
    facts = {"format": "tf1-timeline", "ops": 0, "tensors": 0, "described_tensors": 0, "flows": 0}
    for e in events:
        ph = e.get("ph")
        if ph == "X" and e.get("cat") == "Op":
            facts["ops"] += 1
        elif ph == "N" and e.get("cat") == "Tensor":
            facts["tensors"] += 1
        elif ph == "O":
            desc = e.get("args", {}).get("snapshot", {}).get("tensor_description", "")
            if "allocation_description" in desc:
                facts["described_tensors"] += 1
        elif ph == "s":
            facts["flows"] += 1
        elif ph == "C" and e.get("cat") == "Memory":
            for name, value in e.get("args", {}).items():
                counter_peak[name] = max(counter_peak.get(name, 0), int(value))
    facts["counter_peak_bytes"] = counter_peak
    gpu = _timeline_gpu_facts(events)
    if gpu:
        facts.update(gpu)
    else:  # a CPU capture: its ops as timeline.py wrote them
        ops = [(e.get("args", {}).get("name", e.get("name")), int(e["ts"]) * 1000, int(e.get("dur", 0)) * 1000)
               for e in events if e.get("ph") == "X" and e.get("cat") == "Op"]
        if ops:
            origin = min(t for _, t, _ in ops)
            facts["step_span_ns"] = max(t + d for _, t, d in ops) - origin
            facts["sample_ops"] = _sample(ops, origin)
    named = {k: v for k, v in counter_peak.items() if k}
    facts["allocator"] = max(named, key=named.get) if named else ""
    facts["reported_peak_bytes"] = named.get(facts["allocator"], 0)
    return facts


def step_stats_facts(path):
    from tensorflow.core.framework import step_stats_pb2

    stats = step_stats_pb2.StepStats()
    stats.ParseFromString(_load(path))
    in_use, op_peak, records = {}, {}, {}
    facts = {"format": "tf1-step-stats", "ops": 0, "tensors": 0, "allocation_records": 0, "free_records": 0,
             "devices": {}}
    for dev in stats.dev_stats:
        facts["devices"][dev.device] = len(dev.node_stats)
        for node in dev.node_stats:
            facts["ops"] += 1
            for out in node.output:
                if out.tensor_description.HasField("allocation_description"):
                    facts["tensors"] += 1
            for mem in node.memory:
                name = mem.allocator_name
                in_use[name] = max(in_use.get(name, 0), mem.allocator_bytes_in_use)
                op_peak[name] = max(op_peak.get(name, 0), mem.peak_bytes)
                for rec in mem.allocation_records:
                    records.setdefault(name, []).append((rec.alloc_micros, rec.alloc_bytes))
                    if rec.alloc_bytes > 0:
                        facts["allocation_records"] += 1
                    elif rec.alloc_bytes < 0:
                        facts["free_records"] += 1
    live_peak = {}
    for name, recs in records.items():
        # At one instant frees come first, as in cuswap's live-peak rule.
        live = peak = 0
        for _t, delta in sorted(recs, key=lambda r: (r[0], r[1] > 0)):
            live += delta
            peak = max(peak, live)
        live_peak[name] = peak
    allocator = max(in_use, key=in_use.get) if in_use else ""
    facts.update({
        "allocator": allocator,
        "reported_peak_bytes": in_use.get(allocator, 0),
        "records_live_peak_bytes": live_peak.get(allocator, 0),
        "max_op_peak_bytes": op_peak.get(allocator, 0),
    })
    return facts


def _stat_value(plane, stat):
    kind = stat.WhichOneof("value")
    if kind == "ref_value":
        return plane.stat_metadata[stat.ref_value].name
    return getattr(stat, kind) if kind else None


def xplane_facts(path):
    try:
        from tensorflow.tsl.profiler.protobuf import xplane_pb2
    except ImportError:  # older TensorFlow
        from tensorflow.core.profiler.protobuf import xplane_pb2

    space = xplane_pb2.XSpace()
    space.ParseFromString(_load(path))
    per = {}
    ops = 0
    for plane in space.planes:
        if not plane.name.startswith("/host:"):
            continue
        names = {k: v.name for k, v in plane.stat_metadata.items()}
        for line in plane.lines:
            for ev in line.events:
                name = plane.event_metadata[ev.metadata_id].name
                if name not in ("MemoryAllocation", "MemoryDeallocation"):
                    if OP_EVENT.match(name):
                        ops += 1
                    continue
                stats = {names[s.metadata_id]: _stat_value(plane, s) for s in ev.stats}
                a = per.setdefault(stats.get("allocator_name", ""), {
                    "tensors": 0, "deallocations": 0, "bytes_allocated": 0, "peak_bytes_in_use": 0,
                    "allocation_bytes": 0})
                a["tensors" if name == "MemoryAllocation" else "deallocations"] += 1
                if name == "MemoryAllocation":
                    a["allocation_bytes"] += int(stats.get("allocation_bytes") or stats.get("requested_bytes") or 0)
                a["bytes_allocated"] = max(a["bytes_allocated"], int(stats.get("bytes_allocated") or 0))
                a["peak_bytes_in_use"] = max(a["peak_bytes_in_use"], int(stats.get("peak_bytes_in_use") or 0))
    # Of several GPUs, the one whose allocator served the most bytes.
    gpus = [k for k in per if re.fullmatch(r"GPU_\d+_bfc", k)]
    allocator = (max(gpus, key=lambda k: per[k]["allocation_bytes"]) if gpus
                 else max(per, key=lambda k: per[k]["tensors"]) if per else "")
    a = per.get(allocator, {"tensors": 0, "deallocations": 0, "bytes_allocated": 0, "peak_bytes_in_use": 0})
    facts = {
        "format": "tf2-xplane", "ops": ops, "tensors": a["tensors"], "deallocations": a["deallocations"],
        "allocator": allocator, "reported_peak_bytes": a["bytes_allocated"],
        "lifetime_peak_bytes_in_use": a["peak_bytes_in_use"], "allocators": sorted(per),
    }
    # The GPU whose allocator served the most bytes: its plane's stream lines
    # are the device's timeline.
    gpu_bytes = {int(k.split("_")[1]): v["allocation_bytes"] for k, v in per.items()
                 if re.fullmatch(r"GPU_\d+_bfc", k)}
    device = max(gpu_bytes, key=gpu_bytes.get) if gpu_bytes else None
    device_ops = sum(len(line.events) for plane in space.planes if plane.name.startswith("/device:GPU:")
                     for line in plane.lines if line.name.startswith("Stream"))
    if device_ops:
        facts["device_ops"] = device_ops
    best = None
    for plane in space.planes:
        if plane.name != f"/device:GPU:{device}":
            continue
        spans, per_stream, kernels = [], {}, []
        for line in plane.lines:
            if not line.name.startswith("Stream"):
                continue
            for ev in line.events:
                name = plane.event_metadata[ev.metadata_id].name
                start = line.timestamp_ns + ev.offset_ps // 1000
                dur = ev.duration_ps // 1000
                if not re.match(r"Memcpy(H2D|D2H|HtoD|DtoH|P2P)", name):
                    spans.append((start, start + dur))
                    per_stream.setdefault(line.id, []).append((start, start + dur))
                    kernels.append((name, start, dur))
        if kernels:
            best = (spans, per_stream, kernels)
    if best:
        spans, per_stream, kernels = best
        origin = min(s for s, _ in spans)
        facts.update({"device": device, "step_span_ns": max(e for _, e in spans) - origin,
                      "busiest_stream_busy_ns": max(_union_ns(v) for v in per_stream.values()),
                      "sample_ops": _sample(kernels, origin)})
    return facts


def memory_profile_facts(path):
    doc = json.loads(_load(path))
    per = doc.get("memoryProfilePerAllocator", {})
    peaks = {k: int(v["profileSummary"]["peakStats"].get("heapAllocatedBytes", 0)) for k, v in per.items()}
    allocator = max(peaks, key=peaks.get) if peaks else ""
    chosen = per.get(allocator, {})
    return {
        "format": "tf2-memory-profile", "ops": 0, "tensors": 0, "allocator": allocator,
        "reported_peak_bytes": peaks.get(allocator, 0),
        "snapshots": len(chosen.get("memoryProfileSnapshots", [])),
        "sampled_snapshots": len(chosen.get("sampledTimelineSnapshots", [])),
        "allocators": sorted(per),
    }


def torch_profiler_facts(path):
    doc = json.loads(_load(path))
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    ops = sum(1 for e in events if e.get("ph") == "X" and e.get("cat") in ("cpu_op", "Operator")
              and not str(e.get("name", "")).startswith("ProfilerStep#"))
    per = {}
    for e in events:
        if e.get("name") != "[memory]":
            continue
        args = e.get("args", {})
        key = (int(args.get("Device Type", 0)), int(args.get("Device Id", -1)))
        d = per.setdefault(key, {"tensors": 0, "frees": 0, "peak": 0})
        size = int(args.get("Bytes", 0))
        d["tensors" if size > 0 else "frees"] += 1
        d["peak"] = max(d["peak"], int(args.get("Total Allocated", 0)))
    # The accelerator when there is one, else the CPU.
    key = max(per, key=lambda k: (k[0] != 0, per[k]["tensors"])) if per else (0, -1)
    d = per.get(key, {"tensors": 0, "frees": 0, "peak": 0})
    facts = {
        "format": "torch-profiler", "ops": ops, "tensors": d["tensors"], "frees": d["frees"],
        "allocator": ("cpu" if key[0] == 0 else f"cuda:{key[1]}"), "device_type": key[0], "device_id": key[1],
        "reported_peak_bytes": d["peak"],
    }
    device_ops = sum(1 for e in events if e.get("ph") == "X" and e.get("cat") in
                     ("kernel", "Kernel", "gpu_memcpy", "Memcpy", "gpu_memset", "Memset"))
    if device_ops:
        facts["device_ops"] = device_ops
    if key[0] == 1:
        total = low = high = 0
        memory = [e for e in events if e.get("name") == "[memory]"
                  and (int(e["args"].get("Device Type", 0)), int(e["args"].get("Device Id", -1))) == key]
        for e in sorted(memory, key=lambda e: (e["ts"], int(e["args"]["Bytes"]) > 0)):
            total += int(e["args"]["Bytes"])
            low, high = min(low, total), max(high, total)
        facts["running_peak_bytes"] = high - low
        facts.update(_torch_gpu_facts(events, key[1]))
    return facts


def _torch_gpu_facts(events, device):
    """The middle ProfilerStep on the device: the work its launches put there."""
    launches = {e["args"]["correlation"]: e["ts"] for e in events
                if e.get("ph") == "X" and e.get("cat") in ("cuda_runtime", "Runtime")
                and "correlation" in e.get("args", {})}
    steps = sorted((e["ts"], e["ts"] + e.get("dur", 0)) for e in events
                   if e.get("ph") == "X" and str(e.get("name", "")).startswith("ProfilerStep#"))
    if not steps:
        return {}
    start, end = steps[len(steps) // 2]
    spans, per_stream, kernels = [], {}, []
    for e in events:
        if e.get("ph") != "X" or e.get("cat") not in ("kernel", "Kernel", "gpu_memcpy", "Memcpy",
                                                        "gpu_memset", "Memset"):
            continue
        args = e.get("args", {})
        if int(args.get("device", 0)) != device:
            continue
        host = launches.get(args.get("correlation"))
        if host is None or not start <= host < end:
            continue
        ts, dur = round(e["ts"] * 1000), round(e.get("dur", 0) * 1000)
        if e["cat"] in ("gpu_memcpy", "Memcpy"):
            continue  # on a copy engine
        spans.append((ts, ts + dur))
        if e["cat"] in ("kernel", "Kernel"):
            per_stream.setdefault(args.get("stream"), []).append((ts, ts + dur))
            kernels.append((e["name"], ts, dur))
    if not kernels:
        return {}
    origin = min(s for s, _ in spans)
    return {"device": device, "step_span_ns": max(e for _, e in spans) - origin,
            "busiest_stream_busy_ns": max(_union_ns(v) for v in per_stream.values()),
            "sample_ops": _sample(kernels, origin)}


def torch_snapshot_facts(path):
    doc = json.loads(_load(path))
    allocs = frees = live = peak = 0
    for trace in doc.get("device_traces", []):
        for e in trace:
            if e.get("action") == "alloc":
                allocs += 1
                live += int(e["size"])
                peak = max(peak, live)
            elif e.get("action") == "free_completed":
                frees += 1
                live -= int(e["size"])
    return {"format": "torch-snapshot", "ops": 0, "tensors": allocs, "frees": frees, "allocator": "cuda:0",
            "reported_peak_bytes": peak}


def facts_for(path):
    base = os.path.basename(path)
    for suffix, fn in ((".timeline.json", timeline_facts), (".step_stats.pb", step_stats_facts),
                       (".xplane.pb", xplane_facts), (".memory_profile.json", memory_profile_facts),
                       (".trace.json", torch_profiler_facts), (".snapshot.json", torch_snapshot_facts)):
        if base.endswith(suffix) or base.endswith(suffix + ".gz"):
            return fn(path)
    return None


def markdown(facts):
    """One row per file: the figures every format has, then the format's own."""
    common = ("format", "ops", "tensors", "allocator", "reported_peak_bytes", "size_bytes")
    rows = ["| file | format | ops | tensors | allocator | reported peak (bytes) | size | other figures |",
            "| --- | --- | ---: | ---: | --- | ---: | ---: | --- |"]
    for path, f in facts.items():
        other = ", ".join(f"{k}={json.dumps(v, sort_keys=True)}" for k, v in sorted(f.items())
                          if k not in common and k not in ("devices", "allocators", "counter_peak_bytes", "sample_ops"))
        if "counter_peak_bytes" in f:
            other += ", counter_peak_bytes=" + json.dumps(f["counter_peak_bytes"], sort_keys=True)
        rows.append(f"| `{path}` | {f['format']} | {f['ops']} | {f['tensors']} | `{f['allocator']}` | "
                    f"{f['reported_peak_bytes']} | {f['size_bytes']} | {other} |")
    return "\n".join(rows) + "\n"


def main(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data"))
    p.add_argument("--write", action="store_true", help="write <root>/expected.json instead of printing")
    p.add_argument("--markdown", action="store_true", help="print a table for tests/data/README.md")
    p.add_argument("--check", action="store_true", help="exit 1 when <root>/expected.json differs from the files")
    p.add_argument("files", nargs="*", help="only these files (default: every fixture under --root)")
    a = p.parse_args(argv)
    root = os.path.normpath(a.root)
    paths = a.files or sorted(os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs)
    out = {}
    for path in paths:
        facts = facts_for(path)
        if facts is None:
            continue
        facts["size_bytes"] = os.path.getsize(path)
        out[os.path.relpath(path, root)] = facts
    if a.check:
        expected_path = os.path.join(root, "expected.json")
        try:
            with open(expected_path) as f:
                recorded = json.load(f)
        except (OSError, ValueError) as e:
            print(f"fixture_facts: {expected_path}: cannot read it: {e}", file=sys.stderr)
            sys.exit(1)
        bad = sorted(k for k in set(recorded) | set(out) if recorded.get(k) != out.get(k))
        for k in bad:
            print(f"fixture_facts: {k}: expected.json has {recorded.get(k)}, the file gives {out.get(k)}",
                  file=sys.stderr)
        print(f"{len(out) - len(bad)} passed, {len(bad)} failed")
        sys.exit(1 if bad else 0)
    text = markdown(out) if a.markdown else json.dumps(out, indent=2, sort_keys=True) + "\n"
    if a.write:
        with open(os.path.join(root, "expected.json"), "w") as f:
            f.write(text)
        print(f"wrote {len(out)} entries to {os.path.join(root, 'expected.json')}")
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main(sys.argv[1:])
