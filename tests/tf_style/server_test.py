"""TF 1.x-style server tests: what TF's own server tests check (server_lib_test & co).

``python server_test.py`` runs it under nbdist; ``NBDIST_AS_TF=tensorflow`` (or ``--tf``)
under real TensorFlow. tests/test_tf_style.py checks both pass.
"""

import os
import socket
import subprocess
import sys
import textwrap

if os.environ.get("NBDIST_AS_TF") == "tensorflow" or "--tf" in sys.argv:
    if "--tf" in sys.argv:
        sys.argv.remove("--tf")
    import tensorflow.compat.v1 as tf

    tf.disable_v2_behavior()
else:
    import nbdist as tf


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class SessionResetTest(tf.test.TestCase):
    def testResetAbortsSessionsAndClearsVariables(self):
        server = tf.train.Server.create_local_server()
        v0 = tf.Variable([[2, 1]], name="v0")
        v1 = tf.Variable([[1], [2]], name="v1")
        v2 = tf.matmul(v0, v1)
        sess_1 = tf.Session(server.target)
        sess_2 = tf.Session(server.target)
        sess_1.run(tf.global_variables_initializer())
        self.assertAllEqual([[4]], sess_1.run(v2))
        self.assertAllEqual([[4]], sess_2.run(v2))

        tf.Session.reset(server.target)
        with self.assertRaises(tf.errors.AbortedError):
            sess_2.run(v2)
        sess_2 = tf.Session(server.target)
        with self.assertRaises(tf.errors.FailedPreconditionError):
            sess_2.run(v2)
        sess_2.run(tf.global_variables_initializer())
        self.assertAllEqual([[4]], sess_2.run(v2))
        sess_2.close()

    def testResetClearsOnlyTheNamedContainer(self):
        with tf.container("test0"):
            v0 = tf.Variable(1.0, name="v0")
        with tf.container("test1"):
            v1 = tf.Variable(2.0, name="v0")
        server = tf.train.Server.create_local_server()
        sess = tf.Session(server.target)
        sess.run(tf.global_variables_initializer())
        self.assertAllEqual(1.0, sess.run(v0))
        self.assertAllEqual(2.0, sess.run(v1))

        tf.Session.reset(server.target, ["test0"])
        with self.assertRaises(tf.errors.AbortedError):
            sess.run(v1)
        sess = tf.Session(server.target)
        with self.assertRaises(tf.errors.FailedPreconditionError):
            sess.run(v0)
        self.assertAllEqual(2.0, sess.run(v1))

    def testResetOfAContainerThatIsNotThereStillClosesSessions(self):
        server = tf.train.Server.create_local_server()
        with tf.container("test0"):
            v0 = tf.Variable(1.0, name="v0")
        v1 = tf.Variable(2.0, name="v1")
        sess = tf.Session(server.target)
        sess.run(tf.global_variables_initializer())
        tf.Session.reset(server.target, ["test1"])
        with self.assertRaises(tf.errors.AbortedError):
            sess.run(v0)
        sess = tf.Session(server.target)
        self.assertAllEqual(1.0, sess.run(v0))
        self.assertAllEqual(2.0, sess.run(v1))

    def testResetFailures(self):
        with self.assertRaises(tf.errors.NotFoundError):
            tf.Session.reset("nonexistent", ["test0"])
        with self.assertRaises(tf.errors.DeadlineExceededError):
            tf.Session.reset(
                "grpc://localhost:0", ["test0"], config=tf.ConfigProto(operation_timeout_in_ms=5)
            )

    def testResetClearsTheContainerOnEveryTaskOfTheCluster(self):
        workers, _ = tf.test.create_local_cluster(num_workers=2, num_ps=1)
        with tf.container("model"):
            with tf.device("/job:ps/task:0"):
                on_ps = tf.Variable(1.0, name="on_ps")
            with tf.device("/job:worker/task:1"):
                on_worker = tf.Variable(2.0, name="on_worker")
        with tf.device("/job:worker/task:0"):
            kept = tf.Variable(3.0, name="kept")  # default container: survives
        with tf.Session(workers[0].target) as sess:
            sess.run(tf.global_variables_initializer())
        tf.Session.reset(workers[0].target, ["model"])
        with tf.Session(workers[0].target) as sess:
            for v in (on_ps, on_worker):
                with self.assertRaises(tf.errors.FailedPreconditionError):
                    sess.run(v)
            self.assertAllEqual(3.0, sess.run(kept))


class ServerDefTest(tf.test.TestCase):
    def testInvalidHostname(self):
        with self.assertRaisesRegex(tf.errors.InvalidArgumentError, "port"):
            tf.train.Server({"local": ["localhost"]}, job_name="local", task_index=0)

    def testServerDefFields(self):
        config = tf.ConfigProto(gpu_options=tf.GPUOptions(per_process_gpu_memory_fraction=0.1))
        server = tf.train.Server.create_local_server(config=config, start=False)
        self.assertEqual(
            0.1, server.server_def.default_session_config.gpu_options.per_process_gpu_memory_fraction
        )
        self.assertEqual("localhost", server.server_def.job_name)
        self.assertEqual(0, server.server_def.task_index)
        self.assertIn(server.server_def.protocol, ("grpc", "zmq"))  # nbdist speaks ZeroMQ
        cluster = tf.train.ClusterSpec(server.server_def.cluster)
        self.assertEqual(["localhost"], cluster.jobs)

    def testServerFromServerDef(self):
        # TF also accepts port 0 here (start=False); nbdist's ClusterSpec wants a real port.
        cluster_def = tf.train.ClusterSpec({"localhost": [f"localhost:{_free_port()}"]}).as_cluster_def()
        config = tf.ConfigProto(gpu_options=tf.GPUOptions(per_process_gpu_memory_fraction=0.1))
        server_def = tf.train.ServerDef(
            cluster=cluster_def, job_name="localhost", task_index=0, protocol="grpc"
        )
        server = tf.train.Server(server_def, config=config, start=False)
        self.assertEqual(
            0.1, server.server_def.default_session_config.gpu_options.per_process_gpu_memory_fraction
        )
        self.assertEqual("localhost", server.server_def.job_name)


class ImportGraphDefTest(tf.test.TestCase):
    def _graph_def(self):
        with tf.Graph().as_default() as g:
            x = tf.placeholder(tf.float32, shape=[2], name="x")
            tf.multiply(x, 2.0, name="y")
            tf.constant(7.0, name="c")
        return g.as_graph_def()

    def testImportUnderAPrefixWithInputMapAndReturnElements(self):
        graph_def = self._graph_def()
        z = tf.constant([1.0, 2.0], name="z")
        y, op = tf.import_graph_def(graph_def, input_map={"x:0": z}, return_elements=["y:0", "c"], name="net")
        self.assertEqual("net/y:0", y.name)
        self.assertEqual("net/c", op.name)
        with self.session() as sess:
            self.assertAllClose([2.0, 4.0], sess.run(y))

    def testDefaultPrefixIsImportAndReturnsNone(self):
        self.assertIsNone(tf.import_graph_def(self._graph_def()))
        tf.import_graph_def(self._graph_def())
        names = [op.name for op in tf.get_default_graph().get_operations()]
        self.assertIn("import/y", names)
        self.assertIn("import_1/y", names)

    def testMissingReturnElementIsAValueError(self):
        with self.assertRaises(ValueError):
            tf.import_graph_def(self._graph_def(), return_elements=["nope:0"])


class ProcessExitTest(tf.test.TestCase):
    def testProcessWithARunningServerExitsWhenMainEnds(self):
        child = textwrap.dedent(
            """
            import os, sys, threading
            if os.environ.get("NBDIST_AS_TF") == "tensorflow":
                import tensorflow.compat.v1 as tf
                tf.disable_v2_behavior()
            else:
                import nbdist as tf
            server = tf.train.Server.create_local_server()
            with tf.Session(server.target) as sess:
                print(sess.run(tf.constant(3)))
            print("main ends", flush=True)
            """
        )
        out = subprocess.run(
            [sys.executable, "-c", child], capture_output=True, text=True, timeout=180, check=False
        )
        self.assertEqual(0, out.returncode, out.stderr[-2000:])
        self.assertIn("main ends", out.stdout)


if __name__ == "__main__":
    tf.test.main()
