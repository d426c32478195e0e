"""cuswap from Python: iteration marks, counters and the framework glue.

The functions here talk to a libcuswap.so that is already in the process
(LD_PRELOAD, `cuswap run`, or cuswap.torch.enable) and never load it: without
it they do nothing and say so by their results (loaded() is False, stats() is
{}, version() is None), so a training script can call them unconditionally.

    import cuswap
    for batch in data:
        cuswap.iteration()          # cuswap_iteration_begin: one training step starts
        train_step(batch)
    print(cuswap.stats()["evictions"])

The framework modules import their framework and are imported only when used:
  cuswap.torch   enable() / allocator(): cuswap as PyTorch's CUDA allocator
  cuswap.keras   IterationMarker: a Keras callback marking each training batch
  cuswap.tf      capture() / capture_session(): TensorFlow traces for `cuswap inspect`
Importing cuswap itself imports neither PyTorch nor TensorFlow.
"""

import importlib

from ._locate import library_path
from ._shim import iteration, loaded, stats, version

# The package's version; the same as the libcuswap.so it comes with.
__version__ = "0.1.0"

__all__ = ["iteration", "library_path", "loaded", "stats", "version", "__version__"]

_FRAMEWORK_MODULES = ("keras", "tf", "torch")


def __getattr__(name):
    # cuswap.torch etc. work after a plain `import cuswap`, importing the
    # framework only then (PEP 562).
    if name in _FRAMEWORK_MODULES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
