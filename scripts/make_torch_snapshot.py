#!/usr/bin/env python3
"""Writes a PyTorch CUDA memory snapshot, as JSON, for the importer's tests.

No machine here has a GPU, so torch.cuda.memory._snapshot() cannot run. This
script builds a dict with the structure that function documents in
torch/cuda/memory.py (Snapshot, Segment, Block, TraceEntry) from a simulated
training loop over a caching allocator: segments with blocks, and one
device_traces list per device with alloc / free_requested / free_completed /
segment_alloc actions, frames and time_us, as a recent PyTorch records them.
Weights are allocated before the history starts (they appear only as active
blocks in segments), as with _record_memory_history called after model setup.

Usage: make_torch_snapshot.py OUT.json [--steps 3] [--seed 0]
"""

import argparse
import json
import random


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("out")
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    rng = random.Random(a.seed)

    segment_base = 0x7F0000000000
    segment_size = 20 << 20
    next_addr = segment_base
    blocks = {}  # addr -> (size, requested)

    def alloc(size):
        nonlocal next_addr
        rounded = (size + 511) // 512 * 512
        addr = next_addr
        next_addr += rounded
        blocks[addr] = (rounded, size)
        return addr, rounded

    # Weights: allocated before the history.
    weights = [alloc(rng.choice([4096, 65536, 262144]))[0] for _ in range(6)]
    trace = [{"action": "segment_alloc", "addr": segment_base, "size": segment_size, "stream": 0,
              "time_us": 1000, "frames": [{"filename": "train.py", "line": 10, "name": "<module>"}]}]
    t = 1000
    for step in range(a.steps):
        acts = []
        for layer in range(4):
            t += rng.randint(5, 50)
            addr, size = alloc(rng.choice([8192, 32768, 131072]))
            trace.append({"action": "alloc", "addr": addr, "size": size, "stream": 0, "time_us": t,
                          "frames": [{"filename": "model.py", "line": 20 + layer, "name": f"forward_layer{layer}"}]})
            acts.append((addr, size))
        for addr, size in reversed(acts):
            t += rng.randint(5, 50)
            trace.append({"action": "free_requested", "addr": addr, "size": size, "stream": 0, "time_us": t,
                          "frames": [{"filename": "model.py", "line": 40, "name": "backward"}]})
            t += 1
            trace.append({"action": "free_completed", "addr": addr, "size": size, "stream": 0, "time_us": t,
                          "frames": []})
            del blocks[addr]
            next_addr = min(next_addr, addr) if not any(b >= addr for b in blocks) else next_addr
    # One tensor still live at the snapshot, allocated inside the history.
    t += 10
    addr, size = alloc(16384)
    trace.append({"action": "alloc", "addr": addr, "size": size, "stream": 0, "time_us": t,
                  "frames": [{"filename": "train.py", "line": 30, "name": "keep"}]})

    seg_blocks = []
    for b_addr in sorted(blocks):
        b_size, b_req = blocks[b_addr]
        seg_blocks.append({"address": b_addr, "size": b_size, "requested_size": b_req,
                           "state": "active_allocated", "frames": []})
    used = sum(b["size"] for b in seg_blocks)
    seg_blocks.append({"address": segment_base + used, "size": segment_size - used, "requested_size": 0,
                       "state": "inactive", "frames": []})
    snapshot = {
        "segments": [{"device": 0, "address": segment_base, "total_size": segment_size, "stream": 0,
                      "segment_type": "large", "allocated_size": used, "active_size": used,
                      "requested_size": sum(b["requested_size"] for b in seg_blocks), "blocks": seg_blocks}],
        "device_traces": [trace],
        "allocator_settings": {"PYTORCH_CUDA_ALLOC_CONF": "", "max_split_size": -1},
    }
    del weights
    with open(a.out, "w") as f:
        json.dump(snapshot, f, indent=1)


if __name__ == "__main__":
    main()
