"""Budgets from Python: checked by the grammar of docs/configuration.md, merged into CUSWAP_CONF."""

import sys
import unittest

import support

sys.path.insert(0, support.PYTHON_DIR)
from cuswap import _conf  # noqa: E402  (after the path; loads no library)


class Sizes(unittest.TestCase):
    def test_the_documented_examples(self):
        for text, expected in [("12GiB", 12 << 30), ("1.5G", 1610612736), ("512 KiB", 512 << 10),
                               ("4096", 4096), ("0.5K", 512), ("2mb", 2 << 20), ("7B", 7),
                               ("1TiB", 1 << 40)]:
            with self.subTest(text=text):
                self.assertEqual(_conf.size_bytes(text), expected)

    def test_the_documented_rejections(self):
        for text in ["", "-1", "+1", "GiB", ".5G", "1.G", "1e3", "0x10", "12P", "12 bytes", "1.1K",
                     "1.5", "16777216TiB"]:
            with self.subTest(text=text):
                with self.assertRaises(ValueError):
                    _conf.size_bytes(text)


class Budgets(unittest.TestCase):
    def test_bytes_sizes_and_devices(self):
        self.assertEqual(_conf.budget_value(1 << 30), str(1 << 30))
        self.assertEqual(_conf.budget_value(" 12GiB "), "12GiB")
        self.assertEqual(_conf.budget_value("[0:12GiB,1:10GiB]"), "[0:12GiB,1:10GiB]")

    def test_bad_budgets_say_why(self):
        for bad, error in [(0, ValueError), (-5, ValueError), ("0", ValueError),
                           ("twelve", ValueError), ("[0:12GiB,x:1G]", ValueError),
                           ("[0:12GiB,1]", ValueError), (True, TypeError), (1.5e9, TypeError),
                           (None, TypeError)]:
            with self.subTest(budget=bad):
                with self.assertRaises(error) as caught:
                    _conf.budget_value(bad)
                self.assertTrue(str(caught.exception))


class Merging(unittest.TestCase):
    def test_the_budget_replaces_earlier_ones_and_keeps_the_rest(self):
        self.assertEqual(_conf.with_budget("", "12GiB"), "budget:12GiB")
        self.assertEqual(_conf.with_budget("stats:true,budget:8GiB,record:run.cst", "12GiB"),
                         "stats:true,record:run.cst,budget:12GiB")
        self.assertEqual(_conf.with_budget("budget:[0:4GiB,1:2GiB], log:info,,", "1G"),
                         "log:info,budget:1G")
        self.assertEqual(_conf.with_budget("plan:C:/p.json", "1G"), "plan:C:/p.json,budget:1G")

    def test_pairs_split_outside_brackets(self):
        self.assertEqual(_conf.split_pairs("a:[1,2],b , ,c:x:y"), ["a:[1,2]", "b", "c:x:y"])


if __name__ == "__main__":
    unittest.main()
