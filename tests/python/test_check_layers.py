"""scripts/check_layers.py: the source tree keeps docs/architecture.md's
layering, and the check catches an include that breaks it."""

import importlib.util
import os
import tempfile
import unittest

import support

_spec = importlib.util.spec_from_file_location(
    "check_layers", os.path.join(support.SOURCE_DIR, "scripts", "check_layers.py"))
layers = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(layers)


def tree(files):
    """A temporary tree of FILE -> its text."""
    root = tempfile.TemporaryDirectory()
    for path, text in files.items():
        full = os.path.join(root.name, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w") as f:
            f.write(text)
    return root


class Layers(unittest.TestCase):
    def test_the_source_tree_keeps_them(self):
        self.assertEqual(layers.breaches(support.SOURCE_DIR), [])

    def test_an_include_of_a_layer_above_is_a_breach(self):
        with tree({"policy/planners/x.cpp": '#include "policy/plan.h"\n#include "allocator/driver.h"\n',
                   "allocator/y.h": '#include "common/log.h"\n  #  include "runtime/runtime.h"\n',
                   "tracer/z.cpp": '#include "tracer/import/importers.h"\n'}) as root:
            found = layers.breaches(root)
        self.assertEqual(len(found), 3, found)
        self.assertTrue(found[0].startswith("allocator/y.h:2: includes runtime/runtime.h: "
                                            "allocator/ may use common"), found[0])
        self.assertTrue(found[1].startswith("policy/planners/x.cpp:2: includes allocator/driver.h"))
        self.assertTrue(found[2].startswith("tracer/z.cpp:1: includes tracer/import/importers.h"))

    def test_own_folder_system_headers_and_the_listed_exception_pass(self):
        with tree({"cli/a.cpp": '#include <vector>\n#include "cli/b.h"\n#include "allocator/swap_stats.h"\n',
                   "tracer/import/c.cpp": '#include "tracer/trace.h"\n#include "proto/x.pb.h"\n',
                   "hooks/d.cpp": '#include "runtime/runtime.h"\n#include "cuswap/cuswap.h"\n'}) as root:
            self.assertEqual(layers.breaches(root), [])


if __name__ == "__main__":
    unittest.main()
