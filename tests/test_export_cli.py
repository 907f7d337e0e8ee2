"""``nbdist export --tf MODEL.py --checkpoint DIR --out OUT``: the model an nbdist script builds,
written as TensorFlow's MetaGraph plus a TensorFlow checkpoint of nbdist's trained values,
which real TensorFlow imports (``import_meta_graph``), restores and runs alike."""

import runpy
import subprocess
import sys

import numpy as np
import pytest

import nbdist as tf
from procs import kernel_env

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("fresh_graph")]
MODEL = """
import numpy as np
import nbdist as tf

with tf.device("/job:ps/task:0"):
    w = tf.Variable(np.arange(12, dtype=np.float32).reshape(4, 3) / 10, name="w")
    b = tf.Variable(np.zeros(3, np.float32), name="b")
with tf.device("/job:worker/task:0"):
    x = tf.placeholder(tf.float32, [None, 4], name="x")
    y = tf.placeholder(tf.int32, [None], name="y")
    logits = tf.matmul(x, w) + b
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits), name="loss")
    train = tf.train.GradientDescentOptimizer(0.5).minimize(loss, name="train")

if __name__ == "__main__":
    raise SystemExit("the export must not run the training loop")
"""
X = np.random.RandomState(2).randn(5, 4).astype(np.float32)
Y = np.array([0, 1, 2, 1, 0], np.int32)


def _export(script, checkpoint, out):
    """``python -m nbdist export --tf SCRIPT --checkpoint DIR --out OUT``, bounded."""
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "nbdist",
            "export",
            "--tf",
            str(script),
            "--checkpoint",
            str(checkpoint),
            "--out",
            str(out),
        ],
        env=kernel_env(),
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


def test_export_command_writes_a_meta_graph_and_checkpoint_tensorflow_restores(tf1_graph_mode, tmp_path):
    script = tmp_path / "model.py"
    script.write_text(MODEL)
    names = runpy.run_path(str(script), run_name="nbdist_export")
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(3):
            sess.run(names["train"], {"x:0": X, "y:0": Y})
        trained = sess.run(names["loss"], {"x:0": X, "y:0": Y})
        (tmp_path / "ckpt").mkdir()
        tf.train.Saver().save(sess, str(tmp_path / "ckpt" / "model"))
    out = tmp_path / "for_tf"
    run = _export(script, tmp_path / "ckpt", out)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "wrote" in run.stdout and "the values of 2 variables" in run.stdout
    tf1 = tf1_graph_mode
    graph = tf1.Graph()
    with graph.as_default():
        saver = tf1.train.import_meta_graph(str(out / "model.meta"), clear_devices=True)
        assert {v.op.name for v in tf1.trainable_variables()} == {"w", "b"}
    with tf1.Session(graph=graph) as sess:
        saver.restore(sess, str(out / "model"))
        np.testing.assert_allclose(sess.run("loss:0", {"x:0": X, "y:0": Y}), trained, rtol=1e-6)


def test_export_command_names_a_directory_without_checkpoints(tmp_path):
    script = tmp_path / "model.py"
    script.write_text(MODEL)
    run = _export(script, tmp_path, tmp_path / "out")
    assert run.returncode == 2
    assert "holds no nbdist checkpoint" in run.stderr
