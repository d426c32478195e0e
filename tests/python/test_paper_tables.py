"""scripts/paper_tables.py --quick: one row of each of the paper's tables,
each row's device memory the least that holds the paper's stock batch, and
cuswap's batch one its plan reaches within the paper's 10%."""

import importlib.util
import json
import os
import subprocess
import sys
import unittest

import support

SCRIPT = os.path.join(support.SOURCE_DIR, "scripts", "paper_tables.py")
KEYS = {"table", "model", "framework", "paper_stock", "paper_cuswap", "paper_ratio",
        "device_memory_bytes", "stock_batch", "no_swap_batch", "cuswap_batch", "cuswap_ratio",
        "time_ratio", "iteration_ns", "limit"}

_spec = importlib.util.spec_from_file_location("paper_tables", SCRIPT)
paper_tables = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(paper_tables)


def largest_batch_without_swapping(paths, budget):
    out = subprocess.run([support.cli(), "plan", "--max-batch", "--json", "--planner", "none",
                          "--budget", f"{budget}B", *paths], capture_output=True, text=True,
                         timeout=120)
    return json.loads(out.stdout)["rows"][0]["max_batch"]


class Quick(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        proc = subprocess.run([sys.executable, SCRIPT, "--quick", "--json", "--cuswap",
                               support.cli()], capture_output=True, text=True, timeout=300)
        if proc.returncode != 0:
            raise AssertionError(proc.stderr)
        cls.rows = json.loads(proc.stdout)

    def test_one_row_per_table_with_every_field(self):
        self.assertEqual([r["table"] for r in self.rows], ["1a", "2a", "2b"])
        for r in self.rows:
            self.assertLessEqual(KEYS, set(r), r["model"])
            self.assertAlmostEqual(r["paper_ratio"], r["paper_cuswap"] / r["paper_stock"],
                                   places=3)
            self.assertAlmostEqual(r["cuswap_ratio"], r["cuswap_batch"] / r["stock_batch"],
                                   places=3)
        self.assertEqual(self.rows[2]["model"], "NMT T=100")

    def test_memory_is_the_least_that_holds_the_stock_batch(self):
        for r in self.rows:
            stock = paper_tables.files(os.path.join(support.SOURCE_DIR, "tests", "data"),
                                       next(row[3] for row in paper_tables.ROWS
                                            if row[1] == r["model"]))
            memory = r["device_memory_bytes"]
            self.assertEqual(r["stock_batch"], r["paper_stock"])
            self.assertEqual(largest_batch_without_swapping(stock, memory), r["paper_stock"])
            self.assertLess(largest_batch_without_swapping(stock, memory - 1), r["paper_stock"])

    def test_cuswap_goes_further_within_ten_percent(self):
        for r in self.rows:
            self.assertGreater(r["cuswap_batch"], r["stock_batch"], r["model"])
            self.assertLessEqual(r["time_ratio"], 1.10, r["model"])
            self.assertGreater(r["iteration_ns"], 0, r["model"])
        # The memory-efficient attention alone holds many times the standard
        # attention's batch at T = 100.
        self.assertGreater(self.rows[2]["no_swap_batch"], 4 * self.rows[2]["stock_batch"])


class BadInput(unittest.TestCase):
    def test_a_missing_cuswap_is_one_line(self):
        proc = subprocess.run([sys.executable, SCRIPT, "--quick", "--cuswap", "/nonexistent/cuswap"],
                              capture_output=True, text=True, timeout=60)
        self.assertNotEqual(proc.returncode, 0)
        self.assertIn("/nonexistent/cuswap: not an executable", proc.stderr)
        self.assertEqual(len(proc.stderr.strip().splitlines()), 1)

    def test_a_missing_capture_names_the_file(self):
        with self.assertRaises(paper_tables.Failure) as caught:
            paper_tables.files("/nonexistent", "tf1/lstm-l1-t32")
        self.assertIn("/nonexistent/tf1/lstm-l1-t32-b2.step_stats.pb.gz", str(caught.exception))


if __name__ == "__main__":
    unittest.main()
