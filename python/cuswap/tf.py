"""TensorFlow training steps captured as traces that `cuswap inspect`, `plan` and `simulate` read.

Two styles, as in docs/trace-import.md and tests/data/README.md:

- capture(): TF2, eager with tf.function. The step runs `warmup` times
  untraced, then `steps` times under tf.profiler, each inside a
  tf.profiler.experimental.Trace with a step_num (cuswap's iteration marks);
  the XSpace (.xplane.pb) is written to `output_path`.
- capture_session(): TF1, a tf.compat.v1 Session. The fetches run `warmup`
  times, then once with RunOptions(trace_level=FULL_TRACE); the Chrome
  timeline (show_memory, show_dataflow) is written to `output_path`, and the
  StepStats, which keep what the JSON drops, to `step_stats_path`.

A path ending in .gz is written as gzip with mtime 0 and no file name, so the
same bytes give the same file. A capture in which TensorFlow's allocator
reported nothing is an error (RuntimeError), not a trace without buffers.

The environment matters before TensorFlow is imported (prepare_environment):
- TF_CPU_ALLOCATOR_USE_BFC=true: the default CPU allocator neither tracks
  allocation sizes nor emits MemoryAllocation events; the BFC allocator does
  both (on a GPU the device allocator is BFC already).
- TF_ENABLE_ONEDNN_OPTS=0: keeps the standard op names (Conv2D, MatMul)
  instead of CPU-only oneDNN rewrites (_MklNativeConv2D), as on a GPU.

additive_attention() is Bahdanau attention's scores with a backward pass
that recomputes the query+key intermediate instead of keeping it (Note
[Recomputed additive attention]); cuswap.keras.AdditiveAttention is the
Keras layer over it.

TensorFlow is imported when a function here is called, not when this module
is.
"""

from __future__ import annotations

import glob
import gzip
import os
import sys
import tempfile
from typing import Optional

CAPTURE_ENVIRONMENT = {
    "TF_CPU_ALLOCATOR_USE_BFC": "true",
    "TF_ENABLE_ONEDNN_OPTS": "0",
}


def prepare_environment() -> None:
    """Sets CAPTURE_ENVIRONMENT in os.environ, before TensorFlow is imported.

    Once it is imported, a RuntimeError names the variables that differ.
    """
    if "tensorflow" in sys.modules:
        differ = [k for k, v in CAPTURE_ENVIRONMENT.items() if os.environ.get(k) != v]
        if differ:
            pairs = " ".join(f"{k}={CAPTURE_ENVIRONMENT[k]}" for k in differ)
            raise RuntimeError(
                f"cuswap.tf.prepare_environment: tensorflow is already imported; set {pairs} "
                "before importing it (or call prepare_environment() first)"
            )
        return
    os.environ.update(CAPTURE_ENVIRONMENT)


def write_file(path: str, data: bytes) -> None:
    """Writes `data` to `path`, as reproducible gzip (mtime 0, no name) where it ends in .gz."""
    if not path.endswith(".gz"):
        with open(path, "wb") as f:
            f.write(data)
        return
    with open(path, "wb") as raw:
        with gzip.GzipFile(filename="", fileobj=raw, mode="wb", mtime=0) as gz:
            gz.write(data)


def _xplane_pb2():
    try:
        from tensorflow.tsl.profiler.protobuf import xplane_pb2
    except ImportError:  # older TensorFlow
        from tensorflow.core.profiler.protobuf import xplane_pb2
    return xplane_pb2


def memory_events(xspace: bytes) -> int:
    """How many MemoryAllocation events the host planes of a serialised XSpace hold."""
    space = _xplane_pb2().XSpace()
    space.ParseFromString(xspace)
    count = 0
    for plane in space.planes:
        if not plane.name.startswith("/host:"):
            continue
        ids = {k for k, v in plane.event_metadata.items() if v.name == "MemoryAllocation"}
        count += sum(1 for line in plane.lines for ev in line.events if ev.metadata_id in ids)
    return count


def _no_memory_hint() -> str:
    if os.environ.get("TF_CPU_ALLOCATOR_USE_BFC", "").lower() != "true":
        return ("on a CPU set TF_CPU_ALLOCATOR_USE_BFC=true before importing tensorflow "
                "(cuswap.tf.prepare_environment())")
    return "did the step run any ops?"


def capture(
    step,
    output_path: str,
    *,
    steps: int = 1,
    warmup: int = 1,
    batch=None,
    memory_profile_path: Optional[str] = None,
) -> str:
    """Captures TF2 training steps as an XSpace (.xplane.pb[.gz]) that cuswap reads.

    step: a callable running one training step (a tf.function, say; make it
      finish, e.g. by calling .numpy() on its result, so the step ends inside
      the trace), or a compiled Keras model with `batch=(x, y)`, trained by
      model.train_on_batch(x, y).
    steps: traced steps, each inside Trace("train", step_num=N).
    warmup: untraced steps before them (the first call of a tf.function
      traces it and makes its variables).
    memory_profile_path: also write TensorFlow's own memory_profile view of it.
    Returns output_path.
    """
    import tensorflow as tf

    if hasattr(step, "train_on_batch"):
        if batch is None:
            raise ValueError("cuswap.tf.capture: a Keras model needs batch=(x, y) to train on")
        model, (x, y) = step, batch

        def run_step():
            model.train_on_batch(x, y)

    elif callable(step):
        run_step = step
    else:
        raise TypeError(f"cuswap.tf.capture: step must be a callable or a Keras model: {step!r}")
    if steps < 1 or warmup < 0:
        raise ValueError(f"cuswap.tf.capture: steps must be 1 or more and warmup 0 or more "
                         f"(got steps={steps}, warmup={warmup})")
    for _ in range(warmup):
        run_step()
    with tempfile.TemporaryDirectory(prefix="cuswap-tf-capture-") as logdir:
        options = tf.profiler.experimental.ProfilerOptions(
            host_tracer_level=2, python_tracer_level=0, device_tracer_level=1)
        tf.profiler.experimental.start(logdir, options=options)
        try:
            for i in range(steps):
                with tf.profiler.experimental.Trace("train", step_num=warmup + i, _r=1):
                    run_step()
        finally:
            tf.profiler.experimental.stop()
        found = glob.glob(os.path.join(logdir, "plugins", "profile", "*", "*.xplane.pb"))
        if len(found) != 1:
            raise RuntimeError(
                f"cuswap.tf.capture: expected one xplane.pb from the profiler, found {found}")
        with open(found[0], "rb") as f:
            xspace = f.read()
        if memory_events(xspace) == 0:
            raise RuntimeError(
                "cuswap.tf.capture: the profile holds no MemoryAllocation events, so it shows "
                f"cuswap no buffers; {_no_memory_hint()}"
            )
        write_file(output_path, xspace)
        if memory_profile_path:
            from tensorflow.python.profiler.internal import _pywrap_profiler_plugin as plugin

            data, ok = plugin.xspace_to_tools_data([found[0]], "memory_profile", {})
            if not ok or not data:
                raise RuntimeError(
                    f"cuswap.tf.capture: memory_profile conversion of {found[0]} returned nothing")
            write_file(memory_profile_path, data if isinstance(data, bytes) else data.encode())
    return output_path


def allocation_records(step_stats) -> int:
    """How many AllocatorMemoryUsed.allocation_records a StepStats holds."""
    return sum(len(memory.allocation_records)
               for device in step_stats.dev_stats
               for node in device.node_stats
               for memory in node.memory)


def capture_session(
    session,
    fetches,
    output_path: str,
    *,
    feed_dict=None,
    warmup: int = 1,
    step_stats_path: Optional[str] = None,
) -> str:
    """Captures one TF1 session run as a Chrome timeline (.timeline.json[.gz]) that cuswap reads.

    session, fetches: what session.run runs (the training op, and the loss).
    feed_dict: a dict, or a callable returning one, called for every run (a
      fresh batch each time).
    warmup: untraced runs first.
    step_stats_path: also write RunMetadata.step_stats (.step_stats.pb[.gz]).
    Returns output_path.
    """
    import tensorflow as tf
    from tensorflow.python.client import timeline

    def feed():
        return feed_dict() if callable(feed_dict) else feed_dict

    for _ in range(warmup):
        session.run(fetches, feed_dict=feed())
    options = tf.compat.v1.RunOptions(trace_level=tf.compat.v1.RunOptions.FULL_TRACE)
    meta = tf.compat.v1.RunMetadata()
    session.run(fetches, feed_dict=feed(), options=options, run_metadata=meta)
    if allocation_records(meta.step_stats) == 0:
        raise RuntimeError(
            "cuswap.tf.capture_session: the run's StepStats hold no allocation records, so they "
            f"show cuswap no buffers; {_no_memory_hint()}"
        )
    chrome = timeline.Timeline(meta.step_stats).generate_chrome_trace_format(
        show_memory=True, show_dataflow=True)
    write_file(output_path, chrome.encode())
    if step_stats_path:
        write_file(step_stats_path, meta.step_stats.SerializeToString())
    return output_path


# --------------------------------------------------------------------------
# Note [Recomputed additive attention]
# Additive (Bahdanau) attention scores every query step against every key
# step: scores[b, i, j] = sum_d scale[d] * tanh(query[b, i, d] + key[b, j, d]).
# The usual formulation (keras.layers.AdditiveAttention) materialises the
# tanh of the broadcast sum, batch x Tq x Tv x dim, and autodiff keeps it
# (and the sum before it) for the backward pass: in a Seq2Seq model with
# T = Tq = Tv that is O(T^2 * batch * dim), the largest tensors of the step.
# Here:
# - Nothing of that size is kept: the backward pass computes the tanh again
#   from query and key, which it keeps anyway. With s = tanh(q + k) and g
#   the gradient of the scores:
#     d = g[..., None] * scale * (1 - s^2)
#     dquery = sum_j d, dkey = sum_i d, dscale = sum_{b,i,j} g * s.
# - Nothing of that size exists at once either: both passes go through the
#   query steps in chunks of CHUNK_STEPS, one after the other (each chunk's
#   ops depend on the previous chunk's result, so a graph runs them in
#   order), so the largest temporary is batch x CHUNK_STEPS x Tv x dim.
#   What lives from forward to backward is O(T * batch * dim) plus the
#   scores.
# - The forward pass reads its inputs through stop_gradient, so an enclosing
#   GradientTape records none of its ops (and keeps none of their outputs):
#   the custom gradient alone connects scores to inputs.
# Four steps a chunk: the chunk's temporaries are what is left to limit the
# batch once swapping moves the rest (at T = 400, chunks of 16 made one
# gradient op of the chunk need more than the whole device at 27x the
# standard attention's batch; chunks of 4 hold four times the batch), for
# four times the ops.
CHUNK_STEPS = 4

_recomputed_scores = None


def _chunks(steps):
    return [(lo, min(steps, lo + CHUNK_STEPS)) for lo in range(0, steps, CHUNK_STEPS)]


def _scores_function():
    global _recomputed_scores
    if _recomputed_scores is None:
        import tensorflow as tf

        def tanh_of_sum(q, k):
            return tf.tanh(tf.expand_dims(q, -2) + tf.expand_dims(k, -3))

        def after(previous, make):
            # `make()`'s ops run after `previous` (Note [Recomputed additive attention]).
            with tf.control_dependencies(previous):
                return make()

        @tf.custom_gradient
        def scores(query, key, scale):
            q, k, w = (tf.stop_gradient(x) for x in (query, key, scale))
            steps = q.shape[-2]
            if steps is None:  # not known while tracing: one chunk
                return scores_whole(q, k, w, query, key, scale)
            parts = []
            for lo, hi in _chunks(steps):
                parts.append(after(parts[-1:], lambda: tf.reduce_sum(
                    w * tanh_of_sum(q[:, lo:hi], k), -1)))
            out = tf.concat(parts, -2)

            def grad(g):
                dquery, dkey, dscale = [], tf.zeros_like(key), tf.zeros_like(scale)
                for lo, hi in _chunks(steps):
                    def chunk():
                        s = tanh_of_sum(query[:, lo:hi], key)  # again, instead of kept
                        gs = tf.expand_dims(g[:, lo:hi], -1)
                        d = gs * scale * (1 - tf.square(s))
                        return (tf.reduce_sum(d, -2), dkey + tf.reduce_sum(d, -3),
                                dscale + tf.reduce_sum(gs * s, axis=[0, 1, 2]))
                    dq, dkey, dscale = after([dkey], chunk)
                    dquery.append(dq)
                return tf.concat(dquery, -2), dkey, dscale

            return out, grad

        def scores_whole(q, k, w, query, key, scale):
            out = tf.reduce_sum(w * tanh_of_sum(q, k), -1)

            def grad(g):
                s = tanh_of_sum(query, key)
                gs = tf.expand_dims(g, -1)
                d = gs * scale * (1 - tf.square(s))
                return (tf.reduce_sum(d, -2), tf.reduce_sum(d, -3),
                        tf.reduce_sum(gs * s, axis=[0, 1, 2]))

            return out, grad

        _recomputed_scores = scores
    return _recomputed_scores


def additive_attention(query, key, scale=None):
    """Additive (Bahdanau) attention scores whose backward pass recomputes the query+key tensor.

    query: [batch, Tq, dim] (or [batch, dim] for one step), key: [batch, Tv, dim],
    scale: [dim] or None (1). Returns scores [batch, Tq, Tv] (or [batch, Tv]), equal to
    tf.reduce_sum(scale * tf.tanh(query[:, :, None, :] + key[:, None, :, :]), -1),
    which is what keras.layers.AdditiveAttention computes before its softmax, with the
    same gradients; the batch x Tq x Tv x dim intermediate is neither kept for the
    backward pass nor made whole (Note [Recomputed additive attention]).
    """
    import tensorflow as tf

    query = tf.convert_to_tensor(query)
    key = tf.convert_to_tensor(key, dtype=query.dtype)
    one_step = query.shape.rank == 2
    if one_step:
        query = tf.expand_dims(query, -2)
    scale = tf.ones(tf.shape(key)[-1:], query.dtype) if scale is None else tf.convert_to_tensor(
        scale, dtype=query.dtype)
    out = _scores_function()(query, key, scale)
    return tf.squeeze(out, -2) if one_step else out

