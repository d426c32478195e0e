"""A Keras callback that marks each training batch as one cuswap iteration, and an attention layer.

    import cuswap.keras
    model.fit(x, y, callbacks=[cuswap.keras.IterationMarker()])
    context = cuswap.keras.AdditiveAttention()([decoder, encoder])   # for keras.layers.AdditiveAttention

cuswap's planner cuts what it sees into iterations at these marks
(cuswap_iteration_begin); without them it looks for the repeating launch
sequence itself. Without the shim in the process the callback does nothing.

Importing this module imports TensorFlow: the callback is a
tf.keras.callbacks.Callback, so it works with whichever Keras tf.keras is
(Keras 3, or tf_keras where TF_USE_LEGACY_KERAS=1).
"""

import tensorflow as tf

from . import _shim
from . import tf as _cuswap_tf


class IterationMarker(tf.keras.callbacks.Callback):
    """Calls cuswap.iteration() as each training batch begins (on_train_batch_begin).

    With steps_per_execution above 1, Keras calls the hook once per execution,
    so one mark covers that many batches.
    """

    def on_train_batch_begin(self, batch, logs=None):
        _shim.iteration()


class AdditiveAttention(tf.keras.layers.AdditiveAttention):
    """keras.layers.AdditiveAttention whose backward pass recomputes the query+key tensor.

    The same layer (arguments, weights, outputs and gradients) with its scores from
    cuswap.tf.additive_attention: the batch x Tq x Tv x dim intermediate is not kept
    from the forward pass to the backward pass (Note [Recomputed additive attention]
    in cuswap/tf.py).
    """

    def _calculate_scores(self, query, key):
        return _cuswap_tf.additive_attention(query, key, self.scale if self.use_scale else None)

