"""tf.train breadth (issue 32) against real TensorFlow: Adadelta, FTRL and the proximal
optimizers, more learning-rate schedules, hooks and loops, checkpoint readers, write_graph and
summary_iterator."""

import os
import time

import numpy as np
import pytest

import nbdist as tf

W0 = np.array([[1.0, -2.0], [0.5, 0.03]], np.float32)
X = np.array([[1.0, 2.0], [-1.0, 0.5], [0.3, -0.7]], np.float32)
Y = np.array([[0.5, -1.0], [2.0, 0.0], [-0.2, 0.4]], np.float32)

# name -> fn(lib): the optimizer
OPTIMIZERS = {
    "adadelta": lambda t: t.train.AdadeltaOptimizer(1.0, rho=0.9, epsilon=1e-6),
    "adadelta_defaults": lambda t: t.train.AdadeltaOptimizer(),
    "ftrl": lambda t: t.train.FtrlOptimizer(0.3),
    "ftrl_l1_l2": lambda t: t.train.FtrlOptimizer(
        0.3, l1_regularization_strength=0.05, l2_regularization_strength=0.1
    ),
    "ftrl_power": lambda t: t.train.FtrlOptimizer(
        0.3, learning_rate_power=-0.3, initial_accumulator_value=0.5, l1_regularization_strength=0.01
    ),
    "ftrl_shrinkage_beta": lambda t: t.train.FtrlOptimizer(
        0.3, l1_regularization_strength=0.01, l2_shrinkage_regularization_strength=0.2, beta=0.5
    ),
    "proximal_gd": lambda t: t.train.ProximalGradientDescentOptimizer(0.05),
    "proximal_gd_l1_l2": lambda t: t.train.ProximalGradientDescentOptimizer(
        0.05, l1_regularization_strength=0.2, l2_regularization_strength=0.1
    ),
    "proximal_adagrad": lambda t: t.train.ProximalAdagradOptimizer(0.2),
    "proximal_adagrad_l1_l2": lambda t: t.train.ProximalAdagradOptimizer(
        0.2, l1_regularization_strength=0.1, l2_regularization_strength=0.05
    ),
}


def _train(lib, make_optimizer, steps=5):
    """Variables (and slots) after `steps` steps on a small least-squares model."""
    with lib.Graph().as_default() as graph:
        w = lib.Variable(W0, name="w")
        b = lib.Variable(np.float32(0.1), name="b")
        loss = lib.reduce_sum(lib.square(lib.matmul(X, w) + b - Y))
        opt = make_optimizer(lib)
        train = opt.minimize(loss)
        slots = sorted(opt.get_slot_names())
        with lib.Session(graph=graph) as sess:
            sess.run(lib.global_variables_initializer())
            for _ in range(steps):
                sess.run(train)
            values = sess.run([w, b] + [opt.get_slot(v, s) for s in slots for v in (w, b)])
            names = [opt.get_slot(v, s).op.name for s in slots for v in (w, b)]
            return values, slots, names


@pytest.mark.tf
@pytest.mark.parametrize("name", OPTIMIZERS)
def test_optimizer_matches_tensorflow(tf1, name):
    ours, our_slots, our_names = _train(tf, OPTIMIZERS[name])
    theirs, their_slots, their_names = _train(tf1, OPTIMIZERS[name])
    assert (our_slots, our_names) == (their_slots, their_names)
    for a, e in zip(ours, theirs):
        np.testing.assert_allclose(a, e, rtol=2e-6, atol=1e-7)
    assert not np.allclose(ours[0], W0)  # (it trained)


def test_l1_zeroes_weights(graph):
    w = tf.Variable([0.01, -0.02, 3.0], name="w")
    train = tf.train.ProximalGradientDescentOptimizer(0.1, l1_regularization_strength=1.0).minimize(
        tf.reduce_sum(w * 0.0)
    )
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train)
        np.testing.assert_allclose(sess.run(w), [0.0, 0.0, 2.9], rtol=1e-6)


def test_bad_hyper_parameters_are_refused():
    with pytest.raises(ValueError, match="initial_accumulator_value"):
        tf.train.ProximalAdagradOptimizer(0.1, initial_accumulator_value=0.0)
    with pytest.raises(ValueError, match="learning_rate_power"):
        tf.train.FtrlOptimizer(0.1, learning_rate_power=0.5)
    with pytest.raises(ValueError, match="l1_regularization_strength"):
        tf.train.FtrlOptimizer(0.1, l1_regularization_strength=-1.0)


# -- learning-rate schedules ----------------------------------------------------------------------
STEPS = [0, 1, 7, 50, 99, 100, 101, 150, 299, 300, 301, 700, 1000, 5000]

# name -> fn(lib, learning_rate, global_step)
SCHEDULES = {
    "piecewise_constant_decay": lambda t, lr, s: t.train.piecewise_constant_decay(
        s, [100, 300], [lr, lr / 10, lr / 100]
    ),
    "cosine_decay_restarts": lambda t, lr, s: t.train.cosine_decay_restarts(lr, s, 100),
    "cosine_decay_restarts_mul": lambda t, lr, s: t.train.cosine_decay_restarts(
        lr, s, 100, t_mul=1.5, m_mul=0.7, alpha=0.1
    ),
    "cosine_decay_restarts_t1": lambda t, lr, s: t.train.cosine_decay_restarts(
        lr, s, 100, t_mul=1.0, m_mul=0.5
    ),
    "linear_cosine_decay": lambda t, lr, s: t.train.linear_cosine_decay(lr, s, 1000),
    "linear_cosine_decay_periods": lambda t, lr, s: t.train.linear_cosine_decay(
        lr, s, 300, num_periods=2.0, alpha=0.1, beta=0.01
    ),
}


def _schedule(lib, fn):
    lr = np.float32(0.1)
    with lib.Graph().as_default() as graph:
        step = lib.placeholder(lib.int64, [], name="global_step")
        out = fn(lib, lib.constant(lr), step)
        with lib.Session(graph=graph) as sess:
            return np.array([sess.run(out, {step: s}) for s in STEPS])


@pytest.mark.tf
@pytest.mark.parametrize("name", SCHEDULES)
def test_schedule_matches_tensorflow(tf1, name):
    ours, theirs = _schedule(tf, SCHEDULES[name]), _schedule(tf1, SCHEDULES[name])
    assert ours.dtype == theirs.dtype == np.float32
    np.testing.assert_allclose(ours, theirs, rtol=2e-6, atol=1e-9)


def test_noisy_linear_cosine_decay_is_seeded_noise_around_the_linear_cosine():
    def draws(seed):
        with tf.Graph().as_default() as graph:
            tf.set_random_seed(seed)
            step = tf.placeholder(tf.int64, [])
            out = tf.train.noisy_linear_cosine_decay(0.1, step, 1000, initial_variance=0.01)
            assert out.shape.ndims == 0 and out.dtype == tf.float32
            clean = tf.train.linear_cosine_decay(0.1, step, 1000)
            with tf.Session(graph=graph) as sess:
                return np.array([sess.run([out, clean], {step: s}) for s in STEPS for _ in range(20)])

    first, again, other = draws(1), draws(1), draws(2)
    np.testing.assert_array_equal(first, again)
    assert not np.array_equal(first[:, 0], other[:, 0])
    noisy, clean = first[:, 0], first[:, 1]
    # noise in the linear factor: |noisy - clean| = lr * |cosine factor| * |N(0, std)|, std <= 0.1
    assert 0 < np.max(np.abs(noisy - clean)) < 0.1 * 0.5
    assert np.std(noisy[:20] - clean[:20]) > 1e-3


# -- hooks and loops ------------------------------------------------------------------------------
class _FakeSession:
    """Returns the next of `steps` for each `run` (the global step another worker advances)."""

    def __init__(self, steps):
        self.steps, self.runs = list(steps), 0

    def run(self, fetches):
        self.runs += 1
        return self.steps.pop(0)


class _FakeContext:
    def __init__(self, session):
        self.session = session


def test_global_step_waiter_hook_waits_for_the_step(graph, monkeypatch):
    from nbdist.train import loops

    monkeypatch.setattr(loops, "STEP_POLL_SECS", 0.001)
    tf.train.get_or_create_global_step()
    hook = tf.train.GlobalStepWaiterHook(3)
    hook.begin()
    session = _FakeSession([0, 1, 3, 99])
    assert hook.before_run(_FakeContext(session)) is None
    assert session.runs == 3
    hook.before_run(_FakeContext(session))  # started: no more waiting
    assert session.runs == 3
    zero = tf.train.GlobalStepWaiterHook(0)
    zero.begin()
    zero.before_run(_FakeContext(session))
    assert session.runs == 3


def test_global_step_waiter_hook_needs_a_global_step(graph):
    with pytest.raises(RuntimeError, match="Global step should be created"):
        tf.train.GlobalStepWaiterHook(3).begin()


def test_hooks_in_a_monitored_session(graph):
    step = tf.train.get_or_create_global_step()
    x = tf.placeholder(tf.float32, [])
    train, y = tf.assign_add(step, 1), x * 2
    feeds = iter([1.0, 2.0, 3.0])
    hooks = [tf.train.GlobalStepWaiterHook(0), tf.train.FeedFnHook(lambda: {x: next(feeds)})]
    with tf.train.MonitoredSession(hooks=hooks) as sess:
        got = [sess.run([y, train]) for _ in range(3)]
    assert got == [[2.0, 1], [4.0, 2], [6.0, 3]]


@pytest.mark.tf
def test_basic_train_loop_retries_after_an_abort_as_tensorflow(tf1):
    def loop(lib):
        calls = []
        with lib.Graph().as_default():
            lib.train.get_or_create_global_step()
            sv = lib.train.Supervisor(logdir=None)

            def step(sess, tag, scale=1):
                calls.append((tag, scale))
                if len(calls) == 1:
                    raise lib.errors.AbortedError(None, None, "restarted")
                if len(calls) == 4:
                    sv.request_stop()

            lib.train.basic_train_loop(sv, step, args=["s"], kwargs={"scale": 2})
        return calls

    assert loop(tf) == loop(tf1) == [("s", 2)] * 4


def _save_checkpoint(directory, global_step):
    with tf.Graph().as_default():
        v = tf.Variable(float(global_step), name="v")
        saver = tf.train.Saver()
        with tf.Session() as sess:
            sess.run(v.initializer)
            return saver.save(sess, f"{directory}/model", global_step=global_step)


@pytest.mark.tf
def test_checkpoints_iterator_yields_new_checkpoints_and_stops_on_timeout(tf1, tmp_path):
    first = _save_checkpoint(tmp_path, 1)
    calls = []

    def timeout_fn():
        calls.append(time.time())
        if len(calls) == 1:
            _save_checkpoint(tmp_path, 2)  # a new one while the iterator waits
        return len(calls) == 2

    start = time.time()
    ours = list(tf.train.checkpoints_iterator(str(tmp_path), timeout=0, timeout_fn=timeout_fn))
    assert ours == [first, f"{tmp_path}/model-2"] and len(calls) == 2
    assert list(tf.train.checkpoints_iterator(str(tmp_path), timeout=0)) == [f"{tmp_path}/model-2"]
    assert time.time() - start < 1.0  # (bounded: no wait without a timeout)
    assert list(tf1.train.checkpoints_iterator(str(tmp_path), timeout=0)) == [f"{tmp_path}/model-2"]
    assert list(tf.train.checkpoints_iterator(str(tmp_path / "none"), timeout=0)) == []


# -- checkpoint readers ---------------------------------------------------------------------------
SAVED = {
    "dense/kernel": np.arange(6, dtype=np.float32).reshape(2, 3),
    "dense/bias": np.array([0.5, -1.5, 2.0]),
    "step": np.int64(42),
    "words": np.array([b"a", b"bc"], dtype=object),
}


def _save_all(lib, prefix):
    with lib.Graph().as_default() as graph:
        for name, value in SAVED.items():
            lib.Variable(value, name=name)
        os.makedirs(os.path.dirname(prefix))
        with lib.Session(graph=graph) as sess:
            sess.run(lib.global_variables_initializer())
            return lib.train.Saver().save(sess, prefix, global_step=7)


@pytest.mark.tf
def test_checkpoint_readers_give_what_was_saved_as_tensorflow(tf1, tmp_path):
    ours = _save_all(tf, str(tmp_path / "ours" / "model"))
    theirs = _save_all(tf1, str(tmp_path / "theirs" / "model"))
    assert ours.endswith("model-7")
    expected = [(name, list(np.shape(SAVED[name]))) for name in sorted(SAVED)]
    for lib, path in ((tf, ours), (tf1, theirs)):
        directory = os.path.dirname(path)
        assert lib.train.list_variables(directory) == lib.train.list_variables(path) == expected
        for name, value in SAVED.items():
            got = lib.train.load_variable(directory, name)
            assert got.dtype == np.asarray(value).dtype and np.array_equal(got, value)
        assert np.array_equal(lib.train.load_variable(path, "dense/bias:0"), SAVED["dense/bias"])
        for reader in (lib.train.load_checkpoint(directory), lib.train.NewCheckpointReader(path)):
            assert reader.has_tensor("step") and not reader.has_tensor("nope")
            assert reader.get_variable_to_shape_map() == dict(expected)
            dtypes = {k: v.name for k, v in reader.get_variable_to_dtype_map().items()}
            assert dtypes == {
                "dense/kernel": "float32",
                "dense/bias": "float64",
                "step": "int64",
                "words": "string",
            }
            assert reader.get_tensor("step") == 42
            with pytest.raises(lib.errors.NotFoundError, match="nope"):
                reader.get_tensor("nope")
        with pytest.raises(lib.errors.NotFoundError):
            lib.train.NewCheckpointReader(str(tmp_path / "missing"))
        with pytest.raises(ValueError, match="Couldn't find 'checkpoint' file"):
            lib.train.load_checkpoint(str(tmp_path))


# -- write_graph, summary_iterator ----------------------------------------------------------------
@pytest.mark.tf
@pytest.mark.parametrize("as_text", [True, False])
def test_write_graph_writes_a_graph_def_tensorflow_reads(tf1, tmp_path, as_text):
    from google.protobuf import text_format

    with tf.Graph().as_default() as graph:
        x = tf.placeholder(tf.float32, [None, 3], name="x")
        w = tf.Variable(np.ones((3, 2), np.float32), name="w")
        tf.nn.relu(tf.matmul(x, w), name="y")
    name = "graph.pbtxt" if as_text else "graph.pb"
    path = tf.train.write_graph(graph, str(tmp_path / "new_dir"), name, as_text=as_text)
    assert path == str(tmp_path / "new_dir" / name)
    assert tf.train.write_graph(graph.as_graph_def(), str(tmp_path), name, as_text=as_text)
    for p in (path, str(tmp_path / name)):
        graph_def = tf1.GraphDef()
        with open(p, "rb") as f:
            if as_text:
                text_format.Parse(f.read().decode(), graph_def)
            else:
                graph_def.ParseFromString(f.read())
        ops = {n.name: n.op for n in graph_def.node}
        assert {ops["x"], ops["w"], ops["MatMul"], ops["y"]} == {
            "Placeholder",
            "VariableV2",
            "MatMul",
            "Relu",
        }
        assert list(graph_def.node[-1].input) == ["MatMul"]
    assert os.listdir(tmp_path / "new_dir") == [name]  # (no temporary file left)


@pytest.mark.tf
def test_summary_iterator_reads_nbdist_and_tensorflow_event_files(tf1, tmp_path):
    paths = []
    for lib in (tf, tf1):
        with lib.Graph().as_default() as graph:
            v = lib.placeholder(lib.float32, [])
            summary = lib.summary.scalar("loss", v)
            writer = lib.summary.FileWriter(str(tmp_path / lib.__name__), graph)
            with lib.Session(graph=graph) as sess:
                for step in range(3):
                    writer.add_summary(sess.run(summary, {v: step * 0.5}), step)
            writer.close()
        (name,) = os.listdir(tmp_path / lib.__name__)
        paths.append(str(tmp_path / lib.__name__ / name))
    for path in paths:
        events = list(tf.train.summary_iterator(path))
        assert events[0].file_version == "brain.Event:2"
        assert any(e.HasField("graph_def") for e in events)
        scalars = [(e.step, v.tag, v.simple_value) for e in events for v in e.summary.value]
        assert scalars == [(0, "loss", 0.0), (1, "loss", 0.5), (2, "loss", 1.0)]
        theirs = [e.SerializeToString() for e in tf1.train.summary_iterator(path)]
        assert [e.SerializeToString() for e in events] == theirs
