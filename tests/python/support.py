"""What the Python package's tests share: the build's paths and Python children.

ctest passes the build's pieces as environment variables
(tests/python/CMakeLists.txt); run by hand, set them the same way:
  CUSWAP_TEST_SHIM         libcuswap.so
  CUSWAP_TEST_SIMCUDA_DIR  the folder of simcuda's libcuda.so.1
  CUSWAP_TEST_CLI          the cuswap executable
  CUSWAP_TEST_VERSION      the project's version (CMakeLists.txt)
A missing one is an error in the tests that need it, never a skip.

Anything that loads libcuswap.so or a framework runs in a child Python, so
that each test starts from a process without them (the shim cannot be
unloaded: it is linked with -z nodelete).
"""

import json
import os
import subprocess
import sys
import textwrap

SOURCE_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PYTHON_DIR = os.path.join(SOURCE_DIR, "python")

# Variables a child must not inherit from whoever runs the tests.
_INHERITED_CUSWAP = (
    "LD_PRELOAD", "CUSWAP_CONF", "CUSWAP_LIBRARY", "SIMCUDA_CONF", "GLIBC_TUNABLES")

RESULT_PREFIX = "RESULT "


def required(name):
    """The value of environment variable `name`; RuntimeError naming it where it is not set."""
    value = os.environ.get(name, "")
    if not value:
        raise RuntimeError(f"{name} is not set (ctest sets it: tests/python/CMakeLists.txt)")
    return value


def shim():
    return required("CUSWAP_TEST_SHIM")


def simcuda_dir():
    return required("CUSWAP_TEST_SIMCUDA_DIR")


def cli():
    return required("CUSWAP_TEST_CLI")


def project_version():
    return required("CUSWAP_TEST_VERSION")


def clean_env(**extra):
    """This environment without cuswap in it, with PYTHONPATH at python/, plus `extra`."""
    env = {k: v for k, v in os.environ.items() if k not in _INHERITED_CUSWAP}
    env["PYTHONPATH"] = PYTHON_DIR
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["TF_CPP_MIN_LOG_LEVEL"] = "2"
    env["CUDA_VISIBLE_DEVICES"] = ""  # TensorFlow on the CPU, wherever the tests run
    env.update(extra)
    return env


def shim_env(cuswap_conf="budget:64MiB", simcuda_conf="memory:64MiB", **extra):
    """clean_env with libcuswap.so preloaded over simcuda, as tests/hooks runs programs."""
    library_path = simcuda_dir()
    if os.environ.get("LD_LIBRARY_PATH"):
        library_path += ":" + os.environ["LD_LIBRARY_PATH"]
    return clean_env(LD_PRELOAD=shim(), LD_LIBRARY_PATH=library_path, CUSWAP_CONF=cuswap_conf,
                     SIMCUDA_CONF=simcuda_conf, **extra)


def _source(code):
    """`code` dedented, or a list of pieces each dedented and joined."""
    pieces = [code] if isinstance(code, str) else code
    return "\n".join(textwrap.dedent(piece) for piece in pieces)


def run_python(code, env, timeout=300, args=()):
    """Runs `code` (text, or a list of pieces) in a child python3; returns the CompletedProcess."""
    return subprocess.run([sys.executable, "-c", _source(code), *args], env=env,
                          capture_output=True, text=True, timeout=timeout)


def run_json(code, env, timeout=300, args=()):
    """Runs `code`, which calls report(value) once; returns value, or fails with the child's output.

    report (defined for the child) prints the value as one JSON line.
    """
    prelude = f"""
        import json as _json
        def report(value):
            print({RESULT_PREFIX!r} + _json.dumps(value), flush=True)
    """
    r = run_python([prelude, _source(code)], env, timeout, args)
    lines = [l for l in r.stdout.splitlines() if l.startswith(RESULT_PREFIX)]
    if r.returncode != 0 or len(lines) != 1:
        raise AssertionError(
            f"child python exited {r.returncode} with {len(lines)} results\n"
            f"--- stdout\n{r.stdout}--- stderr\n{r.stderr}")
    return json.loads(lines[0][len(RESULT_PREFIX):])
