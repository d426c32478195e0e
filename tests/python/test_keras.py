"""cuswap.keras.IterationMarker in a real tf.keras model.fit, counted by the shim (label python).

The fit runs on the CPU in a child under LD_PRELOAD=libcuswap.so with a
budget, so the shim keeps an iteration count (cuswap_stats_json's
"iterations"); simcuda is only there for the shim to start over.
"""

import unittest

import support


class IterationMarker(unittest.TestCase):
    def test_each_batch_of_a_fit_is_one_iteration(self):
        got = support.run_json("""
            import numpy as np
            import tensorflow as tf
            import cuswap
            import cuswap.keras

            marker = cuswap.keras.IterationMarker()
            model = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(2)])
            model.compile(optimizer="sgd", loss="mse")
            x, y = np.zeros((6, 4), "float32"), np.zeros((6, 2), "float32")
            before = cuswap.stats()["iterations"]
            model.fit(x, y, batch_size=2, epochs=1, verbose=0, callbacks=[marker])
            after_fit = cuswap.stats()["iterations"]
            model.evaluate(x, y, batch_size=2, verbose=0, callbacks=[marker])  # not training
            report({"callback": isinstance(marker, tf.keras.callbacks.Callback),
                    "before": before, "after_fit": after_fit,
                    "after_evaluate": cuswap.stats()["iterations"]})
        """, support.shim_env())
        self.assertEqual(got, {"callback": True, "before": 0, "after_fit": 3, "after_evaluate": 3})


if __name__ == "__main__":
    unittest.main()
