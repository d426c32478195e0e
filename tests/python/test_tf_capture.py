"""cuswap.tf captures that `cuswap inspect` reads (ctest label python).

Each style runs in its own child: graph mode and eager mode cannot share a
process, and the environment (cuswap.tf.prepare_environment) must be set
before TensorFlow is imported. The models are a two-layer perceptron, so a
capture takes a second after TensorFlow's import.
"""

import json
import os
import subprocess
import tempfile
import unittest

import support

TF2_STEP = """
    import cuswap.tf
    cuswap.tf.prepare_environment()
    import numpy as np
    import tensorflow as tf

    w = tf.Variable(tf.random.normal([64, 64]))
    optimizer = tf.keras.optimizers.SGD(0.1)

    @tf.function
    def train_step(x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(tf.nn.relu(x @ w) @ w)
        optimizer.apply_gradients(zip(tape.gradient(loss, [w]), [w]))
        return loss

    x = tf.random.normal([32, 64])
"""


def inspect(path):
    """`cuswap inspect --json` of a file: (exit code, parsed output or stderr)."""
    r = subprocess.run([support.cli(), "inspect", "--json", path], capture_output=True, text=True,
                       timeout=60)
    return r.returncode, (json.loads(r.stdout) if r.returncode == 0 else r.stderr)


class Capture(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="cuswap-tf-capture-")
        self.dir = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def path(self, name):
        return os.path.join(self.dir, name)

    def assertInspects(self, path, format_name, iterations):
        code, summary = inspect(path)
        self.assertEqual(code, 0, f"cuswap inspect {path}: {summary}")
        self.assertEqual(summary["format"], format_name)
        self.assertEqual(summary["iterations"], iterations)
        self.assertGreater(summary["buffers"], 0)
        self.assertGreater(summary["launches"], 0)

    def test_tf2_steps_a_function_and_a_keras_model(self):
        got = support.run_json([TF2_STEP, """
            import os, sys
            out = sys.argv[1]
            cuswap.tf.capture(lambda: train_step(x).numpy(), out + "/fn.xplane.pb.gz", steps=2,
                              memory_profile_path=out + "/fn.memory_profile.json.gz")
            model = tf.keras.Sequential([tf.keras.Input((8,)), tf.keras.layers.Dense(4)])
            model.compile(optimizer="sgd", loss="mse")
            batch = (np.ones((16, 8), "float32"), np.ones((16, 4), "float32"))
            cuswap.tf.capture(model, out + "/model.xplane.pb", batch=batch)
            report(sorted(os.listdir(out)))
        """], support.clean_env(), args=[self.dir])
        self.assertEqual(got, ["fn.memory_profile.json.gz", "fn.xplane.pb.gz", "model.xplane.pb"])
        with open(self.path("fn.xplane.pb.gz"), "rb") as f:
            header = f.read(10)
        self.assertEqual(header[:2], b"\x1f\x8b", "a .gz name is written as gzip")
        self.assertEqual(header[4:8], b"\0\0\0\0", "with mtime 0")
        self.assertInspects(self.path("fn.xplane.pb.gz"), "tf2-xplane", 2)
        self.assertInspects(self.path("model.xplane.pb"), "tf2-xplane", 1)
        code, summary = inspect(self.path("fn.memory_profile.json.gz"))
        self.assertEqual(code, 0, summary)
        self.assertEqual(summary["format"], "tf2-memory-profile")

    def test_tf2_without_memory_events_is_an_error_naming_the_fix(self):
        # The default CPU allocator emits no MemoryAllocation events.
        got = support.run_json([TF2_STEP.replace("cuswap.tf.prepare_environment()", ""), """
            import os, sys
            try:
                cuswap.tf.capture(lambda: train_step(x).numpy(), sys.argv[1] + "/x.xplane.pb.gz")
                report({"error": None})
            except RuntimeError as e:
                report({"error": str(e), "written": os.listdir(sys.argv[1])})
        """], support.clean_env(), args=[self.dir])
        self.assertIsNotNone(got["error"], "a capture without memory events must raise")
        self.assertIn("no MemoryAllocation events", got["error"])
        self.assertIn("TF_CPU_ALLOCATOR_USE_BFC=true", got["error"])
        self.assertEqual(got["written"], [])

    def test_tf1_session_timeline_and_step_stats(self):
        got = support.run_json("""
            import os, sys
            import cuswap.tf
            cuswap.tf.prepare_environment()
            import numpy as np
            import tensorflow as tf

            tf.compat.v1.disable_eager_execution()
            x = tf.compat.v1.placeholder("float32", (32, 64), name="x")
            w = tf.compat.v1.get_variable("w", (64, 64))
            loss = tf.reduce_sum(tf.nn.relu(tf.matmul(x, w)) @ w)
            train = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(loss)
            session = tf.compat.v1.Session()
            session.run(tf.compat.v1.global_variables_initializer())
            rng = np.random.default_rng(0)
            fed = []

            def feed():
                fed.append(1)
                return {x: rng.standard_normal((32, 64)).astype("float32")}

            out = sys.argv[1]
            cuswap.tf.capture_session(session, [train, loss], out + "/s.timeline.json.gz",
                                      feed_dict=feed, warmup=2,
                                      step_stats_path=out + "/s.step_stats.pb.gz")
            report({"runs": len(fed), "files": sorted(os.listdir(out))})
        """, support.clean_env(), args=[self.dir])
        self.assertEqual(got, {"runs": 3, "files": ["s.step_stats.pb.gz", "s.timeline.json.gz"]})
        self.assertInspects(self.path("s.timeline.json.gz"), "tf1-timeline", 1)
        self.assertInspects(self.path("s.step_stats.pb.gz"), "tf1-step-stats", 1)


if __name__ == "__main__":
    unittest.main()
