"""Graduation: a ps/worker model prototyped in nbdist, exported with its devices, trains on a
real TensorFlow 2-task cluster (tests/scripts/tf_cluster_run.py, a child process) exactly as
it trains in nbdist, starting from the values nbdist trained to."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import nbdist as tf
from nbdist.export import to_tensorflow
from procs import kernel_env

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("fresh_graph")]
SCRIPT = Path(__file__).parent / "scripts" / "tf_cluster_run.py"
RNG = np.random.RandomState(1)
X = RNG.randn(8, 4).astype(np.float32)
Y = np.array([0, 1, 2, 0, 1, 2, 0, 1], np.int32)


def test_an_exported_ps_worker_model_trains_on_a_real_tensorflow_cluster(tf1_graph_mode, tmp_path):
    with tf.device("/job:ps/task:0"):
        w = tf.Variable(RNG.randn(4, 3).astype(np.float32), name="w")
        b = tf.Variable(np.zeros(3, np.float32), name="b")
        step = tf.train.get_or_create_global_step()
    with tf.device("/job:worker/task:0"):
        x = tf.placeholder(tf.float32, [None, 4], name="x")
        y = tf.placeholder(tf.int32, [None], name="y")
        logits = tf.matmul(x, w) + b
        loss = tf.reduce_mean(
            tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits), name="loss"
        )
        grads = tf.gradients(loss, [w, b], name="grads")
        train = tf.train.GradientDescentOptimizer(0.5).minimize(loss, global_step=step, name="train")
    steps = [
        [loss.name, *(g.name for g in grads)],
        [train.name],
        [train.name],
        [loss.name, w.name, step.name],
    ]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train, {x: X, y: Y})  # the prototype trained a step: its values go to TF
        exported = to_tensorflow(session=sess)
        expected = [sess.run(names, {x: X, y: Y}) for names in steps]
    (tmp_path / "graph_def.pb").write_bytes(exported.graph.as_graph_def().SerializeToString())
    np.savez(
        tmp_path / "inputs.npz",
        steps=np.array("\n".join(" ".join(names) for names in steps)),
        **{f"value/{k}": v for k, v in exported.values.items()},
        **{"feed/x:0": X, "feed/y:0": Y},
    )
    subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            *(str(tmp_path / f) for f in ("graph_def.pb", "inputs.npz", "out.npz")),
        ],
        env=kernel_env(),
        check=True,
        timeout=180,
    )
    out = np.load(tmp_path / "out.npz", allow_pickle=False)
    assert set(out["devices"]) >= {"/job:ps/task:0", "/job:worker/task:0"}
    for i, (names, values) in enumerate(zip(steps, expected, strict=True)):
        for name, value in zip(names, values, strict=True):
            if value is not None:
                np.testing.assert_allclose(out[f"{i}/{name}"], value, rtol=2e-5, atol=1e-6, err_msg=name)
    assert int(out[f"3/{step.name}"]) == 3
