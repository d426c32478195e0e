"""cuswap.tf.additive_attention and cuswap.keras.AdditiveAttention against the usual formulation (label python).

Same scores and gradients as keras.layers.AdditiveAttention's (1e-5), and the
batch x Tq x Tv x dim intermediate neither kept for the backward pass nor made
whole: the memory still held between forward and backward, measured by
TensorFlow's own allocator (the CPU's BFC, which counts bytes), is the
scores, not the intermediate, and the high-water mark over both passes is
well under the plain formulation's.
"""

import unittest

import support

# In the child: B x T x T x H floats is 8 MiB, the scores 64 KiB.
PRELUDE = """
    import gc
    import numpy as np
    import tensorflow as tf
    import cuswap.tf
    import cuswap.keras

    B, TQ, TV, H = 4, 64, 64, 128
    rng = np.random.default_rng(0)
    def tensor(*shape):
        return tf.constant(rng.standard_normal(shape).astype("float32"))

    def plain(q, k, scale):
        return tf.reduce_sum(scale * tf.tanh(tf.expand_dims(q, -2) + tf.expand_dims(k, -3)), -1)

    def held_mib(fn, *inputs):
        # Bytes the allocator holds while a tape keeps what backward needs.
        gc.collect()
        before = tf.config.experimental.get_memory_info("CPU:0")["current"]
        with tf.GradientTape() as tape:
            tape.watch(inputs)
            out = fn(*inputs)
        gc.collect()
        held = tf.config.experimental.get_memory_info("CPU:0")["current"] - before
        del tape, out
        return held / 2**20

    def peak_mib(fn, *inputs):
        # The allocator's high-water mark over forward and backward.
        gc.collect()
        tf.config.experimental.reset_memory_stats("CPU:0")
        before = tf.config.experimental.get_memory_info("CPU:0")["current"]
        with tf.GradientTape() as tape:
            tape.watch(inputs)
            loss = tf.reduce_sum(fn(*inputs))
        tape.gradient(loss, inputs)
        return (tf.config.experimental.get_memory_info("CPU:0")["peak"] - before) / 2**20

    def max_difference(a, b):
        return max(float(tf.reduce_max(tf.abs(x - y))) for x, y in zip(a, b))

    def gradients(fn, inputs, weights):
        with tf.GradientTape() as tape:
            tape.watch(inputs)
            loss = tf.reduce_sum(fn(*inputs) * weights)
        return tape.gradient(loss, inputs)
"""


class AdditiveAttention(unittest.TestCase):
    legacy_keras = "1"  # tf.keras is tf_keras; Keras 3 in the subclass below

    def env(self):
        return support.clean_env(TF_CPU_ALLOCATOR_USE_BFC="true",
                                 TF_USE_LEGACY_KERAS=self.legacy_keras)

    def test_scores_and_gradients_equal_the_plain_formulation(self):
        got = support.run_json([PRELUDE, """
            q, k, scale = tensor(B, TQ, H), tensor(B, TV, H), tensor(H)
            w = tensor(B, TQ, TV)
            ours = cuswap.tf.additive_attention(q, k, scale)
            theirs = plain(q, k, scale)
            g_ours = gradients(cuswap.tf.additive_attention, [q, k, scale], w)
            g_theirs = gradients(plain, [q, k, scale], w)
            # One decoder step: query [B, H], scores [B, TV]; no scale is 1.
            q1 = tensor(B, H)
            one = cuswap.tf.additive_attention(q1, k)
            one_plain = plain(tf.expand_dims(q1, 1), k, tf.ones([H]))[:, 0]
            report({"shape": ours.shape.as_list(), "scores": max_difference([ours], [theirs]),
                    "gradients": max_difference(g_ours, g_theirs),
                    "gradient_scale": float(tf.reduce_max(tf.abs(g_theirs[0]))),
                    "one_step_shape": one.shape.as_list(),
                    "one_step": max_difference([one], [one_plain])})
        """], self.env())
        self.assertEqual(got["shape"], [4, 64, 64])
        self.assertEqual(got["one_step_shape"], [4, 64])
        self.assertLess(got["scores"], 1e-5)
        self.assertLess(got["one_step"], 1e-5)
        self.assertGreater(got["gradient_scale"], 1.0)  # not all zeros
        self.assertLess(got["gradients"], 1e-5 * max(1.0, got["gradient_scale"]))

    def test_the_intermediate_is_not_kept_for_the_backward_pass(self):
        got = support.run_json([PRELUDE, """
            q, k, scale = tensor(B, TQ, H), tensor(B, TV, H), tensor(H)
            report({"plain": held_mib(plain, q, k, scale),
                    "ours": held_mib(cuswap.tf.additive_attention, q, k, scale),
                    "plain_peak": peak_mib(plain, q, k, scale),
                    "ours_peak": peak_mib(cuswap.tf.additive_attention, q, k, scale)})
        """], self.env())
        # The plain formulation keeps tanh(q + k) and q + k: 16 MiB; ours the scores.
        self.assertGreaterEqual(got["plain"], 8.0, got)
        self.assertLess(got["ours"], 1.0, got)
        # Nor is it made whole: ours goes through 16 of the 64 query steps at a time.
        self.assertGreaterEqual(got["plain_peak"], 16.0, got)
        self.assertLess(got["ours_peak"], got["plain_peak"] / 2, got)

    def test_the_keras_layer_is_a_drop_in(self):
        got = support.run_json([PRELUDE, """
            dec, enc = tensor(B, TQ, H), tensor(B, TV, H)
            theirs = tf.keras.layers.AdditiveAttention()
            ours = cuswap.keras.AdditiveAttention()
            out_theirs = theirs([dec, enc])
            out_ours = ours([dec, enc])
            ours.set_weights(theirs.get_weights())
            out_ours = ours([dec, enc])
            def grads(layer):
                with tf.GradientTape() as tape:
                    tape.watch([dec, enc])
                    loss = tf.reduce_sum(layer([dec, enc]) ** 2)
                return tape.gradient(loss, [dec, enc] + layer.trainable_weights)
            report({"subclass": isinstance(ours, tf.keras.layers.AdditiveAttention),
                    "weights": len(ours.trainable_weights),
                    "outputs": max_difference([out_ours], [out_theirs]),
                    "gradients": max_difference(grads(ours), grads(theirs)),
                    "gradient_scale": max(float(tf.reduce_max(tf.abs(x))) for x in grads(theirs)),
                    "held_plain": held_mib(lambda d, e: theirs([d, e]), dec, enc),
                    "held_ours": held_mib(lambda d, e: ours([d, e]), dec, enc)})
        """], self.env())
        self.assertTrue(got["subclass"])
        self.assertEqual(got["weights"], 1)  # the scale
        self.assertLess(got["outputs"], 1e-5)
        self.assertGreater(got["gradient_scale"], 1.0)
        self.assertLess(got["gradients"], 1e-5 * got["gradient_scale"])
        self.assertGreaterEqual(got["held_plain"] - got["held_ours"], 8.0, got)


class AdditiveAttentionKeras3(AdditiveAttention):
    """The same, where tf.keras is Keras 3."""

    legacy_keras = "0"


if __name__ == "__main__":
    unittest.main()
