"""Traces one training step of a real TensorFlow 2-task cluster (ps + worker, both in this
process) and writes its RunMetadata and the requested GraphDef as protobuf files.

Run by tests/test_export_views.py in a child process (TensorFlow's in-process servers cannot
be stopped, so they end with this process): ``python tf_cluster_trace.py OUT_DIR``.
"""

import os
import socket
import sys
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import tensorflow as tf

tf1 = tf.compat.v1
tf1.disable_v2_behavior()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main(out_dir):
    spec = tf1.train.ClusterSpec({"ps": [f"127.0.0.1:{free_port()}"], "worker": [f"127.0.0.1:{free_port()}"]})
    servers = {job: tf.distribute.Server(spec, job_name=job, task_index=0) for job in ("ps", "worker")}
    graph = tf1.Graph()
    with graph.as_default():
        with tf1.device("/job:ps/task:0"):
            w = tf1.Variable(tf1.ones([4, 3]), name="w")
            b = tf1.Variable(tf1.zeros([3]), name="b")
        with tf1.device("/job:worker/task:0"):
            x = tf1.placeholder(tf1.float32, [None, 4], name="x")
            loss = tf1.reduce_sum(tf1.square(tf1.matmul(x, w) + b), name="loss")
            train = tf1.train.GradientDescentOptimizer(0.01).minimize(loss)
        init = tf1.global_variables_initializer()
    options = tf1.RunOptions(trace_level=tf1.RunOptions.FULL_TRACE, output_partition_graphs=True)
    with tf1.Session(servers["worker"].target, graph=graph) as sess:
        sess.run(init)
        # A warm-up step first: the traced one is then a steady-state step (the first step's
        # trace, with the graph's first registration, sometimes lacked a transfer's bytes).
        sess.run([loss, train], {x: [[1.0, 2.0, 3.0, 4.0]]})
        # Even so a steady step's trace now and then lacks the ps's receipt of the gradients
        # (4 transfers of 5, the worker "sending" 16 bytes): the fullest of three traced steps.
        traces = []
        for _ in range(3):
            md = tf1.RunMetadata()
            sess.run([loss, train], {x: [[1.0, 2.0, 3.0, 4.0]]}, options=options, run_metadata=md)
            traces.append(md)
        md = max(traces, key=lambda m: sum(len(d.node_stats) for d in m.step_stats.dev_stats))
    out = Path(out_dir)
    (out / "run_metadata.pb").write_bytes(md.SerializeToString())
    (out / "graph_def.pb").write_bytes(graph.as_graph_def().SerializeToString())


if __name__ == "__main__":
    main(sys.argv[1])
    sys.stdout.flush()
    os._exit(0)  # the servers never stop on their own
