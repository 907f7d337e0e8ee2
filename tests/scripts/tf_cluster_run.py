"""Runs an exported nbdist graph on a real TensorFlow 2-task cluster (ps + worker, both in this
process): loads the variables' values, runs the steps, writes what they fetched.

Run by tests/test_export_cluster.py in a child process (TensorFlow's in-process servers cannot
be stopped, so they end with this process)::

    python tf_cluster_run.py GRAPH_DEF.pb INPUTS.npz OUT.npz

INPUTS.npz holds ``value/<variable>`` (its value), ``feed/<tensor>`` (fed every step) and
``steps``: one line per step, the names it fetches separated by spaces.
"""

import os
import socket
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import numpy as np
import tensorflow as tf

tf1 = tf.compat.v1
tf1.disable_v2_behavior()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main(graph_def_path, inputs_path, out_path):
    spec = tf1.train.ClusterSpec({"ps": [f"127.0.0.1:{free_port()}"], "worker": [f"127.0.0.1:{free_port()}"]})
    servers = {job: tf.distribute.Server(spec, job_name=job, task_index=0) for job in ("ps", "worker")}
    graph_def = tf1.GraphDef()
    with open(graph_def_path, "rb") as f:
        graph_def.ParseFromString(f.read())
    inputs = np.load(inputs_path, allow_pickle=False)
    graph = tf1.Graph()
    with graph.as_default():
        tf1.import_graph_def(graph_def, name="")
    feeds = {
        graph.get_tensor_by_name(k[len("feed/") :]): inputs[k] for k in inputs.files if k.startswith("feed/")
    }
    out = {}
    with tf1.Session(servers["worker"].target, graph=graph) as sess:
        for key in (k for k in inputs.files if k.startswith("value/")):
            assign = graph.get_operation_by_name(f"{key[len('value/') :]}/Assign")
            sess.run(assign, {assign.inputs[1]: inputs[key]})  # the variable starts from the value
        for i, line in enumerate(str(inputs["steps"]).splitlines()):
            names = line.split()
            fetched = sess.run([graph.as_graph_element(n) for n in names], feeds)
            out.update({f"{i}/{n}": v for n, v in zip(names, fetched) if v is not None})
        out["devices"] = np.array(sorted({n.device for n in graph.get_operations()}))
    np.savez(out_path, **out)


if __name__ == "__main__":
    main(*sys.argv[1:4])
    sys.stdout.flush()
    os._exit(0)  # the servers never stop on their own
