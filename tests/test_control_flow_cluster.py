"""Control flow across tasks, on real server processes (1 ps + 2 workers on 127.0.0.1).

A `tf.cond` whose branches sit on two other tasks than its predicate: the untaken side's
tensors cross `_Send`/`_Recv` as dead, fed both ways, for values and gradients; a train/eval
switch over variables on the ps. A `tf.while_loop` placed on the ps runs there when a worker's
session drives it; one whose body holds an op of another task is refused at partitioning,
naming the op, its device and the loop; an endless loop on the ps ends at the step's deadline.
"""

import numpy as np
import pytest

import nbdist as tf

pytestmark = [pytest.mark.servers(ps=1, worker=2), pytest.mark.usefixtures("fresh_graph")]
X = np.array([0.5, -1.0, 2.0], np.float32)


def _session(cluster):
    return tf.Session(cluster.target("worker", 0), config=tf.ConfigProto(operation_timeout_in_ms=20_000))


def test_a_cond_whose_branches_run_on_two_other_tasks(module_servers):
    with tf.device("/job:worker/task:0"):
        p = tf.placeholder(tf.bool, [], name="p")
        x = tf.placeholder(tf.float32, [3], name="x")

    def on_ps():
        with tf.device("/job:ps/task:0"):
            return tf.square(x, name="ps_branch") * 3.0

    def on_worker1():
        with tf.device("/job:worker/task:1"):
            return tf.sin(x, name="worker1_branch") + 1.0

    with tf.device("/job:worker/task:0"):
        y = tf.cond(p, on_ps, on_worker1)
        (g,) = tf.gradients(tf.reduce_sum(y), [x])
    opts = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
    with _session(module_servers) as sess:
        for pred in (True, False, True):
            meta = tf.RunMetadata()
            got, grad = sess.run([y, g], {p: pred, x: X}, options=opts, run_metadata=meta)
            want = X * X * 3.0 if pred else np.sin(X) + 1.0
            want_grad = 6.0 * X if pred else np.cos(X)
            np.testing.assert_allclose(got, want, rtol=1e-6)
            np.testing.assert_allclose(grad, want_grad, rtol=1e-6)
            ran = {
                (d["device"], s["node_name"])
                for d in _dicts(meta.step_stats.dev_stats)
                for s in d["node_stats"]
            }
            ran_names = {name for _, name in ran}
            assert ("cond/ps_branch" in ran_names) == pred
            assert ("cond/worker1_branch" in ran_names) == (not pred)


def _dicts(dev_stats):
    return [{"device": d.device, "node_stats": d.node_stats} for d in dev_stats]


def test_a_train_eval_switch_over_variables_on_the_ps_trains_only_when_training(module_servers):
    cluster = tf.train.ClusterSpec(
        {
            "ps": [module_servers.address("ps", 0)],
            "worker": [module_servers.address("worker", i) for i in (0, 1)],
        }
    )
    setter = tf.train.replica_device_setter(worker_device="/job:worker/task:0", cluster=cluster)
    with tf.device(setter):
        training = tf.placeholder_with_default(False, [], name="training")
        x = tf.constant(np.ones((4, 3), np.float32))
        w = tf.get_variable("w_switch", [3, 1], initializer=tf.ones_initializer())
        logits = tf.matmul(x, w)
        out = tf.cond(training, lambda: logits * 0.5, lambda: logits)
        loss = tf.reduce_mean(tf.square(out - 1.0))
        step = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
        init = tf.global_variables_initializer()
    with _session(module_servers) as sess:
        sess.run(init)
        assert sess.run(loss) == pytest.approx(4.0)  # eval: logits = 3
        sess.run(step, {training: True})  # d/dw of mean((0.5 * 3 - 1)^2) = 0.5 per entry
        np.testing.assert_allclose(sess.run(w), np.full((3, 1), 0.95), rtol=1e-6)


def test_a_loop_on_the_ps_runs_there_driven_by_a_worker(module_servers):
    with tf.device("/job:worker/task:0"):
        x = tf.placeholder(tf.float32, [3], name="x")
    with tf.device("/job:ps/task:0"):
        _, y = tf.while_loop(lambda i, y: i < 5, lambda i, y: (i + 1, y * 0.5 + x), [0, x], name="on_ps")
    with tf.device("/job:worker/task:0"):
        (g,) = tf.gradients(tf.reduce_sum(y), [x])
    meta = tf.RunMetadata()
    with _session(module_servers) as sess:
        got, grad = sess.run(
            [y, g],
            {x: X},
            options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
            run_metadata=meta,
        )
    want = X.copy()
    for _ in range(5):
        want = want * 0.5 + X
    np.testing.assert_allclose(got, want, rtol=1e-6)
    np.testing.assert_allclose(grad, np.full(3, sum(0.5**k for k in range(6))), rtol=1e-6)
    spans = [
        (d.device, s["node_name"])
        for d in meta.step_stats.dev_stats
        for s in d.node_stats
        if s["node_name"].startswith("on_ps/while/iteration:")
    ]
    assert len(spans) == 5 and all("/job:ps/" in device for device, _ in spans)


def test_a_loop_whose_body_has_an_op_of_another_task_is_refused_naming_it(module_servers):
    x = tf.constant([1.0, 2.0])

    def body(i, y):
        with tf.device("/job:worker/task:1"):
            z = tf.multiply(y, y, name="elsewhere")
        return i + 1, z

    with tf.device("/job:ps/task:0"):
        out = tf.while_loop(lambda i, y: i < 3, body, [0, x], name="spanning")
    with (
        _session(module_servers) as sess,
        pytest.raises(
            tf.errors.InvalidArgumentError,
            match=r"op 'spanning/elsewhere' \(Mul\) in the body of while loop 'spanning' is placed on "
            r"/job:worker/task:1, but the loop runs on /job:ps/replica:0/task:0",
        ),
    ):
        sess.run(out)


def test_an_endless_loop_on_the_ps_ends_at_the_deadline_naming_it(module_servers):
    with tf.device("/job:ps/task:0"):
        out = tf.while_loop(lambda i: tf.constant(True), lambda i: i + 1, [tf.constant(0)], name="endless")
    with (
        _session(module_servers) as sess,
        pytest.raises(tf.errors.DeadlineExceededError, match=r"while loop 'endless'.* at iteration \d+"),
    ):
        sess.run(out, options=tf.RunOptions(timeout_in_ms=500))
    with _session(module_servers) as sess:  # the ps serves the next step
        assert sess.run(tf.constant(1.0) + 1.0) == 2.0
