"""`tf.nn`'s activations (relu6, elu, selu, softsign, crelu, swish / silu, leaky_relu): values and
gradients against real TensorFlow, including 0, the kink at 6, large and tiny inputs."""

import numpy as np
import pytest

import nbdist as tf
from local_run import run_in_session

X = np.array([[-100.0, -6.5, -1.0, -1e-3, 0.0], [1e-3, 0.5, 5.999, 6.0, 100.0]], np.float32)
X64 = np.random.default_rng(7).standard_normal((3, 4)) * 4

ACTIVATIONS = {
    "relu6": lambda t, x: t.nn.relu6(x),
    "elu": lambda t, x: t.nn.elu(x),
    "selu": lambda t, x: t.nn.selu(x),
    "softsign": lambda t, x: t.nn.softsign(x),
    "crelu": lambda t, x: t.nn.crelu(x),
    "crelu_axis0": lambda t, x: t.nn.crelu(x, axis=0),
    "swish": lambda t, x: t.nn.swish(x),
    "silu_beta": lambda t, x: t.nn.silu(x, beta=0.5),
    "leaky_relu": lambda t, x: t.nn.leaky_relu(x, alpha=0.1),
}


def _run(lib, fn, value):
    with lib.Graph().as_default() as graph:
        x = lib.constant(value)
        y = fn(lib, x)
        c = lib.constant(np.random.default_rng(1).standard_normal(y.shape.as_list()).astype(value.dtype))
        (g,) = lib.gradients(lib.reduce_sum(y * c), x)
        with lib.Session(graph=graph) as sess:
            return sess.run([y, g])


@pytest.mark.tf
@pytest.mark.parametrize("value", [X, X64], ids=["edges_float32", "random_float64"])
@pytest.mark.parametrize("name", ACTIVATIONS)
def test_activation_and_gradient_match_tensorflow(tf1, name, value):
    ours, theirs = _run(tf, ACTIVATIONS[name], value), _run(tf1, ACTIVATIONS[name], value)
    for a, b, what in zip(ours, theirs, ("value", "gradient"), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7, err_msg=f"{name} {what}")


def test_relu6_is_named_as_in_tensorflow(graph):
    assert tf.nn.relu6(X).op.name == "Relu6"
    assert tf.nn.relu6(X).op.type == "Relu6"


def test_elu_of_a_huge_input_does_not_overflow(graph):
    out = run_in_session(tf.nn.elu(tf.constant([1e4, -1e4], tf.float32)))
    np.testing.assert_array_equal(out, [1e4, -1.0])


def test_crelu_doubles_the_channels(graph):
    assert tf.nn.crelu(tf.zeros([2, 3, 5])).shape.as_list() == [2, 3, 10]


@pytest.mark.tf
def test_the_new_ops_export_to_tensorflow_and_run_alike(tf1, graph):
    """Relu6, Elu, Selu, Softsign, TopKV2, InTopKV2, Cos, Sin, Ceil (and their gradients) go
    through `to_tensorflow` as TF's own ops."""
    from nbdist.export import to_tensorflow

    x = tf.placeholder(tf.float32, [2, 5], name="x")
    acts = tf.nn.relu6(x * 3.0) + tf.nn.elu(x) + tf.nn.selu(x) + tf.nn.softsign(x)
    values, indices = tf.nn.top_k(acts + tf.cos(x) * tf.sin(x), 3)
    hits = tf.nn.in_top_k(acts, tf.cast(tf.ceil(tf.abs(x[:, 0])), tf.int32), 2)
    (grad,) = tf.gradients(tf.reduce_sum(values), x)
    fetches = [values, indices, hits, grad]
    with tf.Session() as sess:
        ours = sess.run(fetches, {x: X})
        exported = to_tensorflow(session=sess)
    with tf1.Session(graph=exported.graph) as tf_sess:
        theirs = tf_sess.run([exported[t.name] for t in fetches], {exported[x.name]: X})
    for a, b in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)
