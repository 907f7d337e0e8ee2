"""Names of `tf.nn`, `tf.layers`, `tf.data`, `tf.random`, `tf.initializers`, `tf.gfile`,
`tf.summary`, `tf.test` and `tf.sparse` that nbdist had but no test called, each used as a TF 1.x
program uses it, with both libraries: values (exact where the op is deterministic, the
distribution's formulas where it samples), dtypes, static shapes and TF's errors.
"""

import warnings

import numpy as np
import pytest

import nbdist as tf

_RNG = np.random.default_rng(3232)
IMAGES = _RNG.standard_normal((2, 5, 5, 3)).astype(np.float32)
DEPTH_FILTER = _RNG.standard_normal((3, 3, 3, 2)).astype(np.float32)
CONV_FILTER = _RNG.standard_normal((3, 3, 3, 4)).astype(np.float32)
GRAD_OUT = _RNG.standard_normal((2, 3, 3, 4)).astype(np.float32)


def _each(tf1, check):
    out = []
    for lib in (tf, tf1):
        with lib.Graph().as_default(), lib.Session() as sess, warnings.catch_warnings():
            warnings.simplefilter("ignore")  # TF's deprecation warnings (tf.layers)
            out.append(check(lib, sess))
    return out


def _close(ours, theirs, rtol=1e-5, atol=1e-5):
    if isinstance(theirs, (list, tuple)):
        assert len(ours) == len(theirs)
        for a, b in zip(ours, theirs, strict=True):
            _close(a, b, rtol, atol)
        return
    if isinstance(theirs, np.ndarray) or isinstance(ours, np.ndarray):
        ours, theirs = np.asarray(ours), np.asarray(theirs)
        assert (ours.shape, ours.dtype) == (theirs.shape, theirs.dtype)
        np.testing.assert_allclose(ours, theirs, rtol=rtol, atol=atol)
    else:
        assert ours == theirs


# -- tf.nn -----------------------------------------------------------------------------------------
def test_nn_sigmoid_and_convolution_helpers_match_tensorflow(tf1):
    def run(lib, sess):
        x = lib.constant(IMAGES)
        sig = lib.nn.sigmoid(lib.constant([-800.0, -1.0, 0.0, 2.0, 800.0]))
        depth = lib.nn.depthwise_conv2d_native(x, lib.constant(DEPTH_FILTER), [1, 1, 1, 1], "SAME")
        strided = lib.nn.depthwise_conv2d_native(x, lib.constant(DEPTH_FILTER), [1, 2, 2, 1], "VALID")
        back = lib.nn.conv2d_backprop_input(
            [2, 5, 5, 3], lib.constant(CONV_FILTER), lib.constant(GRAD_OUT), [1, 2, 2, 1], "SAME"
        )
        back_valid = lib.nn.conv2d_backprop_input(
            lib.constant([2, 5, 5, 3]),
            lib.constant(CONV_FILTER),
            lib.constant(GRAD_OUT),
            [1, 1, 1, 1],
            "VALID",
        )
        static = [(t.dtype.name, t.shape.as_list()) for t in (depth, strided, back, back_valid)]
        return static, sess.run([sig, depth, strided, back, back_valid])

    ours, theirs = _each(tf1, run)
    assert ours[0] == theirs[0]
    _close(ours[1], theirs[1])


def test_nn_depthwise_conv2d_native_rejects_mismatched_channels_as_tensorflow(tf1):
    for lib in (tf, tf1):
        with lib.Graph().as_default(), pytest.raises(ValueError):
            lib.nn.depthwise_conv2d_native(
                lib.constant(IMAGES), lib.constant(DEPTH_FILTER[:, :, :2]), [1, 1, 1, 1], "SAME"
            )


def _log_uniform_p(classes, range_max):
    classes = np.asarray(classes, np.float64)
    return (np.log(classes + 2.0) - np.log(classes + 1.0)) / np.log(range_max + 1.0)


@pytest.mark.parametrize("which", ["uniform", "log_uniform", "fixed_unigram"])
def test_nn_candidate_samplers_draw_and_expect_as_tensorflow(tf1, which):
    true = np.array([[0, 3], [7, 9]], np.int64)
    unigrams = [5.0, 1.0, 1.0, 2.0, 0.5, 0.5, 3.0, 1.0, 4.0, 2.0]
    range_max, num_sampled = 10, 6

    def run(lib, sess):
        if which == "uniform":
            sampler = lib.nn.uniform_candidate_sampler
            kwargs = {}
        elif which == "log_uniform":
            sampler = lib.nn.log_uniform_candidate_sampler
            kwargs = {}
        else:
            sampler = lib.nn.fixed_unigram_candidate_sampler
            kwargs = {"unigrams": unigrams, "distortion": 0.5}
        lib.set_random_seed(1)
        many = sampler(lib.constant(true), 2, num_sampled, False, range_max, seed=4, **kwargs)
        unique = sampler(lib.constant(true), 2, num_sampled, True, range_max, seed=5, **kwargs)
        static = [(t.dtype.name, t.shape.as_list()) for t in (*many, *unique)]
        return static, sess.run(list(many)), sess.run(list(unique))

    ours, theirs = _each(tf1, run)
    assert ours[0] == theirs[0]
    if which == "uniform":
        p = np.full(range_max, 1.0 / range_max)
    elif which == "log_uniform":
        p = _log_uniform_p(np.arange(range_max), range_max)
    else:
        p = np.power(unigrams, 0.5) / np.power(unigrams, 0.5).sum()
    for _, (sampled, true_expected, sampled_expected), (usampled, _, _) in (ours, theirs):
        assert sampled.dtype == np.int64 and sampled.shape == (num_sampled,)
        assert ((sampled >= 0) & (sampled < range_max)).all()
        assert len(set(usampled.tolist())) == num_sampled
        # not unique: each class is expected num_sampled * p times
        np.testing.assert_allclose(true_expected, num_sampled * p[true], rtol=1e-5)
        np.testing.assert_allclose(sampled_expected, num_sampled * p[sampled], rtol=1e-5)
    # the deterministic part: the expected counts of the true classes
    _close(ours[1][1], theirs[1][1])


def test_nn_sampled_softmax_loss_of_given_samples_matches_tensorflow(tf1):
    weights = _RNG.standard_normal((8, 4))
    biases = _RNG.standard_normal(8)
    inputs = _RNG.standard_normal((3, 4))
    labels = np.array([[1], [5], [2]], np.int64)
    sampled = np.array([2, 0, 6, 7], np.int64)  # 2: an accidental hit of the third row

    def run(lib, sess):
        values = (
            lib.constant(sampled),
            lib.constant(np.full((3, 1), 0.4)),
            lib.constant(np.array([0.5, 0.3, 0.2, 0.1])),
        )
        args = {"num_sampled": 4, "num_classes": 8, "sampled_values": values}
        w, b, x = lib.constant(weights), lib.constant(biases), lib.constant(inputs)
        hit = lib.nn.sampled_softmax_loss(w, b, lib.constant(labels), x, **args)
        no_removal = lib.nn.sampled_softmax_loss(
            [w[:4], w[4:]], b, labels, x, remove_accidental_hits=False, partition_strategy="div", **args
        )
        grads = lib.gradients(lib.reduce_sum(hit), [w, x])
        return hit.shape.as_list(), hit.dtype.name, sess.run([hit, no_removal, *grads])

    ours, theirs = _each(tf1, run)
    _close(ours, theirs, rtol=1e-9, atol=1e-12)


# -- tf.layers ---------------------------------------------------------------------------------
def test_layers_classes_match_tensorflow(tf1):
    def run(lib, sess):
        x = lib.constant(IMAGES)
        training = lib.placeholder_with_default(False, [])
        max_pool = lib.layers.MaxPooling2D(pool_size=2, strides=2, padding="same", name="maxp")
        avg_pool = lib.layers.AveragePooling2D((3, 2), (1, 2), name="avgp")
        flatten = lib.layers.Flatten()
        drop = lib.layers.Dropout(rate=0.4, seed=1)
        pooled, averaged = max_pool(x), avg_pool.apply(x)
        flat = flatten(pooled)
        dropped = drop(flat, training=training)
        channels_first = lib.layers.MaxPooling2D(2, 1, data_format="channels_first")(x)
        flat_first = lib.layers.Flatten(data_format="channels_first")(channels_first)
        flat_none = lib.layers.Flatten(data_format=None)(averaged)
        static = [
            (t.dtype.name, t.shape.as_list())
            for t in (pooled, averaged, flat, dropped, channels_first, flat_first, flat_none)
        ]
        values = sess.run([pooled, averaged, flat, dropped, flat_first, flat_none])
        on = sess.run(dropped, {training: True})
        kept = on != 0
        return static, values, (max_pool.name, avg_pool.name), np.allclose(on[kept], values[2][kept] / 0.6)

    ours, theirs = _each(tf1, run)
    assert ours[0] == theirs[0] and ours[2:] == theirs[2:]
    _close(ours[1], theirs[1])


def test_layers_layer_subclass_builds_its_weights_once_as_tensorflow(tf1):
    def run(lib, sess):
        class Scale(lib.layers.Layer):
            def build(self, input_shape):
                self.kernel = self.add_weight(
                    "kernel", [int(input_shape[-1])], initializer=lib.constant_initializer(1.5)
                )
                self.offset = self.add_weight(
                    "offset", [], initializer=lib.zeros_initializer(), trainable=False
                )
                super().build(input_shape)

            def call(self, inputs):
                return inputs * self.kernel + self.offset

        layer = Scale(name="scale")
        once = layer(lib.constant([[1.0, 2.0]]))
        twice = layer(lib.constant([[3.0, -1.0]]))
        assert isinstance(layer, lib.layers.Layer)
        sess.run(lib.global_variables_initializer())
        return (
            [v.name for v in layer.trainable_variables],
            [v.name for v in layer.non_trainable_variables],
            [v.name for v in layer.variables],
            sess.run([once, twice]),
        )

    ours, theirs = _each(tf1, run)
    assert ours[:3] == theirs[:3]
    _close(ours[3], theirs[3])


# -- tf.data --------------------------------------------------------------------------------------
def test_data_initializable_iterator_and_its_output_types_match_tensorflow(tf1):
    def run(lib, sess):
        n = lib.placeholder(lib.int64, [])
        ds = lib.data.Dataset.range(n).map(lambda i: (i * 2, lib.cast(i, lib.float32) / 2))
        it = lib.data.make_initializable_iterator(ds)
        types = lib.data.get_output_types(ds)
        classes = lib.data.get_output_classes(it)
        nxt = it.get_next()
        got = []
        for size in (3, 1):
            sess.run(it.initializer, {n: size})
            while True:
                try:
                    got.append(sess.run(nxt))
                except lib.errors.OutOfRangeError:
                    break
        return [t.name for t in types], [c is lib.Tensor for c in classes], got

    ours, theirs = _each(tf1, run)
    assert ours == theirs


# -- tf.random, tf.initializers ------------------------------------------------------------------
def test_random_multinomial_draws_from_the_logits_as_tensorflow(tf1):
    with np.errstate(divide="ignore"):  # log(0): -inf, a class never drawn
        logits = np.log([[0.7, 0.2, 0.1, 0.0], [0.0, 0.0, 0.5, 0.5]])

    def run(lib, sess):
        lib.set_random_seed(9)
        draws = lib.random.multinomial(lib.constant(logits), 2000, seed=1)
        small = lib.random.multinomial(lib.constant(logits, lib.float32), 3, output_dtype=lib.int32)
        static = [(t.dtype.name, t.shape.as_list()) for t in (draws, small)]
        return static, sess.run(draws)

    ours, theirs = _each(tf1, run)
    assert ours[0] == theirs[0] == [("int64", [2, 2000]), ("int32", [2, 3])]
    for _, draws in (ours, theirs):
        freq = np.stack([np.bincount(row, minlength=4) / 2000 for row in draws])
        np.testing.assert_allclose(freq, np.exp(logits), atol=0.04)
        assert freq[0, 3] == 0 and freq[1, :2].sum() == 0


def test_initializers_deterministic_ones_match_tensorflow(tf1):
    def run(lib, sess):
        eye = lib.get_variable("eye", [3, 5], initializer=lib.initializers.identity(gain=2.0))
        ortho = lib.get_variable("ortho", [4, 6], initializer=lib.initializers.orthogonal(gain=0.5, seed=3))
        ortho_tall = lib.get_variable("tall", [3, 3, 8, 2], initializer=lib.initializers.orthogonal(seed=1))
        table_init = lib.initializers.tables_initializer()
        sess.run([lib.global_variables_initializer(), table_init])
        o, tall = sess.run([ortho, ortho_tall])
        tall = tall.reshape(-1, 2)
        return (
            sess.run(eye).tolist(),
            np.allclose(o @ o.T, 0.25 * np.eye(4), atol=1e-5),
            np.allclose(tall.T @ tall, np.eye(2), atol=1e-5),
            table_init.type,
        )

    ours, theirs = _each(tf1, run)
    assert ours == theirs


def test_initializers_identity_rejects_a_vector_as_tensorflow(tf1):
    for lib in (tf, tf1):
        with lib.Graph().as_default(), pytest.raises(ValueError, match="must be at least two-dimensional"):
            lib.get_variable("v", [3], initializer=lib.initializers.identity())


SCALED = {
    "he_normal": lambda t: t.initializers.he_normal(seed=2),
    "he_uniform": lambda t: t.initializers.he_uniform(seed=2),
    "lecun_normal": lambda t: t.initializers.lecun_normal(seed=2),
    "lecun_uniform": lambda t: t.initializers.lecun_uniform(seed=2),
    "uniform_unit_scaling": lambda t: t.initializers.uniform_unit_scaling(factor=1.0, seed=2),
}


@pytest.mark.parametrize(
    ("name", "kind", "scale"),
    [
        ("he_normal", "normal", 2.0),
        ("he_uniform", "uniform", 2.0),
        ("lecun_normal", "normal", 1.0),
        ("lecun_uniform", "uniform", 1.0),
        ("uniform_unit_scaling", "uniform", 3.0),
    ],
)
def test_initializers_scaled_draws_have_tensorflows_spread(tf1, name, kind, scale):
    fan_in, fan_out = 50, 80

    def run(lib, sess):
        w = lib.get_variable("w", [fan_in, fan_out], initializer=SCALED[name](lib))
        sess.run(w.initializer)
        return sess.run(w)

    for draw in _each(tf1, run):
        assert draw.dtype == np.float32 and draw.shape == (fan_in, fan_out)
        if name == "uniform_unit_scaling":  # TF's: max = sqrt(3 / fan_in) * factor
            limit = np.sqrt(3.0 / fan_in)
        else:
            limit = np.sqrt(3.0 * scale / fan_in)
        std = limit / np.sqrt(3.0)
        if kind == "uniform":
            assert np.abs(draw).max() <= limit
        else:  # a truncated normal with the variance scale / fan_in
            assert np.abs(draw).max() <= 2 * std / 0.87962566103423978 + 1e-6
        assert abs(draw.std() - std) < 0.1 * std


# -- tf.gfile, tf.summary, tf.test, tf.sparse ----------------------------------------------------
def test_gfile_open_and_fast_gfile_read_and_write_as_tensorflow(tf1, tmp_path):
    def run(lib, sess):
        path = str(tmp_path / f"{lib.__name__}.txt")
        with lib.gfile.Open(path, "w") as f:
            f.write("one\ntwo\n")
        with lib.gfile.FastGFile(path, "rb") as f:
            raw = f.read()
        with lib.gfile.Open(path, "a") as f:
            f.write("three")
        with lib.gfile.Open(path) as f:
            lines = f.readlines()
        with lib.gfile.FastGFile(path, "r") as f:
            f.seek(4)
            rest = f.read(3), f.tell(), f.size()
        return raw, lines, rest

    ours, theirs = _each(tf1, run)
    assert ours == theirs
    with pytest.raises(tf1.errors.NotFoundError), tf1.gfile.Open(str(tmp_path / "none"), "r") as f:
        f.read()
    with pytest.raises(tf.errors.NotFoundError), tf.gfile.Open(str(tmp_path / "none"), "r") as f:
        f.read()


def test_summary_protos_round_trip_through_tensorflows(tf1):
    value = tf.summary.Summary.Value(tag="loss", simple_value=0.5)
    event = tf.summary.Event(wall_time=12.5, step=3, summary=tf.summary.Summary(value=[value]))
    log = tf.summary.Event(step=4, session_log=tf.summary.SessionLog(status=tf.summary.SessionLog.START))
    theirs = tf1.summary.Event.FromString(event.SerializeToString())
    assert (theirs.step, theirs.wall_time, theirs.summary.value[0].tag) == (3, 12.5, "loss")
    assert theirs.summary.value[0].simple_value == 0.5
    back = tf1.summary.Event.FromString(log.SerializeToString())
    assert back.session_log.status == tf1.summary.SessionLog.START == tf.summary.SessionLog.START
    mine = tf.summary.Summary.FromString(
        tf1.summary.Summary(value=[tf1.summary.Summary.Value(tag="a", simple_value=2.0)]).SerializeToString()
    )
    assert mine.value[0].tag == "a" and mine.value[0].simple_value == 2.0


def test_test_module_reports_no_gpu(tf1):
    assert tf.test.gpu_device_name() == ""
    assert tf.test.is_built_with_cuda() is False
    assert tf.test.is_built_with_gpu_support() is False
    assert isinstance(tf1.test.is_built_with_cuda(), bool)
    assert isinstance(tf1.test.gpu_device_name(), str)


def test_sparse_sparse_tensor_matches_tensorflow(tf1):
    def run(lib, sess):
        sp = lib.sparse.SparseTensor(indices=[[0, 0], [1, 2]], values=[1, 2], dense_shape=[2, 4])
        assert isinstance(sp, lib.SparseTensor) and isinstance(sp, lib.sparse.SparseTensor)
        dense = lib.sparse.to_dense(lib.sparse.reorder(sp))
        static = sp.dtype.name, sp.shape.as_list(), sp.indices.dtype.name, sp.dense_shape.dtype.name
        value = sess.run(sp)
        return static, dense.shape.as_list(), sess.run(dense).tolist(), value.values.tolist()

    ours, theirs = _each(tf1, run)
    assert ours == theirs
    for lib in (tf, tf1):
        with lib.Graph().as_default(), pytest.raises((TypeError, ValueError)):
            lib.sparse.SparseTensor(indices=[[0, 0]], values=[[1.0]], dense_shape=[2, 2])
