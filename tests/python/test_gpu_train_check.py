"""The training step of the GPU check kit (scripts/gpu_train_check.py): the
runs it starts and the table it prints, without a GPU."""

import contextlib
import importlib.util
import io
import os
import unittest

import support

_spec = importlib.util.spec_from_file_location(
    "gpu_train_check", os.path.join(support.SOURCE_DIR, "scripts", "gpu_train_check.py"))
check = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(check)


def table_lines(rows, references, link):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        check.tables(rows, references, link)
    return out.getvalue().splitlines()


def cells(line):
    return [c.strip() for c in line.strip().strip("|").split("|")]


class Table(unittest.TestCase):
    stock = {"batch": 64, "way": "stock", "completed": True, "images_per_s": 2000.0,
             "step_ms": 32.0, "peak_bytes": 7 * 2**30}
    uncapped = {"batch": 128, "way": "uncapped", "completed": True, "images_per_s": 3200.0,
                "step_ms": 40.0, "peak_bytes": 12 * 2**30}
    per_step = dict({k: 0 for k in check.PER_STEP}, vmm_maps=3, host_waits=1,
                    host_wait_us=2500, evictions=20, prefetches_planned=18,
                    prefetches_on_demand=2, bytes_to_host=2e9, bytes_to_device=1e9)
    pluggable = {"batch": 128, "way": "pluggable", "completed": True, "images_per_s": 2560.0,
                 "step_ms": 50.0, "peak_bytes": 8 * 2**30, "per_step": per_step}
    failed = {"batch": 256, "way": "run", "completed": False,
              "error": "exit 1: an illegal memory access"}

    def lines(self):
        rows = [("stock, capped", self.stock), ("stock, no cap", self.uncapped),
                ("cuswap.torch.enable", self.pluggable), ("cuswap run", self.failed)]
        return table_lines(rows, {64: self.stock, 128: self.uncapped}, (50e9, 40e9))

    def test_each_run_against_stock_at_its_batch_and_the_link(self):
        lines = self.lines()
        self.assertEqual(cells(lines[0])[:8], ["run", "batch", "images/s", "x stock", "step ms",
                                               "peak GiB", "link ms", "x bound"])
        stock, uncapped, pluggable = (cells(l) for l in lines[2:5])
        self.assertEqual(stock[1:8], ["64", "2000", "-", "32.0", "7.00", "-", "-"])
        self.assertEqual(uncapped[1:4], ["128", "3200", "-"])
        # 2 GB out at 40 GB/s is 50 ms, 1 GB in at 50 GB/s 20 ms: the link
        # allows 50 ms, above stock's 40, and the step takes 50.
        self.assertEqual(pluggable[1:8], ["128", "2560", "0.80", "50.0", "8.00", "50.0", "1.00"])

    def test_a_run_that_failed_has_a_row_with_its_error(self):
        failed = cells(self.lines()[5])
        self.assertEqual(failed[:4], ["cuswap run", "256", "-", "-"])
        self.assertEqual(failed[-1], "exit 1: an illegal memory access")

    def test_counters_per_step_for_the_runs_under_cuswap(self):
        lines = self.lines()
        header = lines.index(next(l for l in lines if l.startswith("| run | batch | create")))
        rows = [cells(l) for l in lines[header + 2:] if l.startswith("|")]
        self.assertEqual(len(rows), 1)
        self.assertEqual(rows[0][:2], ["cuswap.torch.enable", "128"])
        self.assertEqual(rows[0][4], "3")  # maps
        self.assertEqual(rows[0][11:], ["1", "2.5", "20", "18", "2", "2000", "1000"])


class Plan(unittest.TestCase):
    def test_every_row_the_check_promises(self):
        runs = check.plan(64)
        self.assertEqual(runs[0], ("stock, capped", "stock", 64, False))
        ways = {(way, batch, bench) for _, way, batch, bench in runs}
        for batch in (128, 256):
            self.assertIn(("uncapped", batch, False), ways)
        for batch in (64, 128, 256):
            for way in ("pluggable", "run"):
                self.assertIn((way, batch, False), ways)
        self.assertIn(("pluggable", 128, True), ways)
        self.assertEqual(len(runs), 10)

    def test_no_run_starts_once_the_time_is_spent(self):
        a = check.parse_args(["--cli", "/b/cli/cuswap", "--out", "/tmp/x", "--time-limit-s", "0"])
        r = check.Runner(a, lambda text: None).start("stock, capped", "stock", 64)
        self.assertFalse(r["completed"])
        self.assertTrue(r["skipped"])
        self.assertIn("were spent", r["error"])


class Commands(unittest.TestCase):
    def test_each_way_in(self):
        a = check.parse_args(["--cli", "/b/cli/cuswap", "--out", "/tmp/x", "--memory-gib", "8"])
        stock = check.command(a, "stock", 64)
        self.assertNotIn("/b/cli/cuswap", stock)
        self.assertEqual(stock[-6:], ["--way", "stock", "--batch", "64", "--memory-gib", "8.0"])
        run = check.command(a, "run", 128)
        self.assertEqual(run[:5], ["/b/cli/cuswap", "run", "--budget", "8GiB", "--stats"])
        self.assertNotIn("--torch-pluggable", run)
        pluggable = check.command(a, "pluggable", 128)
        self.assertEqual(pluggable[5], "--torch-pluggable")
        self.assertEqual(pluggable[pluggable.index("--") + 1:][-5:],
                         ["pluggable", "--batch", "128", "--memory-gib", "8.0"])
        self.assertEqual(check.command(a, "pluggable", 128, cudnn_benchmark=True)[-1],
                         "--cudnn-benchmark")
        self.assertEqual(check.command(a, "run", 2, smoke=True)[-1], "--smoke")


if __name__ == "__main__":
    unittest.main()
