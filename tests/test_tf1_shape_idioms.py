"""TF 1.x's shape idioms: ``x.get_shape()[1].value`` and friends, which TF 1.x programs (and
`tf.compat.v1` after `disable_v2_behavior()`) use to build variables and attrs from static
shapes; the same program under both libraries. A known dimension is an int with `.value`
(`KnownDim`); it travels over the wire and into meta graphs as a plain int."""

import numpy as np

import nbdist as tf
from nbdist.graph.tensor_shape import KnownDim
from nbdist.runtime.net import wire


def _program(t):
    x = t.placeholder(t.float32, [None, 6, 4])
    features = x.get_shape()[2].value * x.get_shape()[1].value
    w = t.Variable(np.ones((features, 3), np.float32))
    flat = t.reshape(x, [-1, features])
    pooled = t.nn.max_pool(t.expand_dims(x, -1), [1, x.shape[1].value, 1, 1], [1, 1, 1, 1], "VALID")
    assert x.shape[0].value is None if t is not tf else x.shape[0] is None
    return x, [t.matmul(flat, w), pooled], features


def test_shape_dot_value_builds_the_same_program_as_tf(tf1):
    values = np.arange(48, dtype=np.float32).reshape(2, 6, 4)
    results = []
    for lib in (tf, tf1):
        with lib.Graph().as_default():
            x, outputs, features = _program(lib)
            assert features == 24
            with lib.Session() as sess:
                sess.run(lib.global_variables_initializer())
                results.append(sess.run(outputs, {x: values}))
    for ours, theirs in zip(*results):
        np.testing.assert_array_equal(ours, theirs)


def test_a_known_dimension_is_an_int_everywhere():
    with tf.Graph().as_default():
        d = tf.placeholder(tf.float32, [None, 7]).shape[1]
    assert isinstance(d, int) and d == 7 and repr(d) == "7" and d.value == 7 and d + 1 == 8
    assert tf.dimension_value(d) == 7 and tf.Dimension(d).value == 7
    frames = wire.encode("Test", 1, {"dims": [KnownDim(3), KnownDim(5)], "n": KnownDim(2)})
    body = wire.decode(frames)
    assert body["dims"] == [3, 5] and type(body["n"]) is int
