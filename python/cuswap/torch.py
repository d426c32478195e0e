"""cuswap as PyTorch's CUDA allocator, through torch's pluggable allocator interface.

    $ cuswap run --torch-pluggable --budget 12GiB -- python train.py

    import cuswap.torch
    cuswap.torch.enable()                   # before the first CUDA tensor
    model = Model().cuda()

libcuswap.so exports the pair torch.cuda.memory.CUDAPluggableAllocator calls:
    void* cuswap_torch_alloc(ssize_t size, int device, cudaStream_t stream)
    void  cuswap_torch_free(void* ptr, size_t size, int device, cudaStream_t stream)
so every tensor's memory comes from cuswap, one allocation per tensor, with no
caching allocator in between. PyTorch takes an allocator only before it has
allocated CUDA memory, hence "before the first CUDA tensor". Swapping also
needs the library preloaded, so that cuswap sees the kernels (Note [The
PyTorch allocator ABI] in hooks/torch_abi.cpp); enable() uses the preloaded
copy, and warns where there is none.

additive_attention() is Bahdanau attention's scores with a backward pass
that recomputes the query+key intermediate instead of keeping it (Note
[Recomputed additive attention] in cuswap/tf.py, the same for both).

torch is imported when a function here is called, not when this module is.
"""

from __future__ import annotations

import ctypes
import os
import threading
import warnings
from typing import Optional, Union

from . import _conf, _locate, _shim

ALLOC_FN = "cuswap_torch_alloc"
FREE_FN = "cuswap_torch_free"

_lock = threading.Lock()
_allocator = None  # the CUDAPluggableAllocator made by allocator(), one per process


def _import_torch():
    try:
        import torch
    except ImportError as e:
        raise ImportError(
            f"cuswap.torch needs PyTorch, which cannot be imported here ({e}); install it "
            "(pip install torch, a CUDA build)"
        ) from e
    return torch


def _find_library() -> str:
    try:
        return _locate.library_path(required=True)
    except FileNotFoundError as e:
        raise RuntimeError(f"cuswap.torch: {e}") from e


def _check_exports(path: str) -> None:
    # CUDAPluggableAllocator would fail on a missing name with ctypes' own
    # "undefined symbol"; a library from before the PyTorch interface says so.
    try:
        lib = ctypes.CDLL(path)
    except OSError as e:
        raise RuntimeError(
            f"cuswap.torch: cannot load {path} ({e}); start Python with it preloaded instead "
            f"(LD_PRELOAD={path}, or cuswap run -- python ...)"
        ) from e
    missing = [name for name in (ALLOC_FN, FREE_FN) if not hasattr(lib, name)]
    if missing:
        raise RuntimeError(
            f"cuswap.torch: {path} does not export {' and '.join(missing)}: it is older than "
            "cuswap's PyTorch allocator; rebuild or reinstall cuswap"
        )


def allocator():
    """The torch.cuda.memory.CUDAPluggableAllocator over libcuswap.so (made once, then the same).

    For enable(), or to give only some tensors to cuswap:
        pool = torch.cuda.MemPool(cuswap.torch.allocator().allocator())
        with torch.cuda.use_mem_pool(pool):
            big = torch.empty(n, device="cuda")
    Raises ImportError without PyTorch and RuntimeError where libcuswap.so
    cannot be found (cuswap.library_path) or lacks the allocator functions.
    """
    global _allocator
    torch = _import_torch()
    with _lock:
        if _allocator is None:
            path = _find_library()
            _check_exports(path)
            _allocator = torch.cuda.memory.CUDAPluggableAllocator(path, ALLOC_FN, FREE_FN)
            _shim.library(look_again=True)  # iteration() and stats() reach it from now on
        return _allocator


def _set_budget(budget: Union[int, str]) -> None:
    value = _conf.budget_value(budget)
    current = os.environ.get(_conf.ENV_CONF, "")
    wanted = _conf.with_budget(current, value)
    if wanted == current:
        return
    if _shim.loaded():
        raise RuntimeError(
            f"cuswap.torch.enable(budget={budget!r}): libcuswap.so is already loaded and reads "
            f"{_conf.ENV_CONF} only when it starts; set {_conf.ENV_CONF}=budget:{value} before "
            "starting Python (or use cuswap run --budget), or call enable() without a budget"
        )
    os.environ[_conf.ENV_CONF] = wanted  # putenv too: the library's getenv sees it


def enable(budget: Optional[Union[int, str]] = None):
    """Makes libcuswap.so PyTorch's CUDA allocator; call it before any CUDA memory is allocated.

    budget: device memory cuswap lets the program use, as bytes (int) or a size
    ("12GiB", "1.5G", per device "[0:12GiB,1:10GiB]"); it is written into
    CUSWAP_CONF (other keys kept) before the library starts. Without it the
    CUSWAP_CONF already set applies.

    Swapping needs the library preloaded as well (cuswap run --torch-pluggable,
    or LD_PRELOAD), so that cuswap sees the kernels; loaded only here, it hands
    out driver memory, and a RuntimeWarning says so.

    Returns the allocator (as allocator() does). Raises ImportError without
    PyTorch; ValueError or TypeError for a bad budget; RuntimeError, one line
    saying what to do, where this PyTorch has no CUDA, where CUDA memory was
    already allocated, or where libcuswap.so cannot be found.
    """
    if budget is not None:
        _conf.budget_value(budget)  # a bad budget is the caller's error, before anything else
    torch = _import_torch()
    if getattr(torch.version, "cuda", None) is None:
        raise RuntimeError(
            "cuswap.torch.enable: this PyTorch is built without CUDA (torch.version.cuda is None); "
            "install a CUDA build of torch"
        )
    if not torch.cuda.is_available():
        raise RuntimeError(
            "cuswap.torch.enable: PyTorch sees no CUDA device (torch.cuda.is_available() is "
            "False); run where a GPU and its driver are visible"
        )
    allocated = torch.cuda.memory_allocated()
    if allocated > 0:
        raise RuntimeError(
            f"cuswap.torch.enable: PyTorch has already allocated {allocated} bytes of CUDA memory "
            "with its own allocator; call enable() before the first CUDA tensor is created"
        )
    if budget is not None:
        _set_budget(budget)
    pluggable = allocator()
    if not _shim.preloaded():
        warnings.warn(
            "cuswap.torch.enable: libcuswap.so is not preloaded, so cuswap does not see the "
            "kernels and swaps nothing (the blocks come straight from the driver); start Python "
            "under cuswap run --torch-pluggable, or with LD_PRELOAD=" + _locate.library_path(),
            RuntimeWarning, stacklevel=2)
    try:
        torch.cuda.memory.change_current_allocator(pluggable)
    except RuntimeError as e:
        message = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise RuntimeError(
            f"cuswap.torch.enable: PyTorch refused to change its allocator ({message}); "
            "call enable() before CUDA is first used"
        ) from e
    return pluggable


_recomputed_scores = None


def _scores_function():
    global _recomputed_scores
    if _recomputed_scores is None:
        torch = _import_torch()
        from .tf import CHUNK_STEPS  # the same chunks (Note [Recomputed additive attention])

        def tanh_of_sum(q, k):
            return torch.tanh(q.unsqueeze(-2) + k.unsqueeze(-3))

        class RecomputedAdditiveScores(torch.autograd.Function):
            @staticmethod
            def forward(ctx, query, key, scale):
                ctx.save_for_backward(query, key, scale)  # the inputs only
                return torch.cat([(scale * tanh_of_sum(q, key)).sum(-1)
                                  for q in query.split(CHUNK_STEPS, -2)], -2)

            @staticmethod
            def backward(ctx, g):
                query, key, scale = ctx.saved_tensors
                dquery, dkey, dscale = [], torch.zeros_like(key), torch.zeros_like(scale)
                for q, gq in zip(query.split(CHUNK_STEPS, -2), g.split(CHUNK_STEPS, -2)):
                    s = tanh_of_sum(q, key)  # again, instead of kept
                    gs = gq.unsqueeze(-1)
                    d = gs * scale * (1 - s * s)
                    dquery.append(d.sum(-2))
                    dkey += d.sum(-3)
                    dscale += (gs * s).reshape(-1, s.shape[-1]).sum(0)
                return torch.cat(dquery, -2), dkey, dscale

        _recomputed_scores = RecomputedAdditiveScores
    return _recomputed_scores


def additive_attention(query, key, scale=None):
    """Additive (Bahdanau) attention scores whose backward pass recomputes the query+key tensor.

    query: [batch, Tq, dim] (or [batch, dim] for one step), key: [batch, Tv, dim],
    scale: [dim] or None (1). Returns scores [batch, Tq, Tv] (or [batch, Tv]), equal to
    (scale * torch.tanh(query.unsqueeze(-2) + key.unsqueeze(-3))).sum(-1), with the same
    gradients; the batch x Tq x Tv x dim intermediate is neither kept for the backward
    pass nor made whole (Note [Recomputed additive attention] in cuswap/tf.py).
    """
    torch = _import_torch()
    one_step = query.dim() == 2
    if one_step:
        query = query.unsqueeze(-2)
    if scale is None:
        scale = torch.ones(key.shape[-1], dtype=query.dtype, device=query.device)
    out = _scores_function().apply(query, key, scale)
    return out.squeeze(-2) if one_step else out

