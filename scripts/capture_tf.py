#!/usr/bin/env python3
"""Captures one TensorFlow training step as trace files cuswap can read.

For one Keras model at one batch size it writes, under --out:
  tf1/<name>-b<batch>.timeline.json.gz     TF1 Chrome trace (show_memory, show_dataflow)
  tf1/<name>-b<batch>.step_stats.pb.gz     RunMetadata.step_stats of the same run
  tf2/<name>-b<batch>.xplane.pb.gz         TF2 profile with the allocator's events
  tf2/<name>-b<batch>.memory_profile.json.gz   (--memory-profile) sampled view of it

Each style runs in its own child process, because graph mode (tf.compat.v1
with eager execution disabled) and eager mode cannot share one process.
Warm-up steps run untraced; only the last step is traced, so a file holds
one training step.

The capture itself is cuswap.tf's (python/cuswap/tf.py), from this checkout.
The environment matters and is set here before TensorFlow is imported:
- TF_CPU_ALLOCATOR_USE_BFC=true: the default CPU allocator neither tracks
  allocation sizes nor emits MemoryAllocation/MemoryDeallocation events; the
  BFC allocator does both (on a GPU the device allocator is BFC already).
- TF_USE_LEGACY_KERAS=1: Keras 2 (tf_keras) still builds models inside a
  tf.compat.v1 graph; Keras 3 does not. Both styles use it, so the two
  captures show the same model.
- TF_ENABLE_ONEDNN_OPTS=0: keeps the standard op names (Conv2D, MatMul)
  instead of CPU-only oneDNN rewrites (_MklNativeConv2D), as on a GPU.

Every output is parsed back before the script exits; a capture without
memory events is an error, not a silent empty fixture.

Usage: capture_tf.py --model resnet50 --batch 4 [--image-size 32] --out tests/data
"""

import argparse
import gzip
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "python"))
from cuswap import tf as cuswap_tf  # noqa: E402  (imports TensorFlow only when capturing)

CAPTURE_ENV = {
    **cuswap_tf.CAPTURE_ENVIRONMENT,  # TF_CPU_ALLOCATOR_USE_BFC, TF_ENABLE_ONEDNN_OPTS
    "TF_USE_LEGACY_KERAS": "1",
    "TF_CPP_MIN_LOG_LEVEL": "2",
    "PYTHONHASHSEED": "0",
}

MODELS = ("resnet50", "inception_v3", "vgg16", "lstm", "seq2seq", "transformer")


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", required=True, choices=MODELS)
    p.add_argument("--batch", type=int, required=True)
    p.add_argument("--out", default="tests/data", help="root folder; tf1/ and tf2/ go under it")
    p.add_argument("--name", help="file stem before -b<batch> (default: from the model and its knobs)")
    p.add_argument("--styles", default="tf1,tf2", help="comma list of tf1, tf2")
    p.add_argument("--memory-profile", action="store_true", help="also write the TF2 memory_profile.json.gz")
    p.add_argument("--warmup", type=int, default=1, help="untraced steps before the traced one")
    # Size knobs. CNNs: square images; sequence models: vocabulary, width, length.
    p.add_argument("--image-size", type=int, default=32)
    p.add_argument("--classes", type=int, default=10)
    p.add_argument("--vocab", type=int, default=1000)
    p.add_argument("--hidden", type=int, default=128)
    p.add_argument("--layers", type=int, default=1, help="LSTM layers (lstm) or encoder blocks (transformer)")
    p.add_argument("--seq-len", type=int, default=32, help="sequence length (seq2seq: source = target length)")
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--lstm", choices=("fused", "keras"), default="fused",
                   help="LSTM kernel: fused BlockLSTMV2 (one op per sequence) or the Keras while loop")
    p.add_argument("--attention", choices=("keras", "cuswap"), default="keras",
                   help="seq2seq: keras.layers.AdditiveAttention, or cuswap.keras.AdditiveAttention, "
                        "whose backward pass recomputes the T x T intermediate (name: -recompute)")
    p.add_argument("--device", default=None, help="TensorFlow device to place the model on, e.g. /GPU:0")
    p.add_argument("--child", choices=("tf1", "tf2"), help=argparse.SUPPRESS)
    p.add_argument("--child-dir", help=argparse.SUPPRESS)
    return p.parse_args(argv)


def default_name(a):
    if a.model in ("resnet50", "inception_v3", "vgg16"):
        return f"{a.model}-{a.image_size}px"
    loop = "-keras" if a.lstm == "keras" else ""
    if a.model == "lstm":
        return f"lstm{loop}-l{a.layers}-t{a.seq_len}"
    if a.model == "seq2seq":
        recompute = "-recompute" if a.attention == "cuswap" else ""
        return f"seq2seq{loop}-t{a.seq_len}{recompute}"
    return f"transformer-l{a.layers}"


# --------------------------------------------------------------------------
# Models (built in the child, after TensorFlow is imported)


def build_model(tf, a, feeds=None):
    """Returns (keras model, input specs [(shape, dtype)], label spec, make_batch(rng)).

    With `feeds` (graph mode) the model is built on those placeholders, so its
    output and its batch-norm updates hang off the tensors the session feeds.
    """
    keras = tf.keras
    b = a.batch

    def Input(shape, dtype, i):
        return keras.Input(shape[1:], batch_size=b, dtype=dtype, tensor=feeds[i] if feeds else None)

    if a.model in ("resnet50", "inception_v3", "vgg16"):
        ctor = {
            "resnet50": keras.applications.ResNet50,
            "inception_v3": keras.applications.InceptionV3,
            "vgg16": keras.applications.VGG16,
        }[a.model]
        s = a.image_size
        inputs = [((b, s, s, 3), "float32")]
        model = ctor(weights=None, input_tensor=Input(*inputs[0], 0), classes=a.classes, classifier_activation=None)
        label = ((b,), "int32")

        def make_batch(rng):
            return [rng.standard_normal((b, s, s, 3)).astype("float32")], rng.integers(0, a.classes, (b,)).astype("int32")

        return model, inputs, label, make_batch

    t, v, h = a.seq_len, a.vocab, a.hidden
    L = keras.layers
    Lstm = fused_lstm_layer(tf) if a.lstm == "fused" else L.LSTM
    if a.model == "lstm":
        inputs = [((b, t), "int32")]
        tokens = Input(*inputs[0], 0)
        x = L.Embedding(v, h)(tokens)
        for _ in range(a.layers):
            x = Lstm(h, return_sequences=True)(x)
        logits = L.Dense(v)(x)
        model = keras.Model(tokens, logits, name=f"lstm_lm_{a.layers}")
    elif a.model == "seq2seq":
        # NMT as in the seq2seq-with-attention papers: an LSTM encoder, an LSTM
        # decoder fed the shifted target (teacher forcing), and additive
        # (Bahdanau) attention of every decoder state over every encoder state.
        inputs = [((b, t), "int32"), ((b, t), "int32")]
        src, tgt = Input(*inputs[0], 0), Input(*inputs[1], 1)
        enc, eh, ec = Lstm(h, return_sequences=True, return_state=True)(L.Embedding(v, h)(src))
        dec = Lstm(h, return_sequences=True)(L.Embedding(v, h)(tgt), initial_state=[eh, ec])
        if a.attention == "cuswap":
            from cuswap import keras as cuswap_keras

            ctx = cuswap_keras.AdditiveAttention()([dec, enc])
        else:
            ctx = L.AdditiveAttention()([dec, enc])
        logits = L.Dense(v)(L.Concatenate()([dec, ctx]))
        model = keras.Model([src, tgt], logits, name="seq2seq_attention")
    else:  # transformer encoder, pre-norm, learned positions

        class AddPosition(L.Layer):
            def build(self, shape):
                self.table = self.add_weight(name="position", shape=tuple(shape[1:]), initializer="random_normal")

            def call(self, x):
                return x + self.table

        inputs = [((b, t), "int32")]
        tokens = Input(*inputs[0], 0)
        x = AddPosition()(L.Embedding(v, h)(tokens))
        for _ in range(a.layers):
            y = L.LayerNormalization()(x)
            y = L.MultiHeadAttention(a.heads, h // a.heads)(y, y)
            x = x + y
            y = L.LayerNormalization()(x)
            y = L.Dense(4 * h, activation="relu")(y)
            x = x + L.Dense(h)(y)
        logits = L.Dense(v)(L.LayerNormalization()(x))
        model = keras.Model(tokens, logits, name=f"transformer_{a.layers}")
    label = ((b, t), "int32")

    def make_batch(rng):
        xs = [rng.integers(0, v, shape).astype(dtype) for shape, dtype in inputs]
        return xs, rng.integers(0, v, (b, t)).astype("int32")

    return model, inputs, label, make_batch


def fused_lstm_layer(tf):
    """An LSTM layer over TensorFlow's fused sequence kernel (BlockLSTMV2).

    Note [Fused LSTM]: the Keras LSTM runs on a CPU as a while loop of about
    200 ops per time step (forward, backward and loop control), so a T=200
    Seq2Seq step is ~10^5 trace events and tens of MB. BlockLSTMV2 (the
    kernel behind LSTMBlockFusedCell, with CPU and GPU kernels) runs the
    whole sequence as one op and its gradient as one BlockLSTMGradV2, the way
    cuDNN's RNN runs on a GPU; it keeps the same per-step activations
    (gates, cell and hidden states for all T steps) alive for the backward
    pass, which is the memory a swap planner cares about. Gate order i,c,f,o;
    no peepholes. Call signature follows keras.layers.LSTM (states [h, c]).
    """
    keras = tf.keras

    class FusedLSTM(keras.layers.Layer):
        def __init__(self, units, return_sequences=True, return_state=False, **kw):
            super().__init__(**kw)
            self.units, self.return_sequences, self.return_state = units, return_sequences, return_state

        def build(self, input_shape):
            n = self.units
            self.kernel = self.add_weight(name="kernel", shape=(int(input_shape[-1]) + n, 4 * n), initializer="glorot_uniform")
            self.bias = self.add_weight(name="bias", shape=(4 * n,), initializer="zeros")

        def call(self, x, initial_state=None):
            n = self.units
            batch, steps = tf.shape(x)[0], tf.shape(x)[1]
            if initial_state is None:
                h0 = c0 = tf.zeros(tf.stack([batch, n]), x.dtype)
            else:
                h0, c0 = initial_state
            no_peephole = tf.zeros([n], x.dtype)
            _i, cs, _f, _o, _ci, _co, hs = tf.raw_ops.BlockLSTMV2(
                seq_len_max=tf.cast(steps, tf.int64), x=tf.transpose(x, [1, 0, 2]), cs_prev=c0, h_prev=h0,
                w=self.kernel, wci=no_peephole, wcf=no_peephole, wco=no_peephole, b=self.bias,
                cell_clip=0.0, use_peephole=False)
            out = tf.transpose(hs, [1, 0, 2]) if self.return_sequences else hs[-1]
            return [out, hs[-1], cs[-1]] if self.return_state else out

    return FusedLSTM


def input_specs(a):
    """[(shape, dtype)] of the model's inputs and (shape, dtype) of the label."""
    b = a.batch
    if a.model in ("resnet50", "inception_v3", "vgg16"):
        return [((b, a.image_size, a.image_size, 3), "float32")], ((b,), "int32")
    n = 2 if a.model == "seq2seq" else 1
    return [((b, a.seq_len), "int32")] * n, ((b, a.seq_len), "int32")


def model_inputs(xs):
    return xs[0] if len(xs) == 1 else list(xs)


# --------------------------------------------------------------------------
# TF1 style: graph mode, one session run with FULL_TRACE


def child_tf1(a, out_dir):
    import numpy as np
    import tensorflow as tf

    tf.compat.v1.disable_eager_execution()
    tf.compat.v1.set_random_seed(0)
    rng = np.random.default_rng(0)
    with tf.device(a.device) if a.device else _null():
        inputs, label = input_specs(a)
        phs = [tf.compat.v1.placeholder(dt, shape, name=f"input{i}") for i, (shape, dt) in enumerate(inputs)]
        y = tf.compat.v1.placeholder(label[1], label[0], name="label")
        tf.compat.v1.keras.backend.set_learning_phase(1)  # batch norm in training mode, with updates
        model, _inputs, _label, make_batch = build_model(tf, a, feeds=phs)
        logits = model.output
        loss = tf.reduce_mean(tf.keras.losses.sparse_categorical_crossentropy(y, logits, from_logits=True))
        updates = list(getattr(model, "updates", []) or [])  # batch-norm moving averages
        with tf.control_dependencies(updates):
            train_op = tf.compat.v1.train.MomentumOptimizer(0.01, 0.9).minimize(loss)

    config = tf.compat.v1.ConfigProto(inter_op_parallelism_threads=2, intra_op_parallelism_threads=2)
    sess = tf.compat.v1.Session(config=config)
    tf.compat.v1.keras.backend.set_session(sess)
    sess.run(tf.compat.v1.global_variables_initializer())

    def feed():
        xs, ys = make_batch(rng)
        d = {ph: x for ph, x in zip(phs, xs)}
        d[y] = ys
        return d

    cuswap_tf.capture_session(sess, [train_op, loss], os.path.join(out_dir, "timeline.json.gz"),
                              feed_dict=feed, warmup=a.warmup,
                              step_stats_path=os.path.join(out_dir, "step_stats.pb.gz"))


# --------------------------------------------------------------------------
# TF2 style: eager + tf.function, the profiler around the last step


def child_tf2(a, out_dir, memory_profile):
    import numpy as np
    import tensorflow as tf

    tf.random.set_seed(0)
    tf.config.threading.set_inter_op_parallelism_threads(2)
    tf.config.threading.set_intra_op_parallelism_threads(2)
    rng = np.random.default_rng(0)
    with tf.device(a.device) if a.device else _null():
        model, _inputs, _label, make_batch = build_model(tf, a)
        opt = tf.keras.optimizers.SGD(0.01, momentum=0.9)

    @tf.function
    def train_step(xs, ys):
        with tf.GradientTape() as tape:
            logits = model(model_inputs(xs), training=True)
            loss = tf.reduce_mean(tf.keras.losses.sparse_categorical_crossentropy(ys, logits, from_logits=True))
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    def batch():
        xs, ys = make_batch(rng)
        return [tf.constant(x) for x in xs], tf.constant(ys)

    # Every batch is made before the profile starts, so only the step is traced.
    warmup = max(a.warmup, 1)  # the first call traces and builds variables
    batches = iter([batch() for _ in range(warmup + 1)])

    def step():
        xs, ys = next(batches)
        train_step(xs, ys).numpy()

    cuswap_tf.capture(step, os.path.join(out_dir, "xplane.pb.gz"), warmup=warmup,
                      memory_profile_path=os.path.join(out_dir, "memory_profile.json.gz") if memory_profile else None)


class _null:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


# --------------------------------------------------------------------------
# Checks on the written files (run in the parent, no TensorFlow session)


def fail(msg):
    print(f"capture_tf: error: {msg}", file=sys.stderr)
    sys.exit(1)


def check_tf1(timeline_path, step_stats_path):
    import json

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import fixture_facts

    with gzip.open(timeline_path) as f:
        events = json.load(f)["traceEvents"]
    described = [e for e in events if e.get("ph") == "O" and "allocation_description" in str(e.get("args", {}))]
    if not described:
        fail(f"{timeline_path}: no tensor snapshot carries an allocation_description")
    facts = fixture_facts.step_stats_facts(step_stats_path)
    if facts["allocation_records"] == 0:
        fail(f"{step_stats_path}: no AllocatorMemoryUsed.allocation_records")
    return len(described), facts


def check_tf2(xplane_path):
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import fixture_facts

    facts = fixture_facts.xplane_facts(xplane_path)
    if facts["tensors"] == 0:
        fail(f"{xplane_path}: no MemoryAllocation events (is the allocator BFC?)")
    return facts


def run_child(a, style, argv, tmp):
    env = dict(os.environ)
    env.update(CAPTURE_ENV)
    cmd = [sys.executable, os.path.abspath(__file__), *argv, "--child", style, "--child-dir", tmp]
    r = subprocess.run(cmd, env=env)
    if r.returncode != 0:
        fail(f"{style} capture of {a.model} failed (exit {r.returncode})")


def main(argv):
    a = parse_args(argv)
    if a.child:
        if a.child == "tf1":
            child_tf1(a, a.child_dir)
        else:
            child_tf2(a, a.child_dir, a.memory_profile)
        return
    stem = f"{a.name or default_name(a)}-b{a.batch}"
    styles = [s for s in a.styles.split(",") if s]
    for style in styles:
        if style not in ("tf1", "tf2"):
            fail(f"--styles: unknown style '{style}' (expected tf1, tf2)")
    for style in styles:
        dest = os.path.join(a.out, style)
        os.makedirs(dest, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix=f"capture-{style}-") as tmp:
            run_child(a, style, argv, tmp)
            if style == "tf1":
                names = ("timeline.json.gz", "step_stats.pb.gz")
            else:
                names = ("xplane.pb.gz",) + (("memory_profile.json.gz",) if a.memory_profile else ())
            for n in names:
                os.replace(os.path.join(tmp, n), os.path.join(dest, f"{stem}.{n}"))
        if style == "tf1":
            described, facts = check_tf1(
                os.path.join(dest, f"{stem}.timeline.json.gz"), os.path.join(dest, f"{stem}.step_stats.pb.gz")
            )
            print(f"{dest}/{stem}: tf1 ok: {facts['ops']} ops, {described} described tensors, "
                  f"{facts['allocation_records']} allocation records")
        else:
            facts = check_tf2(os.path.join(dest, f"{stem}.xplane.pb.gz"))
            print(f"{dest}/{stem}: tf2 ok: {facts['tensors']} allocations, peak {facts['reported_peak_bytes']} bytes")


if __name__ == "__main__":
    main(sys.argv[1:])
