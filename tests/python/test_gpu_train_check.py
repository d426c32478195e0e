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


def table_lines(rows, reference):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        check.table(rows, reference)
    return out.getvalue().splitlines()


class Table(unittest.TestCase):
    def test_a_run_that_failed_has_a_row_with_its_error(self):
        rows = [("stock (largest that fits)",
                 {"batch": 64, "completed": True, "images_per_s": 2000.0, "step_ms": 32.0}),
                ("cuswap.torch.enable x2",
                 {"batch": 128, "completed": True, "images_per_s": 500.0, "step_ms": 256.0,
                  "cuswap": {"prefetches_on_demand": 6}}),
                ("cuswap run x2",
                 {"batch": 128, "way": "run", "completed": False,
                  "error": "exit 1: an illegal memory access"})]
        header, stock, pluggable, failed = table_lines(rows, 2000.0)
        self.assertIn("images/s", header)
        self.assertEqual(stock.split()[-4:], ["2000", "1.00", "32.0", "-"])
        self.assertEqual(pluggable.split()[-4:], ["500", "0.25", "256.0", "6"])
        words = failed.split()
        self.assertEqual(words[3:8], ["128", "no", "-", "-", "-"])
        self.assertTrue(failed.endswith("exit 1: an illegal memory access"))


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


if __name__ == "__main__":
    unittest.main()
