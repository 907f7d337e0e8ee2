"""`tf.nn.static_bidirectional_rnn`, `tf.nn.static_state_saving_rnn`, `tf.nn.raw_rnn` (nbdist/ops/rnn_more_ops.py)
and `tf.nn.safe_embedding_lookup_sparse` (embedding_more_ops.py) against real TF: variable names,
outputs, states and gradients of the same program, nbdist's variables loaded with TF's values."""

import numpy as np
import pytest

import nbdist as tf
from nbdist.ops.nest import flatten

pytestmark = pytest.mark.filterwarnings("ignore:`tf.nn.rnn_cell.*is deprecated:UserWarning")

_RNG = np.random.default_rng(33)
X = _RNG.standard_normal((3, 4, 2)).astype(np.float32)  # [batch, time, depth]
LENGTHS = np.array([4, 2, 1], np.int32)
PARAMS = _RNG.standard_normal((10, 3)).astype(np.float32)


def _bidirectional(t, x, lengths):
    fw, bw = t.nn.rnn_cell.GRUCell(3), t.nn.rnn_cell.BasicLSTMCell(2)
    outs, state_fw, state_bw = t.nn.static_bidirectional_rnn(
        fw, bw, t.unstack(x, axis=1), dtype=t.float32, sequence_length=lengths
    )
    plain, plain_fw, plain_bw = t.nn.static_bidirectional_rnn(
        t.nn.rnn_cell.BasicRNNCell(2),
        t.nn.rnn_cell.BasicRNNCell(2),
        t.unstack(x, axis=1),
        dtype=t.float32,
        scope="plain",
    )  # no lengths: the steps simply reversed
    return [*outs, *flatten(state_fw), *flatten(state_bw), *plain, plain_fw, plain_bw]


class _StateSaver:
    """A state saver as TF's `static_state_saving_rnn` reads one: a variable per state name."""

    def __init__(self, t, shapes):
        self.t = t
        self.states = {n: t.Variable(t.zeros(s), trainable=False, name=n) for n, s in shapes.items()}

    def state(self, name):
        # A copy: TF's Identity of a ref variable aliases its buffer, which the save's Assign then
        # overwrites in place before TF's gradient ops read it (nbdist's reads are snapshots).
        return self.states[name] + 0.0

    def save_state(self, name, value):
        return self.t.assign(self.states[name], value)


def _state_saving(t, x, lengths):
    saver = _StateSaver(t, {"c": [3, 2], "h": [3, 2], "g": [3, 3]})
    lstm = t.nn.rnn_cell.BasicLSTMCell(2)
    outs, state = t.nn.static_state_saving_rnn(lstm, t.unstack(x, axis=1), saver, ("c", "h"), lengths)
    gru_outs, gru_state = t.nn.static_state_saving_rnn(
        t.nn.rnn_cell.GRUCell(3), t.unstack(x * 0.5, axis=1), saver, "g", scope="gru"
    )
    return [*outs, *flatten(state), *gru_outs, gru_state]


def _raw_rnn(t, x, lengths):
    """TF's documented `raw_rnn` loop: inputs read from a TensorArray until each sequence ends."""
    inputs = t.transpose(x, [1, 0, 2])  # time-major
    inputs_ta = t.TensorArray(t.float32, size=4, clear_after_read=False).unstack(inputs)
    lstm = t.nn.rnn_cell.LSTMCell(3)

    def loop_fn(time, cell_output, cell_state, loop_state):
        first = cell_output is None
        state = lstm.zero_state(3, t.float32) if first else cell_state
        emit = None if first else cell_output
        finished = time >= lengths
        next_input = t.cond(
            t.reduce_all(finished), lambda: t.zeros([3, 2], t.float32), lambda: inputs_ta.read(time)
        )
        return finished, next_input, state, emit, None

    outputs_ta, state, loop_state = lstm_out = t.nn.raw_rnn(lstm, loop_fn)
    assert loop_state is None and len(lstm_out) == 3
    gru = t.nn.rnn_cell.GRUCell(2)

    def emitting_fn(time, cell_output, cell_state, loop_state):
        if cell_output is None:  # the emit structure (one row's shapes) and a loop state
            return time >= 3, inputs[0], gru.zero_state(3, t.float32), (t.zeros([2]), t.zeros([])), 0.0
        emit = (cell_output * 2.0, t.reduce_sum(cell_output, 1))
        next_input = t.cond(time < 4, lambda: inputs_ta.read(t.minimum(time, 3)), lambda: t.zeros([3, 2]))
        return time >= 3, next_input, cell_state, emit, loop_state + t.reduce_sum(cell_output)

    (emit_a, emit_b), gru_state, total = t.nn.raw_rnn(gru, emitting_fn, scope="emitting")
    return [outputs_ta.stack(), *flatten(state), emit_a.stack(), emit_b.stack(), gru_state, total]


def _program(t, build, lengths):
    x = t.placeholder(t.float32, [3, 4, 2])
    fetches = build(t, x, lengths)
    loss = sum(t.reduce_sum(f * f) for f in fetches)
    variables = sorted(t.trainable_variables(), key=lambda v: v.op.name)
    return fetches + t.gradients(loss, [x, *variables]), x, variables


def _run(t, build, lengths, values=None, steps=1):
    with t.Graph().as_default():
        fetches, x, variables = _program(t, build, lengths)
        with t.Session() as sess:
            sess.run(t.global_variables_initializer())
            if values is not None:
                assert sorted(v.op.name for v in variables) == sorted(values)
                for v in variables:
                    v.load(values[v.op.name], sess)
            values = {v.op.name: sess.run(v) for v in variables}
            results = [sess.run(fetches, {x: X}) for _ in range(steps)]  # (states saved between)
            return [r for step in results for r in step], values


@pytest.mark.tf
@pytest.mark.parametrize(
    ("build", "lengths", "steps"),
    [(_bidirectional, LENGTHS, 1), (_state_saving, LENGTHS, 2), (_raw_rnn, LENGTHS, 1)],
    ids=["bidirectional", "state-saving", "raw-rnn"],
)
def test_static_rnns_match_tf(tf1, build, lengths, steps):
    theirs, values = _run(tf1, build, lengths, steps=steps)
    ours, _ = _run(tf, build, lengths, values, steps=steps)
    assert len(ours) == len(theirs)
    for k, (a, b) in enumerate(zip(ours, theirs, strict=True)):
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-6, err_msg=f"fetch {k}")


def test_static_rnn_argument_errors(graph):
    cell = tf.nn.rnn_cell.GRUCell(2)
    with pytest.raises(TypeError, match="inputs must be a sequence"):
        tf.nn.static_bidirectional_rnn(cell, cell, tf.zeros([2, 3, 2]), dtype=tf.float32)
    with pytest.raises(ValueError, match="inputs must not be empty"):
        tf.nn.static_bidirectional_rnn(cell, cell, [], dtype=tf.float32)
    with pytest.raises(TypeError, match=r"'cell_bw'.* is not an RNNCell"):
        tf.nn.static_bidirectional_rnn(cell, "cell", [tf.zeros([2, 2])], dtype=tf.float32)
    with pytest.raises(ValueError, match=r"`state_name` should be the same type as `cell\.state_size`"):
        tf.nn.static_state_saving_rnn(tf.nn.rnn_cell.BasicLSTMCell(2), [tf.zeros([2, 2])], None, "c")


def _embedding(t):
    params = t.constant(PARAMS)
    shards = [t.constant(PARAMS[:4]), t.constant(PARAMS[4:7]), t.constant(PARAMS[7:])]
    ids = t.SparseTensor(
        [[0, 0, 0], [0, 0, 1], [0, 1, 0], [1, 0, 0], [1, 0, 2], [1, 1, 1], [2, 0, 0]],
        t.constant([3, -1, 7, 2, 9, 5, -4], t.int64),
        [3, 2, 3],
    )  # row [2, 1] empty; [1, 1] and [2, 0] hold... -1 and -4: invalid
    weights = t.SparseTensor(ids.indices, [1.0, 2.0, 0.5, -1.0, 2.0, 0.0, 3.0], ids.dense_shape)
    out = []
    for kwargs in (
        {},
        {"combiner": "sum"},
        {"combiner": "sqrtn", "default_id": 2},
        {"sparse_weights": weights},
        {"sparse_weights": weights, "combiner": "sum", "default_id": 0},
        {"sparse_weights": weights, "combiner": "sqrtn"},
    ):
        y = t.nn.safe_embedding_lookup_sparse(params, ids, **kwargs)
        out += [y, t.convert_to_tensor(t.gradients(t.reduce_sum(y * y), params)[0])]
    for strategy in ("div", "mod"):
        y = t.nn.safe_embedding_lookup_sparse(shards, ids, partition_strategy=strategy, default_id=1)
        out += [y, *(t.convert_to_tensor(g) for g in t.gradients(t.reduce_sum(y * y), shards))]
    flat = t.SparseTensor([[0, 0], [0, 1], [2, 1]], t.constant([1, 4, 8], t.int64), [4, 2])
    out.append(t.nn.safe_embedding_lookup_sparse(params, flat, name="flat"))
    return out


@pytest.mark.tf
def test_safe_embedding_lookup_sparse_matches_tf(tf1):
    with tf.Graph().as_default():
        fetches = _embedding(tf)
        assert [f.shape.as_list() for f in fetches[:1]] == [[None, None, 3]]
        with tf.Session() as sess:
            ours = sess.run(fetches)
    with tf1.Graph().as_default(), tf1.Session() as sess:
        theirs = sess.run(_embedding(tf1))
    for k, (a, b) in enumerate(zip(ours, theirs, strict=True)):
        assert a.shape == b.shape, k
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, err_msg=f"fetch {k}")


def test_safe_embedding_lookup_sparse_needs_weights(graph):
    ids = tf.SparseTensor([[0, 0]], tf.constant([1], tf.int64), [1, 1])
    with pytest.raises(ValueError, match="Missing embedding_weights"):
        tf.nn.safe_embedding_lookup_sparse([], ids)
