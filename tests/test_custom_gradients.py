"""TF 1.x's gradient machinery (nbdist/ops/custom_gradient_ops.py, gradients.py's options,
nbdist/platform/gradient_checker.py) against tf.compat.v1: RegisterGradient with
gradient_override_map, NotDifferentiable, AggregationMethod, UnconnectedGradients,
custom_gradient, grad_pass_through, recompute_grad, hessians, tf.test.compute_gradient."""

import itertools

import numpy as np
import pytest

import nbdist as tf

_RNG = np.random.default_rng(32)
X = _RNG.standard_normal(3)
M = _RNG.standard_normal((2, 3))
_names = itertools.count()


def _unique(prefix):
    """A gradient name not registered yet in this process (both registries are global)."""
    return f"NbdistTest{prefix}{next(_names)}"


def _both(tf1, build):
    """`build(t)`'s fetches run under nbdist and TensorFlow."""
    out = []
    for lib in (tf, tf1):
        with lib.Graph().as_default(), lib.Session() as sess:
            out.append(sess.run(build(lib)))
    return out


def _same(ours, theirs):
    for a, b in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-12)


def test_register_gradient_overrides_an_op_in_the_map(tf1):
    def build(t):
        name = _unique("Square")

        @t.RegisterGradient(name)
        def _grad(op, grad):
            return grad * 5.0 * op.inputs[0]  # (one tensor for one input, as TF takes it)

        x = t.constant(X)
        with t.get_default_graph().gradient_override_map({"Square": name}):
            y = t.square(x)
        z = t.square(x)
        return [t.gradients(y, x)[0], t.gradients(z, x)[0], t.gradients(y + z, x)[0]]

    ours, theirs = _both(tf1, build)
    _same(ours, theirs)
    np.testing.assert_allclose(ours[0], 5 * X)


def test_register_gradient_refuses_a_registered_name_as_tensorflow(tf1):
    for lib in (tf, tf1):
        with pytest.raises(KeyError, match="Registering two gradient with name 'Square'"):
            lib.RegisterGradient("Square")(lambda op, grad: grad)
        with pytest.raises(TypeError, match="op_type must be a string"):
            lib.RegisterGradient(3)
        with pytest.raises(KeyError, match="Registering two gradient"):
            lib.NotDifferentiable("MatMul")


@pytest.mark.parametrize("spelling", ["NotDifferentiable", "NoGradient", "no_gradient"])
def test_not_differentiable_types_pass_no_gradient(tf1, spelling):
    def build(t):
        name = _unique(spelling)
        if spelling == "NotDifferentiable":
            t.NotDifferentiable(name)
        elif spelling == "NoGradient":
            t.NoGradient(name)
        else:
            t.no_gradient(name)
        x = t.constant(X)
        with t.get_default_graph().gradient_override_map({"Square": name}):
            y = t.square(x)
        grads = t.gradients(y + x, x) + t.gradients(y, x, unconnected_gradients="zero")
        assert t.gradients(y, x) == [None]
        return grads

    ours, theirs = _both(tf1, build)
    _same(ours, theirs)
    np.testing.assert_array_equal(ours[1], np.zeros(3))


def test_gradient_override_map_checks_its_argument_and_nests(tf1):
    for lib in (tf, tf1):
        with lib.Graph().as_default() as g:
            with pytest.raises(TypeError, match="mapping strings to strings"):  # noqa: SIM117
                with g.gradient_override_map({"Square": 3}):
                    pass
            with g.gradient_override_map({"Square": "A"}), g.gradient_override_map({"Exp": "B"}):
                y = lib.square(lib.exp(lib.constant(1.0)))
            z = lib.square(lib.constant(1.0))
            types = [y.op.get_attr("_gradient_op_type"), y.op.inputs[0].op.get_attr("_gradient_op_type")]
            assert [t.decode() if isinstance(t, bytes) else t for t in types] == ["A", "B"]
            assert "_gradient_op_type" not in z.op.node_def.attr if lib is tf1 else not z.op.attrs


def test_aggregation_methods_give_the_same_sums_as_tensorflow(tf1):
    def build(t):
        x = t.constant(M)
        y = t.reduce_sum(t.sin(x) * x + t.exp(x) * x + x * x)
        methods = [
            t.AggregationMethod.ADD_N,
            t.AggregationMethod.DEFAULT,
            t.AggregationMethod.EXPERIMENTAL_TREE,
            t.AggregationMethod.EXPERIMENTAL_ACCUMULATE_N,
        ]
        return [t.gradients(y, x, aggregation_method=m)[0] for m in methods]

    ours, theirs = _both(tf1, build)
    _same(ours, theirs)
    assert tf.AggregationMethod.EXPERIMENTAL_TREE == tf1.AggregationMethod.EXPERIMENTAL_TREE == 1
    for lib in (tf, tf1):
        with lib.Graph().as_default():
            x = lib.constant(1.0)
            with pytest.raises(ValueError, match=r"Invalid `aggregation_method` specified 7\. Accepted"):
                lib.gradients(x * x, x, aggregation_method=7)


def test_unconnected_gradients_as_tensorflow(tf1):
    def build(t):
        x, z = t.constant(M), t.constant([1, 2])
        w = t.placeholder_with_default(X, [None])
        y = t.reduce_sum(x * 2.0)
        zero = t.gradients(y, [x, z, w], unconnected_gradients=t.UnconnectedGradients.ZERO)
        assert t.gradients(y, [x, w], unconnected_gradients="none")[1] is None
        assert zero[1].dtype == t.int32
        return zero + t.gradients(y, w, unconnected_gradients="zero")

    ours, theirs = _both(tf1, build)
    _same(ours, theirs)
    assert tf.UnconnectedGradients.ZERO.value == tf1.UnconnectedGradients.ZERO.value == "zero"
    for lib in (tf, tf1):
        with lib.Graph().as_default():
            x = lib.constant(1.0)
            with pytest.raises(ValueError, match="Unknown value for unconnected_gradients: 'foo'"):
                lib.gradients(x * x, x, unconnected_gradients="foo")


def _clipped(t):
    @t.custom_gradient
    def clip_grad(x):
        def grad(dy):
            return t.clip_by_value(dy, -0.5, 0.5)

        return t.identity(x), grad

    return clip_grad


def test_custom_gradient_as_tensorflow(tf1):
    def build(t):
        x = t.constant(X)
        y = _clipped(t)(x) * 3.0

        @t.custom_gradient
        def two(a, b):
            return (a * b, a + b), lambda d1, d2: (d1 * 2.0, d2 * 3.0)

        p, q = two(x, t.constant(X[::-1]))
        assert p.op.type == "IdentityN"
        return [t.gradients(y, x)[0], *t.gradients(t.reduce_sum(p) + t.reduce_sum(q), [x])]

    ours, theirs = _both(tf1, build)
    _same(ours, theirs)
    np.testing.assert_array_equal(ours[0], [0.5, 0.5, 0.5])


def test_custom_gradient_with_variables_as_tensorflow(tf1):
    def build(t):
        v = t.Variable(np.float64(2.0), name="v")

        @t.custom_gradient
        def scaled(x):
            def grad(dy, variables=None):
                return dy * 10.0, [t.reduce_sum(dy) * 100.0 for _ in variables]

            return x * v, grad

        y = scaled(t.constant(X))
        t.get_default_session().run(v.initializer)
        return [y, *t.gradients(y, [y.op.inputs[1], v])]

    ours, theirs = _both(tf1, build)
    _same(ours, theirs)
    for lib in (tf, tf1):
        with lib.Graph().as_default():
            v = lib.Variable(np.float64(2.0))

            @lib.custom_gradient
            def bad(x, v=v, lib=lib):
                return x * v, lambda dy: dy

            with pytest.raises(TypeError, match="grad_fn must accept keyword argument 'variables'"):
                bad(lib.constant(X))


def test_grad_pass_through_and_recompute_grad_as_tensorflow(tf1):
    def build(t):
        x = t.constant(X * 3)
        rounded = t.grad_pass_through(t.round)(x)
        y = t.reduce_sum(rounded * rounded)
        f = t.recompute_grad(lambda a, b: t.tanh(a) * b)
        z = t.reduce_sum(f(x, t.constant(X)) ** 2)
        return [rounded, t.gradients(y, x)[0], z, *t.gradients(z, [x])]

    ours, theirs = _both(tf1, build)
    _same(ours, theirs)
    np.testing.assert_allclose(ours[1], 2 * np.round(X * 3))


def test_hessians_as_tensorflow(tf1):
    def build(t):
        x, m = t.constant(X), t.constant(M)
        y = t.reduce_sum(x**3) + x[0] * x[1] + t.reduce_sum(t.sin(m) * m)
        return t.hessians(y, [x, m]) + t.hessians(t.reduce_sum(x * x), x, aggregation_method=0)

    ours, theirs = _both(tf1, build)
    _same(ours, theirs)
    assert ours[0].shape == (3, 3) and ours[1].shape == (2, 3, 2, 3)


def test_hessians_needs_a_known_size():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float64, [None])
        with pytest.raises(ValueError, match="not fully known"):
            tf.hessians(tf.reduce_sum(x * x), x)


def _jacobians(t, x_init):
    with t.Graph().as_default(), t.Session():
        x = t.placeholder(t.float64, [2, 3])
        w = t.Variable(np.arange(3.0), name="w")
        y = t.tanh(x) * w
        pair = t.test.compute_gradient(
            x, [2, 3], y, [2, 3], x_init_value=x_init, init_targets=[w.initializer]
        )
        v = t.constant(X)
        c = t.constant(x_init)  # (each x of a list is fed alone: the others must have values)
        both = t.test.compute_gradient(
            [c, v], [[2, 3], [3]], t.reduce_sum(c * v, 1), [2], x_init_value=[x_init, X]
        )
        error = t.test.compute_gradient_error(v, [3], v**3, [3], x_init_value=X, delta=1e-4)
        return pair, both, error


def test_compute_gradient_as_tensorflow(tf1):
    (pair, both, error), (their_pair, their_both, their_error) = _jacobians(tf, M), _jacobians(tf1, M)
    assert pair[0].shape == (6, 6) and pair[0].dtype == np.float64
    for ours, theirs in zip(
        [*pair, *both[0], *both[1]], [*their_pair, *their_both[0], *their_both[1]], strict=True
    ):
        np.testing.assert_allclose(ours, theirs, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(error, their_error, atol=1e-12)
    assert error < 1e-6


def test_compute_gradient_needs_a_session():
    with tf.Graph().as_default():
        x = tf.constant(X)
        with pytest.raises(ValueError, match="default session"):
            tf.test.compute_gradient(x, [3], x * 2.0, [3])
