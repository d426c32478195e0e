"""The package without the shim: it imports alone, does nothing, its version is the project's."""

import os
import re
import subprocess
import sys
import unittest

import support


class WithoutTheShim(unittest.TestCase):
    def test_import_loads_no_framework_and_every_call_is_harmless(self):
        got = support.run_json("""
            import sys
            import cuswap
            before = sorted(m for m in ("torch", "tensorflow", "keras") if m in sys.modules)
            mark = cuswap.iteration()
            framework_module = cuswap.torch  # cuswap.torch itself imports torch only when used
            report({"frameworks": before, "loaded": cuswap.loaded(), "stats": cuswap.stats(),
                    "version": cuswap.version(), "mark": mark,
                    "library_path": cuswap.library_path(),
                    "after_torch_module": sorted(m for m in ("torch", "tensorflow")
                                                 if m in sys.modules),
                    "torch_module": framework_module.__name__})
        """, support.clean_env(PATH="/usr/bin:/bin"))
        self.assertEqual(got, {"frameworks": [], "loaded": False, "stats": {}, "version": None,
                               "mark": None, "library_path": None, "after_torch_module": [],
                               "torch_module": "cuswap.torch"})

    def test_an_unknown_attribute_is_an_attribute_error(self):
        got = support.run_json("""
            import cuswap
            try:
                cuswap.no_such_thing
                report("no error")
            except AttributeError as e:
                report(str(e))
        """, support.clean_env())
        self.assertIn("no_such_thing", got)


class Version(unittest.TestCase):
    def test_package_pyproject_and_project_versions_agree(self):
        sys.path.insert(0, support.PYTHON_DIR)
        try:
            import cuswap
        finally:
            sys.path.remove(support.PYTHON_DIR)
        with open(os.path.join(support.PYTHON_DIR, "pyproject.toml"), encoding="utf-8") as f:
            match = re.search(r'^version = "([^"]+)"$', f.read(), re.MULTILINE)
        self.assertIsNotNone(match, "no version line in python/pyproject.toml")
        self.assertEqual(cuswap.__version__, support.project_version())
        self.assertEqual(match.group(1), support.project_version())


class CaptureScript(unittest.TestCase):
    def test_capture_tf_py_finds_the_package_without_tensorflow(self):
        script = os.path.join(support.SOURCE_DIR, "scripts", "capture_tf.py")
        env = support.clean_env()
        del env["PYTHONPATH"]  # the script finds python/ itself
        r = subprocess.run([sys.executable, script, "--help"], env=env, capture_output=True,
                           text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("--model", r.stdout)


if __name__ == "__main__":
    unittest.main()
