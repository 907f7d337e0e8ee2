"""TF 1.x's RNNs against real TensorFlow: `tf.nn.rnn_cell`'s cells run by `tf.nn.dynamic_rnn`,
`static_rnn` and `bidirectional_dynamic_rnn` - the variables' names, and the outputs, final
states and gradients (w.r.t. the inputs and every variable) of the same program in nbdist and in
``tensorflow.compat.v1``, nbdist's variables loaded with TF's initial values by name.

Each case is ``build(t) -> (outputs, state, inputs placeholder, feeds)``, written once against
either library's API.
"""

import numpy as np
import pytest

import nbdist as tf
from nbdist.ops.nest import flatten

# TF's legacy cells (tf_keras's legacy_cells.py) warn at construction that they are deprecated in
# favour of Keras's; the warning is TF's own, about TF 1.x's API that these tests compare against.
pytestmark = pytest.mark.filterwarnings("ignore:`tf.nn.rnn_cell.*is deprecated:UserWarning")

_RNG = np.random.default_rng(32)
X = _RNG.standard_normal((3, 5, 4)).astype(np.float32)  # [batch, time, depth]
LENGTHS = np.array([5, 2, 0], np.int32)


def _basic_rnn(t):
    x = t.placeholder(t.float32, [3, 5, 4])
    out, state = t.nn.dynamic_rnn(t.nn.rnn_cell.BasicRNNCell(6), x, dtype=t.float32)
    return out, state, x, {}


def _basic_lstm_lengths(t):
    x = t.placeholder(t.float32, [3, None, 4])
    n = t.placeholder(t.int32, [3])
    cell = t.nn.rnn_cell.BasicLSTMCell(5)
    out, state = t.nn.dynamic_rnn(cell, x, sequence_length=n, dtype=t.float32)
    return out, state, x, {n: LENGTHS}


def _basic_lstm_concat_time_major(t):
    x = t.placeholder(t.float32, [5, 3, 4])
    cell = t.nn.rnn_cell.BasicLSTMCell(5, forget_bias=0.5, state_is_tuple=False)
    out, state = t.nn.dynamic_rnn(cell, x, dtype=t.float32, time_major=True, scope="encoder")
    return out, state, x, {}


def _lstm_peepholes_projection(t):
    x = t.placeholder(t.float32, [3, 5, 4])
    cell = t.nn.rnn_cell.LSTMCell(6, use_peepholes=True, cell_clip=0.8, num_proj=3, proj_clip=0.5)
    out, state = t.nn.dynamic_rnn(cell, x, sequence_length=LENGTHS, dtype=t.float32)
    return out, state, x, {}


def _gru_initial_state(t):
    x = t.placeholder(t.float32, [3, 5, 4])
    h0 = t.placeholder(t.float32, [3, 5])
    out, state = t.nn.dynamic_rnn(t.nn.rnn_cell.GRUCell(5), x, initial_state=h0)
    return out, state, x, {h0: np.linspace(-1, 1, 15, dtype=np.float32).reshape(3, 5)}


def _multi_cell(t):
    x = t.placeholder(t.float32, [3, 5, 4])
    cells = [t.nn.rnn_cell.LSTMCell(5), t.nn.rnn_cell.GRUCell(3), t.nn.rnn_cell.BasicRNNCell(2)]
    cell = t.nn.rnn_cell.MultiRNNCell(
        [t.nn.rnn_cell.DropoutWrapper(cells[0], output_keep_prob=1.0), *cells[1:]]
    )
    out, state = t.nn.dynamic_rnn(cell, x, sequence_length=LENGTHS, dtype=t.float32)
    return out, state, x, {}


def _static_rnn(t):
    x = t.placeholder(t.float32, [3, 5, 4])
    cell = t.nn.rnn_cell.BasicLSTMCell(4)
    outs, state = t.nn.static_rnn(cell, t.unstack(x, axis=1), sequence_length=LENGTHS, dtype=t.float32)
    return t.stack(outs, 1), state, x, {}


def _bidirectional(t):
    x = t.placeholder(t.float32, [3, 5, 4])
    fw, bw = t.nn.rnn_cell.GRUCell(3), t.nn.rnn_cell.BasicLSTMCell(2)
    outs, states = t.nn.bidirectional_dynamic_rnn(fw, bw, x, sequence_length=LENGTHS, dtype=t.float32)
    return t.concat(outs, 2), states, x, {}


CASES = {
    f.__name__.lstrip("_"): f
    for f in (
        _basic_rnn,
        _basic_lstm_lengths,
        _basic_lstm_concat_time_major,
        _lstm_peepholes_projection,
        _gru_initial_state,
        _multi_cell,
        _static_rnn,
        _bidirectional,
    )
}


def _program(t, build):
    out, state, x, feeds = build(t)
    states = flatten(state)  # TF's LSTMStateTuple is a namedtuple too
    weights = t.constant(np.linspace(-1.0, 1.0, out.shape.as_list()[-1], dtype=np.float32))
    loss = t.reduce_sum(out * weights) + sum(t.reduce_sum(s * s) for s in states)
    variables = sorted(t.trainable_variables(), key=lambda v: v.op.name)
    grads = t.gradients(loss, [x, *variables])
    feeds[x] = X if x.shape[0] == 3 else X.transpose(1, 0, 2)
    return [out, *states, *grads], feeds, variables


def _run_tensorflow(tf1, build):
    with tf1.Graph().as_default() as graph:
        fetches, feeds, variables = _program(tf1, build)
        with tf1.Session(graph=graph) as sess:
            sess.run(tf1.global_variables_initializer())
            values = {v.op.name: sess.run(v) for v in variables}
            return sess.run(fetches, feeds), values


def _run_nbdist(build, values):
    with tf.Graph().as_default():
        fetches, feeds, variables = _program(tf, build)
        assert sorted(v.op.name for v in variables) == sorted(values)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for v in variables:
                v.load(values[v.op.name], sess)
            return sess.run(fetches, feeds)


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_gradients_and_variable_names_match_tensorflow(tf1, name):
    theirs, values = _run_tensorflow(tf1, CASES[name])
    ours = _run_nbdist(CASES[name], values)
    assert len(ours) == len(theirs)
    for k, (a, b) in enumerate(zip(ours, theirs)):
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-6, err_msg=f"{name}: fetch {k}")


def test_a_cell_keeps_its_variables_in_tf_order(graph):
    cell = tf.nn.rnn_cell.MultiRNNCell([tf.nn.rnn_cell.GRUCell(3), tf.nn.rnn_cell.BasicLSTMCell(2)])
    tf.nn.dynamic_rnn(cell, tf.zeros([2, 4, 5]), dtype=tf.float32)
    assert [v.op.name for v in cell.trainable_weights] == [
        "rnn/multi_rnn_cell/cell_0/gru_cell/gates/kernel",
        "rnn/multi_rnn_cell/cell_0/gru_cell/gates/bias",
        "rnn/multi_rnn_cell/cell_0/gru_cell/candidate/kernel",
        "rnn/multi_rnn_cell/cell_0/gru_cell/candidate/bias",
        "rnn/multi_rnn_cell/cell_1/basic_lstm_cell/kernel",
        "rnn/multi_rnn_cell/cell_1/basic_lstm_cell/bias",
    ]


def test_an_initial_state_as_an_lstm_state_tuple_is_carried(graph):
    c, h = tf.fill([2, 3], 0.5), tf.fill([2, 3], -0.5)
    state0 = tf.nn.rnn_cell.LSTMStateTuple(c, h)
    out, state = tf.nn.dynamic_rnn(
        tf.nn.rnn_cell.BasicLSTMCell(3), tf.zeros([2, 4, 1]), sequence_length=[0, 2], initial_state=state0
    )
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        out, state = sess.run([out, state])
    assert isinstance(state, tf.nn.rnn_cell.LSTMStateTuple)
    np.testing.assert_array_equal(out[0], 0.0)  # length 0: zeros, and the state copied through
    np.testing.assert_array_equal(state.c[0], 0.5)
    np.testing.assert_array_equal(state.h[0], -0.5)


def test_no_initial_state_and_no_dtype_is_refused_as_tf(graph):
    with pytest.raises(ValueError, match="If there is no initial_state, you must give a dtype"):
        tf.nn.dynamic_rnn(tf.nn.rnn_cell.BasicRNNCell(2), tf.zeros([2, 3, 4]))


def test_training_an_lstm_lowers_its_loss(graph):
    x = tf.constant(X)
    out, _ = tf.nn.dynamic_rnn(tf.nn.rnn_cell.LSTMCell(4), x, dtype=tf.float32)
    loss = tf.reduce_mean(tf.square(out[:, -1] - 0.5))
    train = tf.train.GradientDescentOptimizer(0.5).minimize(loss)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        first = sess.run(loss)
        for _ in range(20):
            sess.run(train)
        assert sess.run(loss) < first / 2


def test_dropout_in_the_loop_runs_but_its_gradient_is_refused_naming_the_draw(graph):
    cell = tf.nn.rnn_cell.DropoutWrapper(tf.nn.rnn_cell.BasicRNNCell(8), output_keep_prob=0.5, seed=1)
    out, _ = tf.nn.dynamic_rnn(cell, tf.ones([4, 3, 2]), dtype=tf.float32)
    kept = tf.reduce_mean(tf.cast(tf.not_equal(out, 0.0), tf.float32))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert 0.2 < sess.run(kept) < 0.8
    with pytest.raises(ValueError, match="its body draws random numbers"):
        tf.gradients(tf.reduce_sum(out), tf.trainable_variables())


def test_a_cell_tf_lacks_in_nbdist_raises_a_clear_attribute_error():
    with pytest.raises(AttributeError, match=r"tf\.nn\.rnn_cell\.NASCell is not supported"):
        tf.nn.rnn_cell.NASCell  # noqa: B018 - the attribute access is the test
