"""Parity with real TensorFlow: the same TF 1.x programs give the same numbers (float64, 1e-6).

Each program is a function of the library (``nbdist`` or ``tensorflow.compat.v1``), built
in a fresh graph and run in a session of that library. Initial values are constants
(the libraries' random generators differ). TensorFlow is imported once, by a
module-scoped fixture; the file is skipped when it is not installed.
"""

import numpy as np
import pytest

import nbdist as tf

pytestmark = pytest.mark.tf

RNG = np.random.default_rng(42)
X = RNG.normal(size=(6, 4))
W1 = RNG.normal(scale=0.5, size=(4, 5))
B1 = RNG.normal(scale=0.1, size=5)
W2 = RNG.normal(scale=0.5, size=(5, 3))
B2 = RNG.normal(scale=0.1, size=3)
LABELS = np.array([0, 2, 1, 1, 0, 2])
ONE_HOT = np.eye(3)[LABELS]
POSITIVE = np.abs(X) + 0.5


def _run(lib, build, steps=0):
    """Builds ``build(lib) -> (fetches, train_op)`` in a new graph; runs `steps` train steps, then fetches."""
    graph = lib.Graph()
    with graph.as_default():
        fetches, train_op = build(lib)
        with lib.Session(graph=graph) as sess:
            sess.run(lib.global_variables_initializer())
            for _ in range(steps):
                sess.run(train_op)
            return sess.run(fetches)


def _assert_parity(tf1, build, steps=0):
    ours = _run(tf, build, steps)
    theirs = _run(tf1, build, steps)
    assert len(ours) == len(theirs)
    for i, (a, b) in enumerate(zip(ours, theirs)):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6, err_msg=f"fetch {i}")


# -- forward values ---------------------------------------------------------------------------------
FORWARD = {
    "matmul": lambda t: t.matmul(X, W1),
    "matmul_transposed": lambda t: t.matmul(W1, X, transpose_a=True, transpose_b=True),
    "add_broadcast": lambda t: t.constant(X) + B1[:4],
    "relu": lambda t: t.nn.relu(X),
    "sigmoid": lambda t: t.sigmoid(X),
    "tanh": lambda t: t.tanh(X),
    "cos_sin_ceil": lambda t: t.cos(X) + t.sin(X) * t.ceil(X),
    "exp_log": lambda t: t.log(t.exp(X) + 1.0),
    "sqrt_square": lambda t: t.sqrt(t.square(X) + 1.0),
    "pow": lambda t: t.pow(t.constant(POSITIVE), 1.5),
    "maximum": lambda t: t.maximum(t.constant(X), 0.1),
    "softplus": lambda t: t.nn.softplus(X),
    "softmax": lambda t: t.nn.softmax(X),
    "log_softmax": lambda t: t.nn.log_softmax(X),
    "bias_add": lambda t: t.nn.bias_add(X, B1[:4]),
    "reduce_sum_axis": lambda t: t.reduce_sum(X, axis=1),
    "reduce_mean_keepdims": lambda t: t.reduce_mean(X, axis=0, keepdims=True),
    "reduce_max": lambda t: t.reduce_max(X, axis=1),
    "reduce_logsumexp": lambda t: t.reduce_logsumexp(X, axis=1),
    "l2_loss": lambda t: t.nn.l2_loss(X),
    "softmax_xent_v2": lambda t: t.nn.softmax_cross_entropy_with_logits_v2(labels=ONE_HOT, logits=X[:, :3]),
    "sparse_softmax_xent": lambda t: t.nn.sparse_softmax_cross_entropy_with_logits(
        labels=LABELS, logits=X[:, :3]
    ),
    "sigmoid_xent": lambda t: t.nn.sigmoid_cross_entropy_with_logits(labels=(X > 0) * 1.0, logits=X),
    "argmax": lambda t: t.argmax(X, 1),
    "transpose_reshape": lambda t: t.reshape(t.transpose(X), [2, -1]),
    "concat": lambda t: t.concat([X, X * 2.0], axis=1),
}


@pytest.mark.parametrize("name", sorted(FORWARD))
def test_forward_values_match_tensorflow(tf1, name):
    _assert_parity(tf1, lambda t: ([FORWARD[name](t)], None))


# -- gradients of a small net ----------------------------------------------------------------------------
def _net(t):
    """Two dense layers (tanh, then logits), softmax cross-entropy, mean: float64 variables."""
    w1, b1 = t.Variable(W1, name="w1"), t.Variable(B1, name="b1")
    w2, b2 = t.Variable(W2, name="w2"), t.Variable(B2, name="b2")
    x = t.constant(X)
    hidden = t.tanh(t.matmul(x, w1) + b1)
    logits = t.matmul(hidden, w2) + b2
    loss = t.reduce_mean(t.nn.softmax_cross_entropy_with_logits_v2(labels=ONE_HOT, logits=logits))
    return loss, [w1, b1, w2, b2], x


def test_gradients_of_a_small_net_match_tensorflow(tf1):
    def build(t):
        loss, params, x = _net(t)
        return [loss, *t.gradients(loss, [*params, x])], None

    _assert_parity(tf1, build)


def test_gradients_through_relu_sigmoid_and_squared_loss_match_tensorflow(tf1):
    def build(t):
        w = t.Variable(W1, name="w")
        x = t.constant(X)
        hidden = t.nn.relu(t.matmul(x, w))
        out = t.sigmoid(t.reduce_sum(hidden, axis=1))
        loss = t.reduce_sum(t.square(out - 0.5)) + 0.01 * t.nn.l2_loss(w)
        return t.gradients(loss, [w, x]), None

    _assert_parity(tf1, build)


def test_relu_gradient_of_non_finite_gradients_matches_tensorflow(tf1):
    def build(t):
        x = t.constant(np.float32([[-1.0, 0.0, 2.0], [3.0, -4.0, 0.5]]))
        upstream = t.constant(np.float32([[np.inf, 5.0, np.nan], [-2.0, np.nan, -np.inf]]))
        return t.gradients(t.nn.relu(x), x, grad_ys=upstream), None

    np.testing.assert_array_equal(_run(tf, build)[0], _run(tf1, build)[0])


# -- optimizers: five steps ------------------------------------------------------------------------------
def _f64(t, value):
    return t.constant(value, t.float64)


# Hyper-parameters as float64 tensors, so TensorFlow too computes everything in float64.
OPTIMIZERS = {
    "gradient_descent": lambda t: t.train.GradientDescentOptimizer(_f64(t, 0.5)),
    "momentum": lambda t: t.train.MomentumOptimizer(_f64(t, 0.2), _f64(t, 0.9)),
    "nesterov": lambda t: t.train.MomentumOptimizer(_f64(t, 0.2), _f64(t, 0.9), use_nesterov=True),
    "adam": lambda t: t.train.AdamOptimizer(_f64(t, 0.05), _f64(t, 0.9), _f64(t, 0.999), _f64(t, 1e-8)),
    "adagrad": lambda t: t.train.AdagradOptimizer(_f64(t, 0.3), initial_accumulator_value=0.2),
    "rmsprop": lambda t: t.train.RMSPropOptimizer(_f64(t, 0.05), _f64(t, 0.9), _f64(t, 0.5), _f64(t, 1e-6)),
    "rmsprop_centered": lambda t: t.train.RMSPropOptimizer(
        _f64(t, 0.05), _f64(t, 0.8), _f64(t, 0.0), _f64(t, 1e-6), centered=True
    ),
}


def _train_net(make_optimizer):
    def build(t):
        loss, params, _ = _net(t)
        optimizer = make_optimizer(t)
        step = t.train.get_or_create_global_step()
        train_op = optimizer.minimize(loss, global_step=step)
        slots = [optimizer.get_slot(p, s) for s in optimizer.get_slot_names() for p in params]
        return [loss, step, *params, *slots], train_op

    return build


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_five_optimizer_steps_match_tensorflow(tf1, name):
    _assert_parity(tf1, _train_net(OPTIMIZERS[name]), steps=5)


def test_adam_with_python_number_hyper_parameters_is_close_to_tensorflow(tf1):
    # TF 1.x makes Python numbers float32 tensors (and float32 beta powers) and casts them to
    # float64; nbdist keeps them exact in the variable's dtype. After five steps the two differ
    # by ~1e-6 relative (1 - float32(0.999) is off by 1.3e-5), hence the looser tolerance.
    build = _train_net(lambda t: t.train.AdamOptimizer(0.05))
    for a, b in zip(_run(tf, build, 5), _run(tf1, build, 5)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    "make",
    [
        lambda t: t.train.AdamOptimizer(),
        lambda t: t.train.AdagradOptimizer(0.1),
        lambda t: t.train.RMSPropOptimizer(0.1, centered=True),
    ],
)
def test_optimizer_state_has_tensorflows_names(tf1, make):
    def names(t):
        graph = t.Graph()
        with graph.as_default():
            loss, _, _ = _net(t)
            optimizer = make(t)
            optimizer.minimize(loss)
            return sorted(v.op.name for v in optimizer.variables()), optimizer.get_slot_names()

    assert names(tf) == names(tf1)


# -- float32, MNIST-shaped: the kernels of a tutorial's training step -------------------------------
MNIST = np.random.default_rng(28)
MNIST_X = MNIST.random((100, 784), dtype=np.float32)
MNIST_LABELS = MNIST.integers(0, 10, 100).astype(np.int32)
MNIST_PARAMS = [
    (MNIST.standard_normal(shape) * scale).astype(np.float32)
    for shape, scale in (((784, 100), 0.05), ((100,), 0.01), ((100, 10), 0.1), ((10,), 0.01))
]
MNIST_OPTIMIZERS = {
    "adam": lambda t: t.train.AdamOptimizer(1e-3),
    "momentum": lambda t: t.train.MomentumOptimizer(0.05, 0.9),
    "nesterov": lambda t: t.train.MomentumOptimizer(0.05, 0.9, use_nesterov=True),
    "gradient_descent": lambda t: t.train.GradientDescentOptimizer(0.5),
}


def _mnist_mlp(make_optimizer, sparse):
    """784 -> 100 (ReLU) -> 10 in float32, batch 100: `+ b` and dense labels, or `bias_add`
    and sparse labels; the loss, parameters and slots after the steps."""

    def build(t):
        w1, b1, w2, b2 = (t.Variable(p, name=n) for p, n in zip(MNIST_PARAMS, ("w1", "b1", "w2", "b2")))
        x = t.constant(MNIST_X)
        if sparse:
            hidden = t.nn.relu(t.nn.bias_add(t.matmul(x, w1), b1))
            logits = t.nn.bias_add(t.matmul(hidden, w2), b2)
            xent = t.nn.sparse_softmax_cross_entropy_with_logits(labels=MNIST_LABELS, logits=logits)
        else:
            logits = t.matmul(t.nn.relu(t.matmul(x, w1) + b1), w2) + b2
            labels = np.eye(10, dtype=np.float32)[MNIST_LABELS]
            xent = t.nn.softmax_cross_entropy_with_logits(labels=labels, logits=logits)
        loss = t.reduce_mean(xent)
        optimizer = make_optimizer(t)
        train_op = optimizer.minimize(loss)
        params = [w1, b1, w2, b2]
        slots = [optimizer.get_slot(p, s) for s in optimizer.get_slot_names() for p in params]
        return [loss, *params, *slots], train_op

    return build


@pytest.mark.parametrize("sparse", [False, True], ids=["dense_labels", "sparse_labels"])
@pytest.mark.parametrize("name", sorted(MNIST_OPTIMIZERS))
def test_float32_mnist_mlp_steps_match_tensorflow(tf1, name, sparse):
    build = _mnist_mlp(MNIST_OPTIMIZERS[name], sparse)
    ours, theirs = _run(tf, build, steps=5), _run(tf1, build, steps=5)
    for i, (a, b) in enumerate(zip(ours, theirs, strict=True)):
        assert a.dtype == b.dtype == np.float32
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, err_msg=f"fetch {i}")


def _division(t):
    i, j = t.constant(np.array([7, -7, 3], np.int32)), t.constant(np.array([2, 2, 4], np.int32))
    small = t.constant(np.array([7, 3], np.int8))
    return [t.divide(i, j), t.truediv(i, j), i / j, i // j, t.floordiv(i, j), small / small], t.no_op()


def test_integer_division_gives_floats_like_tensorflow(tf1):
    ours, theirs = _run(tf, _division), _run(tf1, _division)
    assert [a.dtype for a in ours] == [b.dtype for b in theirs]
    for a, b in zip(ours, theirs):
        np.testing.assert_array_equal(a, b)


def test_colocation_groups_of_nested_scopes_match_tensorflow(tf1):
    def groups(t):
        g = t.Graph()
        with g.as_default():
            a, b = t.constant(1.0, name="a"), t.constant(2.0, name="b")
            with t.colocate_with(a):
                with t.colocate_with(b):
                    c = t.identity(a, name="c")
                with t.colocate_with(b, ignore_existing=True):
                    d = t.identity(a, name="d")
                e = t.identity(a, name="e")
        return [
            sorted(x if isinstance(x, str) else x.decode() for x in op.colocation_groups())
            for op in (c.op, d.op, e.op)
        ]

    assert groups(tf) == groups(tf1) == [["loc:@a", "loc:@b"], ["loc:@b"], ["loc:@a"]]
