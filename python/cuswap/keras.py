"""A Keras callback that marks each training batch as one cuswap iteration.

    import cuswap.keras
    model.fit(x, y, callbacks=[cuswap.keras.IterationMarker()])

cuswap's planner cuts what it sees into iterations at these marks
(cuswap_iteration_begin); without them it looks for the repeating launch
sequence itself. Without the shim in the process the callback does nothing.

Importing this module imports TensorFlow: the callback is a
tf.keras.callbacks.Callback, so it works with whichever Keras tf.keras is
(Keras 3, or tf_keras where TF_USE_LEGACY_KERAS=1).
"""

import tensorflow as tf

from . import _shim


class IterationMarker(tf.keras.callbacks.Callback):
    """Calls cuswap.iteration() as each training batch begins (on_train_batch_begin).

    With steps_per_execution above 1, Keras calls the hook once per execution,
    so one mark covers that many batches.
    """

    def on_train_batch_begin(self, batch, logs=None):
        _shim.iteration()
