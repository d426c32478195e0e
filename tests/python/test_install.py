"""`pip install ./python` gives the whole package, which then works under the shim.

pip runs offline (--no-index, --no-build-isolation: the setuptools already
there builds it) on a copy of python/, because setuptools writes build files
beside the sources.
"""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import support

MODULES = ["__init__.py", "_conf.py", "_locate.py", "_shim.py", "keras.py", "tf.py", "torch.py"]


class Install(unittest.TestCase):
    def test_pip_installs_every_module_and_the_installed_package_runs(self):
        with tempfile.TemporaryDirectory(prefix="cuswap-pip-") as tmp:
            source, site = os.path.join(tmp, "source"), os.path.join(tmp, "site")
            shutil.copytree(support.PYTHON_DIR, source,
                            ignore=shutil.ignore_patterns("__pycache__", "build", "*.egg-info"))
            r = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-index",
                                "--no-build-isolation", "--no-deps", "--target", site, source],
                               env=support.clean_env(PIP_DISABLE_PIP_VERSION_CHECK="1"),
                               capture_output=True, text=True, timeout=120)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            installed = sorted(f for f in os.listdir(os.path.join(site, "cuswap"))
                               if f.endswith(".py"))
            self.assertEqual(installed, MODULES)
            got = support.run_json("""
                import cuswap
                cuswap.iteration()
                report({"file": cuswap.__file__, "loaded": cuswap.loaded(),
                        "version": cuswap.version(), "iterations": cuswap.stats()["iterations"]})
            """, support.shim_env(PYTHONPATH=site))
            self.assertEqual(got, {"file": os.path.join(site, "cuswap", "__init__.py"),
                                   "loaded": True, "version": support.project_version(),
                                   "iterations": 1})


if __name__ == "__main__":
    unittest.main()
