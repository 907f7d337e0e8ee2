"""`tf.layers` (nbdist/layers.py, ops/layers_*.py): TF's variable names and scopes, reuse, the
training switch, UPDATE_OPS and REGULARIZATION_LOSSES, and values, gradients and batch norm's
moving averages equal to real TF's `tf.compat.v1.layers` given the same variable values.

The parity tests share one model built once per module in each library (small shapes, CI time).
"""

import warnings

import numpy as np
import pytest

import nbdist as tf

pytestmark = pytest.mark.usefixtures("graph")

X = np.random.RandomState(0).randn(4, 6, 6, 2).astype(np.float32)


def _model(lib, x, training=True, dropout_training=False):
    """A small CNN touching every layer: names and regularizers as learners' programs write them."""
    layers = lib.layers
    h = layers.conv2d(
        x, 3, 3, padding="same", activation=lib.nn.relu, kernel_regularizer=lambda w: 0.01 * lib.nn.l2_loss(w)
    )
    h = layers.batch_normalization(h, training=training)
    h = layers.max_pooling2d(h, 2, 2)
    h = layers.conv2d(h, 4, (2, 2), strides=1)
    h = layers.average_pooling2d(h, 2, 1, padding="same")
    h = layers.flatten(h)
    h = layers.dropout(h, 0.3, training=dropout_training)
    h = layers.dense(h, 5, activation=lib.nn.relu, bias_regularizer=lib.reduce_sum)
    h = layers.batch_normalization(h, training=training)
    return layers.dense(h, 2, name="out")


def _run(lib, values=None, switch=None):
    """Builds `_model` in a new graph of `lib`; returns names, outputs, gradients, variables after
    one run of the updates (variables loaded from `values` when given). With `switch` (True or
    False) the layers' `training` is a bool tensor fed that value (a ``tf.cond`` in each layer)."""
    graph = lib.Graph()
    with graph.as_default(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # TF's tf.layers deprecation warnings
        # The same initial values every run: the two batch norms (of 4 examples) amplify float32
        # rounding, and some unseeded draws took a difference past the tolerance.
        lib.set_random_seed(0)
        x = lib.placeholder(lib.float32, [None, 6, 6, 2])
        feeds = {x: X}
        if switch is None:
            y = _model(lib, x)
        else:
            training = lib.placeholder_with_default(False, [])
            feeds[training] = switch
            y = _model(lib, x, training, dropout_training=training if not switch else False)
        loss = lib.reduce_sum(y * y) + lib.losses.get_regularization_loss()
        variables = lib.global_variables()
        grads = lib.gradients(loss, lib.trainable_variables())
        updates = lib.get_collection(lib.GraphKeys.UPDATE_OPS)
        regs = lib.get_collection(lib.GraphKeys.REGULARIZATION_LOSSES)
        with lib.Session() as sess:
            sess.run(lib.global_variables_initializer())
            for v, value in zip(variables, values or (), strict=False):
                v.load(value, sess)
            before = sess.run(variables)
            outputs = sess.run([y, loss, *regs, *grads], feeds)
            sess.run(updates, feeds)
            after = sess.run(variables)
    return {
        "variables": [(v.name, v.shape.as_list()) for v in variables],
        "updates": [u.name for u in updates],
        "regs": [r.name for r in regs],
        "output": y.name,
        "before": before,
        "outputs": outputs,
        "after": after,
    }


@pytest.fixture(scope="module")
def parity(tf1):
    theirs = _run(tf1)
    ours = _run(tf, theirs["before"])
    return ours, theirs


@pytest.mark.tf
def test_variable_names_and_shapes_match_tf(parity):
    ours, theirs = parity
    assert ours["variables"] == theirs["variables"]
    assert [n for n, _ in ours["variables"]][:6] == [
        "conv2d/kernel:0",
        "conv2d/bias:0",
        "batch_normalization/gamma:0",
        "batch_normalization/beta:0",
        "batch_normalization/moving_mean:0",
        "batch_normalization/moving_variance:0",
    ]


@pytest.mark.tf
def test_update_ops_and_regularization_losses_named_as_tf(parity):
    ours, theirs = parity
    assert ours["updates"] == theirs["updates"]
    assert ours["output"] == theirs["output"] == "out/BiasAdd:0"
    # TF's `*` on a ref variable is `mul`; nbdist's operator is `Mul`: compare up to case.
    assert [r.lower() for r in ours["regs"]] == [r.lower() for r in theirs["regs"]]


@pytest.mark.tf
def test_outputs_gradients_and_regularization_match_tf(parity):
    ours, theirs = parity
    assert len(ours["outputs"]) == len(theirs["outputs"])
    for a, b in zip(ours["outputs"], theirs["outputs"], strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4)


@pytest.mark.tf
def test_batch_norm_moving_average_updates_match_tf(parity):
    """The 4-D layer (TF's fused kernel: Bessel-corrected update) and the 2-D one (plain)."""
    ours, theirs = parity
    for a, b in zip(ours["after"], theirs["after"], strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    names = [n for n, _ in ours["variables"]]
    moved = names.index("batch_normalization/moving_variance:0")
    assert not np.allclose(ours["after"][moved], ours["before"][moved])


@pytest.mark.tf
def test_batch_norm_inference_matches_tf(tf1):
    x = np.random.RandomState(1).randn(5, 3).astype(np.float32)
    stats = [np.float32([0.5, -1.0, 2.0]), np.float32([0.3, 2.0, 0.7])]
    results = []
    for lib in (tf1, tf):
        with lib.Graph().as_default(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            y = lib.layers.batch_normalization(lib.constant(x), training=False, epsilon=0.01)
            with lib.Session() as sess:
                sess.run(lib.global_variables_initializer())
                for v, value in zip(lib.global_variables()[2:], stats, strict=True):
                    v.load(value, sess)
                results.append(sess.run(y))
            assert not lib.get_collection(lib.GraphKeys.UPDATE_OPS)
    np.testing.assert_allclose(results[1], results[0], rtol=1e-5, atol=1e-6)


def test_unique_scopes_reuse_and_names():
    x = tf.placeholder(tf.float32, [None, 3])
    tf.layers.dense(x, 2)
    tf.layers.dense(x, 2)
    shared = tf.layers.dense(x, 2, name="fc")
    again = tf.layers.dense(x, 2, name="fc", reuse=True)
    layer = tf.layers.Dense(4)
    layer(x)
    layer(x)  # a built layer reuses its variables
    names = [v.name for v in tf.global_variables()]
    assert names == [
        *("dense/kernel:0", "dense/bias:0", "dense_1/kernel:0", "dense_1/bias:0"),
        *("fc/kernel:0", "fc/bias:0", "dense_2/kernel:0", "dense_2/bias:0"),
    ]
    assert shared.op.name == "fc/BiasAdd" and again.op.name == "fc_1/BiasAdd"
    assert layer.kernel.name == "dense_2/kernel:0" and layer.name == "dense_3"  # Keras's uid, as TF


def test_existing_scope_without_reuse_is_refused():
    x = tf.placeholder(tf.float32, [None, 3])
    tf.layers.dense(x, 2, name="fc")
    with pytest.raises(ValueError, match="fc/kernel already exists"):
        tf.layers.dense(x, 2, name="fc")


def test_dense_defaults_glorot_kernel_and_zero_bias():
    layer = tf.layers.Dense(50, use_bias=True)
    layer(tf.zeros([1, 40]))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        kernel, bias = sess.run([layer.kernel, layer.bias])
    limit = np.sqrt(6.0 / (40 + 50))
    assert np.abs(kernel).max() <= limit and np.abs(kernel).max() > 0.8 * limit
    assert not bias.any()


def test_dropout_identity_when_not_training_and_keep_rate_when_training():
    x = tf.ones([200, 100])
    off = tf.layers.dropout(x, 0.3)
    on = tf.layers.dropout(x, 0.3, training=True, seed=1)
    with tf.Session() as sess:
        off_v, on_v = sess.run([off, on])
    np.testing.assert_array_equal(off_v, 1.0)
    kept = on_v != 0
    np.testing.assert_allclose(on_v[kept], 1 / 0.7, rtol=1e-6)
    assert abs(kept.mean() - 0.7) < 0.02


@pytest.mark.tf
@pytest.mark.parametrize("switch", [True, False])
def test_a_tensor_training_switch_matches_tf(tf1, switch):
    """``training=tf.placeholder_with_default(False, [])``: batch norm's statistics and its
    moving-average updates (and dropout) decided by a tf.cond at run time, fed either way."""
    theirs = _run(tf1, switch=switch)
    ours = _run(tf, theirs["before"], switch=switch)
    for a, b in zip([*ours["outputs"], *ours["after"]], [*theirs["outputs"], *theirs["after"]], strict=True):
        # float32 sums in another order (TF's Eigen threads split them as the machine's load
        # falls): a gradient near 0.02 beside ones near 8 once differed by 1.02e-4 in CI
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=3e-4)
    moved = [n for n, _ in ours["variables"]].index("batch_normalization/moving_variance:0")
    assert np.allclose(ours["after"][moved], ours["before"][moved]) == (not switch)


@pytest.mark.parametrize("layer", [tf.layers.dropout, tf.layers.batch_normalization])
def test_a_training_switch_must_be_a_scalar_bool(layer):
    with pytest.raises(TypeError, match="must be a scalar bool"):
        layer(tf.ones([4, 3]), training=tf.placeholder(tf.float32, []))


def test_layer_variables_and_weights_lists():
    bn = tf.layers.BatchNormalization()
    bn(tf.ones([2, 3]), training=True)
    assert [v.name for v in bn.trainable_variables] == [
        "batch_normalization/gamma:0",
        "batch_normalization/beta:0",
    ]
    assert [v.name for v in bn.non_trainable_variables] == [
        "batch_normalization/moving_mean:0",
        "batch_normalization/moving_variance:0",
    ]
    assert [v.name for v in tf.trainable_variables()] == [v.name for v in bn.trainable_variables]
    assert tf.get_collection(tf.GraphKeys.UPDATE_OPS) == bn.updates


def test_flatten_channels_first_and_pooling_shapes():
    x = tf.placeholder(tf.float32, [None, 2, 5, 4])
    assert tf.layers.flatten(x).shape.as_list() == [None, 40]
    pooled = tf.layers.max_pooling2d(x, 2, 2, padding="same", data_format="channels_first")
    assert pooled.shape.as_list() == [None, 2, 3, 2]
    conv = tf.layers.conv2d(x, 6, 3, data_format="channels_first", use_bias=False)
    assert conv.shape.as_list() == [None, 6, 3, 2]


def test_bad_padding_is_a_value_error():
    with pytest.raises(ValueError, match="padding must be 'valid' or 'same', got 'full'"):
        tf.layers.Conv2D(2, 3, padding="full")


def test_small_cnn_trains_with_gradient_descent():
    """The tutorial pattern: conv2d, max_pooling2d, flatten, dense, dropout, a softmax loss."""
    rng = np.random.RandomState(0)
    images = rng.rand(16, 8, 8, 1).astype(np.float32)
    labels = (images.mean(axis=(1, 2, 3)) > 0.5).astype(np.int64)
    tf.set_random_seed(0)
    x = tf.placeholder(tf.float32, [None, 8, 8, 1])
    y = tf.placeholder(tf.int64, [None])
    h = tf.layers.conv2d(x, 4, 3, padding="same", activation=tf.nn.relu)
    h = tf.layers.max_pooling2d(h, 2, 2)
    h = tf.layers.flatten(h)
    h = tf.layers.dense(h, 16, activation=tf.nn.relu)
    h = tf.layers.dropout(h, 0.2, training=True)
    logits = tf.layers.dense(h, 2)
    loss = tf.losses.sparse_softmax_cross_entropy(labels=y, logits=logits)
    train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        losses = [sess.run([train, loss], {x: images, y: labels})[1] for _ in range(15)]
    assert losses[-1] < losses[0], losses
