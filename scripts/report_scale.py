#!/usr/bin/env python3
"""How `cuswap report` scales: the size of the page and the time to write
and to draw it, for a real PyTorch capture with about 100k tensors.

It captures one training step of a hand-unrolled RNN on the CPU (every time
step allocates its own small tensors, forward and backward) with the
profiler's memory events, then writes the report at 50% of the peak with
the cuswap planner, and loads the page in headless Chromium. It prints one
line per figure; the medians of --repeat runs.

Usage: report_scale.py CUSWAP [--steps 12000] [--repeat 3] [--out DIR]
"""
import argparse
import gzip
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def capture(path, steps):
    import torch
    from torch.profiler import ProfilerActivity, profile

    torch.manual_seed(0)
    hidden = 16
    w = torch.randn(hidden, hidden, requires_grad=True)
    u = torch.randn(hidden, hidden, requires_grad=True)
    xs = torch.randn(steps, 1, hidden)
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        h = torch.zeros(1, hidden)
        for t in range(steps):
            h = torch.tanh(xs[t] @ w + h @ u)
        h.sum().backward()
    prof.export_chrome_trace(str(path.with_suffix("")))
    path.write_bytes(gzip.compress(path.with_suffix("").read_bytes()))
    path.with_suffix("").unlink()




def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("cuswap")
    p.add_argument("--steps", type=int, default=12000)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--out", help="keep the trace and the page here")
    a = p.parse_args()
    out = Path(a.out) if a.out else Path(tempfile.mkdtemp())
    out.mkdir(parents=True, exist_ok=True)
    trace = out / f"rnn-t{a.steps}.trace.json.gz"
    if not trace.exists():
        capture(trace, a.steps)
    print(f"trace: {trace} ({trace.stat().st_size} bytes gzipped)")
    summary = subprocess.run([a.cuswap, "inspect", str(trace)], capture_output=True, text=True,
                             check=True).stdout
    for line in summary.splitlines()[:8]:
        print("  " + line.strip())
    page = out / "report.html"
    writes = []
    for _ in range(a.repeat):
        start = time.monotonic()
        subprocess.run([a.cuswap, "report", str(trace), "--budget", "50%", "-o", str(page)],
                       check=True)
        writes.append(time.monotonic() - start)
    print(f"report written in {statistics.median(writes):.2f} s (median of {a.repeat}), "
          f"{page.stat().st_size} bytes")
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        print("chromium not installed: no load time")
        return
    loads, blank = [], []
    flags = [browser, "--headless", "--no-sandbox", "--disable-gpu",
             f"--user-data-dir={out / 'profile'}", "--dump-dom"]
    for target in (page, out / "blank.html"):
        if target.name == "blank.html":
            target.write_text("<!DOCTYPE html><html><body>x</body></html>")
        for _ in range(a.repeat):
            start = time.monotonic()
            dom = subprocess.run(flags + [target.as_uri()], capture_output=True, text=True,
                                 timeout=300).stdout
            (loads if target == page else blank).append(time.monotonic() - start)
            if target == page and 'data-ready="1"' not in dom[:2000]:
                sys.exit("the page's script did not finish")
    print(f"chromium loads and draws it in {statistics.median(loads):.2f} s "
          f"(an empty page: {statistics.median(blank):.2f} s; medians of {a.repeat})")


if __name__ == "__main__":
    main()
