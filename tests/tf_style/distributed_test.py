"""A TF 1.x-style test file: `tf.test.TestCase`, a local cluster, sessions, variables across tasks.

Run as TF's own tests are run: ``python distributed_test.py``. Under nbdist by default;
``NBDIST_AS_TF=tensorflow python distributed_test.py`` (or ``--tf``) runs the very same
file under real TensorFlow (``tensorflow.compat.v1``), which is how
tests/test_tf_style.py checks that both pass.
"""

import os
import sys

import numpy as np

if os.environ.get("NBDIST_AS_TF") == "tensorflow" or "--tf" in sys.argv:
    if "--tf" in sys.argv:
        sys.argv.remove("--tf")
    import tensorflow.compat.v1 as tf

    tf.disable_v2_behavior()
else:
    import nbdist as tf


class TestCaseHelpersTest(tf.test.TestCase):
    def testSessionRunsTheDefaultGraph(self):
        c = tf.constant([[2, 1]])
        d = tf.constant([[1], [2]])
        with self.session() as sess:
            self.assertAllEqual([[4]], sess.run(tf.matmul(c, d)))
            self.assertIs(tf.get_default_session(), sess)

    def testSessionOnAnotherGraph(self):
        graph = tf.Graph()
        with graph.as_default():
            x = tf.constant(2.0) * 3.0
        with self.session(graph=graph) as sess:
            self.assertIs(sess.graph, graph)
            self.assertAllClose(6.0, sess.run(x))

    def testCachedSessionIsReusedAndKeepsVariables(self):
        v = tf.Variable(1.0, name="v")
        inc = tf.assign_add(v, 1.0)
        with self.cached_session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(inc)
        with self.cached_session() as again:
            self.assertIs(again, sess)
            self.assertAllClose(2.0, again.run(v))
        with self.test_session() as old_name:
            self.assertIs(old_name, sess)

    def testCachedSessionRefusesAnotherGraph(self):
        with self.cached_session():
            pass
        with (
            self.assertRaisesRegex(ValueError, "different than the one"),
            self.cached_session(graph=tf.Graph()),
        ):
            pass

    def testEveryTestStartsWithAFreshGraph(self):
        self.assertEqual([], tf.get_default_graph().get_operations())
        tf.constant(1.0, name="only")

    def testEvaluateUsesTheDefaultSession(self):
        with self.cached_session():
            self.assertAllEqual([1, 2], self.evaluate(tf.constant([1, 2])))

    def testAssertAllCloseOnNestedStructures(self):
        a = {"w": np.array([1.0, 2.0]), "b": (0.5, [1e-7, 3.0])}
        self.assertAllClose(a, {"w": [1.0, 2.0 + 1e-7], "b": (0.5, [0.0, 3.0])})
        with self.assertRaises(AssertionError):
            self.assertAllClose(a, {"w": [1.0, 2.1], "b": (0.5, [0.0, 3.0])})
        self.assertAllClose([1.0, 2.0], [1.01, 2.02], rtol=0.02)
        with self.assertRaises(AssertionError):
            self.assertAllClose(np.float16(1.0), np.float16(1.001))
        self.assertAllCloseAccordingToType(np.float16(1.0), np.float16(1.001))  # float16: 1e-3

    def testAssertAllEqualChecksShapes(self):
        self.assertAllEqual([[1, 2]], np.array([[1, 2]]))
        self.assertAllEqual([np.nan, 1.0], [np.nan, 1.0])
        with self.assertRaises(AssertionError):
            self.assertAllEqual([1, 2], [[1, 2]])
        with self.assertRaises(AssertionError):
            self.assertAllEqual([1, 2], [1, 3])

    def testGetTempDirIsOnePerTest(self):
        d = self.get_temp_dir()
        self.assertTrue(os.path.isdir(d))
        self.assertEqual(d, self.get_temp_dir())
        self.assertTrue(os.path.isdir(tf.test.get_temp_dir()))
        with open(os.path.join(d, "f.txt"), "w") as f:
            f.write("x")

    def testCheckedThreadJoins(self):
        seen = []
        t = self.checkedThread(target=seen.append, args=(3,))
        t.start()
        t.join()
        self.assertEqual([3], seen)

    def testNoGpu(self):
        self.assertFalse(tf.test.is_gpu_available())


class LocalClusterTest(tf.test.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.workers, cls.ps = tf.test.create_local_cluster(num_workers=2, num_ps=1)

    def testServersFormOneCluster(self):
        self.assertEqual(2, len(self.workers))
        self.assertEqual(1, len(self.ps))
        for s in (*self.workers, *self.ps):
            self.assertTrue(s.target.startswith(("grpc://", "zmq://")))

    def testVariableOnPsIsSharedByWorkersSessions(self):
        with tf.device("/job:ps/task:0"):
            w = tf.Variable([1.0, 2.0], name="w")
        with tf.device("/job:worker/task:1"):
            doubled = w * 2.0
        with tf.device("/job:worker/task:0"):
            update = tf.assign_add(w, [1.0, 1.0])
        with tf.Session(self.workers[0].target) as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(update)
            self.assertAllClose([4.0, 6.0], sess.run(doubled))
        # Another client, through the other worker's master, sees the same variable.
        with tf.Session(self.workers[1].target) as sess:
            self.assertAllClose([2.0, 3.0], sess.run(w))

    def testBetweenGraphReplicasShareTheGlobalStep(self):
        def replica(task):
            graph = tf.Graph()
            with graph.as_default():
                with tf.device("/job:ps/task:0"):
                    step = tf.Variable(0, name="shared_step")
                with tf.device(f"/job:worker/task:{task}"):
                    inc = tf.assign_add(step, 1)
                init = tf.global_variables_initializer()
            return graph, init, inc, step

        g0, init, inc0, step = replica(0)
        g1, _, inc1, _ = replica(1)
        with (
            tf.Session(self.workers[0].target, graph=g0) as s0,
            tf.Session(self.workers[1].target, graph=g1) as s1,
        ):
            s0.run(init)
            for _ in range(3):
                s0.run(inc0)
                s1.run(inc1)
            self.assertEqual(6, s0.run(step))

    def testQueueOnPsFeedsAWorker(self):
        with tf.device("/job:ps/task:0"):
            q = tf.FIFOQueue(5, [tf.float32], shapes=[[]], shared_name="tf_style_q")
        with tf.device("/job:worker/task:0"):
            enqueue = q.enqueue_many([[1.0, 2.0, 3.0]])
        with tf.device("/job:worker/task:1"):
            total = q.dequeue_many(3)
        with tf.Session(self.workers[0].target) as sess:
            sess.run(enqueue)
            self.assertAllClose([1.0, 2.0, 3.0], sess.run(total))


class ReportingBenchmark(tf.test.Benchmark):
    def benchmarkMatMul(self):
        with tf.Graph().as_default():
            x = tf.matmul(tf.ones([8, 8]), tf.ones([8, 8]))
            with tf.Session() as sess:
                result = self.run_op_benchmark(sess, x, burn_iters=1, min_iters=3)
        assert result["iters"] == 3 and result["wall_time"] > 0, result
        self.report_benchmark(iters=1, wall_time=0.5, extras={"note": 1.0}, name="custom")


class BenchmarkTest(tf.test.TestCase):
    def testReportBenchmarkRuns(self):
        ReportingBenchmark().benchmarkMatMul()


if __name__ == "__main__":
    tf.test.main()
