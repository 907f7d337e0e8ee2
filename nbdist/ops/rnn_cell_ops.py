"""`tf.nn.rnn_cell`: TF 1.x's RNN cells (`BasicRNNCell`, `BasicLSTMCell`, `LSTMCell`, `GRUCell`,
`MultiRNNCell`, `DropoutWrapper`, `LSTMStateTuple`) as `tf.layers.Layer`s.

A cell is a layer called as ``output, new_state = cell(inputs, state)``; its variables live in
the layer's variable scope under the caller's, so ``tf.nn.dynamic_rnn(BasicLSTMCell(8), x)``
makes TF's ``rnn/basic_lstm_cell/kernel`` and ``.../bias`` (a `MultiRNNCell`'s cells are under
``multi_rnn_cell/cell_<i>/``, a GRU's ``gates/`` and ``candidate/``): checkpoints line up.

`build_cell` makes a cell's variables without running it: `dynamic_rnn` calls it before its
`while_loop`, whose body then only reads them (nbdist's loop bodies make no variables).
"""

import collections

from nbdist.graph import dtypes as _dtypes
from nbdist.graph.graph import Tensor, get_default_graph
from nbdist.graph.tensor_shape import as_shape
from nbdist.ops import math_ops, nn_ops
from nbdist.ops.array_ops import zeros
from nbdist.ops.bias_ops import bias_add
from nbdist.ops.clip_ops import clip_by_value
from nbdist.ops.concat_slice_ops import concat, split, stack
from nbdist.ops.init_ops import constant_initializer, zeros_initializer
from nbdist.ops.layers_base import Layer
from nbdist.ops.layers_core import get_activation
from nbdist.ops.matmul_ops import matmul
from nbdist.ops.nest import flatten, pack_sequence_as
from nbdist.ops.variable_scope import variable_scope

__all__ = [
    "BasicLSTMCell",
    "BasicRNNCell",
    "DropoutWrapper",
    "GRUCell",
    "LSTMCell",
    "LSTMStateTuple",
    "MultiRNNCell",
    "RNNCell",
]


class LSTMStateTuple(collections.namedtuple("LSTMStateTuple", ("c", "h"))):
    """`tf.nn.rnn_cell.LSTMStateTuple`: an LSTM's state, the cell state `c` and the output `h`."""

    __slots__ = ()

    @property
    def dtype(self):
        if self.c.dtype != self.h.dtype:
            raise TypeError(f"LSTMStateTuple: c is {self.c.dtype.name} but h is {self.h.dtype.name}")
        return self.c.dtype


def batch_zeros(batch_size, size, dtype):
    """Zeros ``[batch_size, size]`` (`batch_size` an int or a scalar tensor)."""
    if isinstance(batch_size, Tensor):
        return zeros(stack([batch_size, size]), dtype=dtype)
    return zeros([batch_size, size], dtype=dtype)


class RNNCell(Layer):
    """`tf.nn.rnn_cell.RNNCell`: the base of the cells; a subclass defines `state_size`,
    `output_size`, ``build(input_shape)`` and ``call(inputs, state) -> (output, new_state)``."""

    state_size = property(lambda self: self._state_size_of())
    output_size = property(lambda self: self._output_size_of())

    def _state_size_of(self):
        raise NotImplementedError(f"{type(self).__name__} must define state_size")

    def _output_size_of(self):
        raise NotImplementedError(f"{type(self).__name__} must define output_size")

    def __call__(self, inputs, state, scope=None):
        return super().__call__(inputs, state, scope=scope)

    def zero_state(self, batch_size, dtype):
        """Zeros of the structure of `state_size`, each ``[batch_size, size]``."""
        dtype = _dtypes.as_dtype(dtype)
        with get_default_graph().name_scope(f"{type(self).__name__}ZeroState"):
            sizes = flatten(self.state_size)
            return pack_sequence_as(self.state_size, [batch_zeros(batch_size, s, dtype) for s in sizes])

    def get_initial_state(self, inputs=None, batch_size=None, dtype=None):
        return self.zero_state(batch_size, dtype)

    def build_variables(self, input_shape, dtype):
        """Makes the cell's variables for inputs of `input_shape` (``[batch, depth]``) in its
        scope, as its first call would, without running it."""
        self._set_scope(None)
        graph = get_default_graph()
        with (
            variable_scope(self._scope, reuse=self._reuse, auxiliary_name_scope=False) as scope,
            graph.name_scope(scope.original_name_scope),
        ):
            if not self.built:
                if self.dtype is None:
                    self.dtype = _dtypes.as_dtype(dtype)
                self.build(as_shape(input_shape))
                self.built = True


def build_cell(cell, input_shape, dtype):
    """Makes `cell`'s variables (a cell object of TF's interface: one without
    ``build_variables`` is left to make them in its first call)."""
    if isinstance(cell, RNNCell):
        cell.build_variables(input_shape, dtype)


def _input_depth(input_shape, cell):
    depth = as_shape(input_shape)[-1]
    if depth is None:
        raise ValueError(
            f"{type(cell).__name__}: the inputs' last dimension must be known, got {input_shape}"
        )
    return depth


class BasicRNNCell(RNNCell):
    """`tf.nn.rnn_cell.BasicRNNCell`: ``output = new_state = activation([x, state] @ kernel + bias)``."""

    def __init__(self, num_units, activation=None, reuse=None, name=None, dtype=None, **kwargs):
        super().__init__(_reuse=reuse, name=name, dtype=dtype, **kwargs)
        self._num_units = num_units
        self._activation = get_activation(activation) or math_ops.tanh

    def _state_size_of(self):
        return self._num_units

    def _output_size_of(self):
        return self._num_units

    def build(self, input_shape):
        depth = _input_depth(input_shape, self)
        self._kernel = self.add_weight("kernel", [depth + self._num_units, self._num_units])
        self._bias = self.add_weight("bias", [self._num_units], initializer=zeros_initializer())

    def call(self, inputs, state):
        output = self._activation(bias_add(matmul(concat([inputs, state], 1), self._kernel), self._bias))
        return output, output


class GRUCell(RNNCell):
    """`tf.nn.rnn_cell.GRUCell`: gates ``r, u = sigmoid([x, h] @ gates/kernel + gates/bias)``
    (bias 1.0 by default), ``c = activation([x, r * h] @ candidate/kernel + candidate/bias)``,
    ``new_h = u * h + (1 - u) * c``."""

    def __init__(
        self,
        num_units,
        activation=None,
        reuse=None,
        kernel_initializer=None,
        bias_initializer=None,
        name=None,
        dtype=None,
        **kwargs,
    ):
        super().__init__(_reuse=reuse, name=name, dtype=dtype, **kwargs)
        self._num_units = num_units
        self._activation = get_activation(activation) or math_ops.tanh
        self._kernel_initializer = kernel_initializer
        self._bias_initializer = bias_initializer

    def _state_size_of(self):
        return self._num_units

    def _output_size_of(self):
        return self._num_units

    def build(self, input_shape):
        depth, n = _input_depth(input_shape, self), self._num_units
        gate_bias, candidate_bias = self._bias_initializer, self._bias_initializer
        if gate_bias is None:
            gate_bias, candidate_bias = constant_initializer(1.0), zeros_initializer()
        self._gate_kernel = self.add_weight(
            "gates/kernel", [depth + n, 2 * n], initializer=self._kernel_initializer
        )
        self._gate_bias = self.add_weight("gates/bias", [2 * n], initializer=gate_bias)
        self._candidate_kernel = self.add_weight(
            "candidate/kernel", [depth + n, n], initializer=self._kernel_initializer
        )
        self._candidate_bias = self.add_weight("candidate/bias", [n], initializer=candidate_bias)

    def call(self, inputs, state):
        gates = math_ops.sigmoid(
            bias_add(matmul(concat([inputs, state], 1), self._gate_kernel), self._gate_bias)
        )
        r, u = split(gates, 2, axis=1)
        candidate = bias_add(
            matmul(concat([inputs, r * state], 1), self._candidate_kernel), self._candidate_bias
        )
        c = self._activation(candidate)
        new_h = u * state + (1 - u) * c
        return new_h, new_h


class BasicLSTMCell(RNNCell):
    """`tf.nn.rnn_cell.BasicLSTMCell`: ``i, j, f, o = split([x, h] @ kernel + bias, 4)``,
    ``new_c = c * sigmoid(f + forget_bias) + sigmoid(i) * activation(j)``,
    ``new_h = activation(new_c) * sigmoid(o)``; the state an `LSTMStateTuple` ``(c, h)``, or
    ``concat([c, h], 1)`` when not `state_is_tuple`."""

    def __init__(
        self,
        num_units,
        forget_bias=1.0,
        state_is_tuple=True,
        activation=None,
        reuse=None,
        name=None,
        dtype=None,
        **kwargs,
    ):
        super().__init__(_reuse=reuse, name=name, dtype=dtype, **kwargs)
        self._num_units = num_units
        self._forget_bias = forget_bias
        self._state_is_tuple = state_is_tuple
        self._activation = get_activation(activation) or math_ops.tanh

    def _state_size_of(self):
        n = self._num_units
        return LSTMStateTuple(n, n) if self._state_is_tuple else 2 * n

    def _output_size_of(self):
        return self._num_units

    def build(self, input_shape):
        depth, n = _input_depth(input_shape, self), self._num_units
        self._kernel = self.add_weight("kernel", [depth + n, 4 * n])
        self._bias = self.add_weight("bias", [4 * n], initializer=zeros_initializer())

    def call(self, inputs, state):
        c, h = state if self._state_is_tuple else split(state, 2, axis=1)
        gates = bias_add(matmul(concat([inputs, h], 1), self._kernel), self._bias)
        i, j, f, o = split(gates, 4, axis=1)
        forget = math_ops.sigmoid(f + math_ops.cast(self._forget_bias, f.dtype))
        new_c = c * forget + math_ops.sigmoid(i) * self._activation(j)
        new_h = self._activation(new_c) * math_ops.sigmoid(o)
        new_state = LSTMStateTuple(new_c, new_h) if self._state_is_tuple else concat([new_c, new_h], 1)
        return new_h, new_state


class LSTMCell(RNNCell):
    """`tf.nn.rnn_cell.LSTMCell`: `BasicLSTMCell`'s step with an `initializer` for its kernel,
    optional peepholes (``w_f_diag``, ``w_i_diag``, ``w_o_diag``), `cell_clip`, and a
    projection of the output to `num_proj` units (``projection/kernel``, `proj_clip`)."""

    def __init__(
        self,
        num_units,
        use_peepholes=False,
        cell_clip=None,
        initializer=None,
        num_proj=None,
        proj_clip=None,
        num_unit_shards=None,
        num_proj_shards=None,
        forget_bias=1.0,
        state_is_tuple=True,
        activation=None,
        reuse=None,
        name=None,
        dtype=None,
        **kwargs,
    ):
        super().__init__(_reuse=reuse, name=name, dtype=dtype, **kwargs)
        if num_unit_shards is not None or num_proj_shards is not None:
            raise ValueError(
                "LSTMCell: num_unit_shards / num_proj_shards are not supported; use a partitioner"
            )
        self._num_units, self._num_proj = num_units, num_proj
        self._use_peepholes, self._cell_clip, self._proj_clip = use_peepholes, cell_clip, proj_clip
        self._initializer = initializer
        self._forget_bias = forget_bias
        self._state_is_tuple = state_is_tuple
        self._activation = get_activation(activation) or math_ops.tanh

    def _state_size_of(self):
        n, m = self._num_units, self._num_proj or self._num_units
        return LSTMStateTuple(n, m) if self._state_is_tuple else n + m

    def _output_size_of(self):
        return self._num_proj or self._num_units

    def build(self, input_shape):
        depth, n = _input_depth(input_shape, self), self._num_units
        init = self._initializer
        self._kernel = self.add_weight("kernel", [depth + (self._num_proj or n), 4 * n], initializer=init)
        self._bias = self.add_weight("bias", [4 * n], initializer=zeros_initializer())
        if self._use_peepholes:
            self._diag = [self.add_weight(f"w_{g}_diag", [n], initializer=init) for g in "fio"]
        if self._num_proj is not None:
            self._proj_kernel = self.add_weight("projection/kernel", [n, self._num_proj], initializer=init)

    def call(self, inputs, state):
        sigmoid = math_ops.sigmoid
        n = self._num_units
        c_prev, m_prev = state if self._state_is_tuple else split(state, [n, self._num_proj or n], axis=1)
        lstm_matrix = bias_add(matmul(concat([inputs, m_prev], 1), self._kernel), self._bias)
        i, j, f, o = split(lstm_matrix, 4, axis=1)
        if self._use_peepholes:
            w_f, w_i, w_o = self._diag
            c = sigmoid(f + self._forget_bias + w_f * c_prev) * c_prev + sigmoid(
                i + w_i * c_prev
            ) * self._activation(j)
        else:
            c = sigmoid(f + self._forget_bias) * c_prev + sigmoid(i) * self._activation(j)
        if self._cell_clip is not None:
            c = clip_by_value(c, -self._cell_clip, self._cell_clip)
        m = sigmoid(o + w_o * c if self._use_peepholes else o) * self._activation(c)
        if self._num_proj is not None:
            m = matmul(m, self._proj_kernel)
            if self._proj_clip is not None:
                m = clip_by_value(m, -self._proj_clip, self._proj_clip)
        return m, (LSTMStateTuple(c, m) if self._state_is_tuple else concat([c, m], 1))


class MultiRNNCell(RNNCell):
    """`tf.nn.rnn_cell.MultiRNNCell`: `cells` stacked, each one's output the next one's input;
    cell ``i``'s variables under ``multi_rnn_cell/cell_<i>/``; the state a tuple of theirs (or
    their concatenation when not `state_is_tuple`)."""

    def __init__(self, cells, state_is_tuple=True):
        super().__init__()
        if not cells:
            raise ValueError("MultiRNNCell: must specify at least one cell")
        self._cells = list(cells)
        self._state_is_tuple = state_is_tuple
        if not state_is_tuple and any(isinstance(c.state_size, tuple) for c in self._cells):
            raise ValueError(
                "MultiRNNCell: some cells return tuples of states but state_is_tuple is False; "
                "pass state_is_tuple=True"
            )

    def _state_size_of(self):
        sizes = tuple(cell.state_size for cell in self._cells)
        return sizes if self._state_is_tuple else sum(sizes)

    def _output_size_of(self):
        return self._cells[-1].output_size

    def zero_state(self, batch_size, dtype):
        if not self._state_is_tuple:
            return super().zero_state(batch_size, dtype)
        with get_default_graph().name_scope("MultiRNNCellZeroState"):
            return tuple(cell.zero_state(batch_size, dtype) for cell in self._cells)

    @property
    def trainable_weights(self):
        return [w for cell in self._cells for w in cell.trainable_weights]

    trainable_variables = trainable_weights

    def build(self, input_shape):
        shape = as_shape(input_shape)
        for i, cell in enumerate(self._cells):
            with variable_scope(f"cell_{i}"):
                build_cell(cell, shape, self.dtype)
            shape = as_shape([shape[0], cell.output_size])

    def call(self, inputs, state):
        new_states, position = [], 0
        for i, cell in enumerate(self._cells):
            with variable_scope(f"cell_{i}"):
                if self._state_is_tuple:
                    cur_state = state[i]
                else:
                    cur_state = state[:, position : position + cell.state_size]
                    position += cell.state_size
                inputs, new_state = cell(inputs, cur_state)
                new_states.append(new_state)
        return inputs, (tuple(new_states) if self._state_is_tuple else concat(new_states, 1))


class DropoutWrapper(RNNCell):
    """`tf.nn.rnn_cell.DropoutWrapper`: dropout on a cell's inputs, outputs and state (TF's
    ``tf.nn.dropout`` with `input_keep_prob`, `output_keep_prob`, `state_keep_prob`; a keep
    probability of 1 adds nothing). Its cell's variables keep their names (no scope of its own).
    Drawn in a `dynamic_rnn`'s loop, the masks make the loop's gradient refused: nbdist's loop
    gradient recomputes the body (``variational_recurrent`` masks are not supported)."""

    def __init__(
        self,
        cell,
        input_keep_prob=1.0,
        output_keep_prob=1.0,
        state_keep_prob=1.0,
        variational_recurrent=False,
        input_size=None,
        dtype=None,
        seed=None,
        dropout_state_filter_visitor=None,
    ):
        super().__init__(dtype=dtype)
        del input_size
        if variational_recurrent or dropout_state_filter_visitor is not None:
            raise ValueError(
                "DropoutWrapper: variational_recurrent and dropout_state_filter_visitor are not supported"
            )
        for what, p in (("input", input_keep_prob), ("output", output_keep_prob), ("state", state_keep_prob)):
            if not isinstance(p, Tensor) and not 0.0 < float(p) <= 1.0:
                raise ValueError(f"DropoutWrapper: Parameter {what}_keep_prob must be between 0 and 1: {p}")
        self.cell = cell
        self._keep = (input_keep_prob, output_keep_prob, state_keep_prob)
        self._seed = seed

    def _state_size_of(self):
        return self.cell.state_size

    def _output_size_of(self):
        return self.cell.output_size

    def zero_state(self, batch_size, dtype):
        return self.cell.zero_state(batch_size, dtype)

    @property
    def trainable_weights(self):
        return self.cell.trainable_weights

    trainable_variables = trainable_weights

    def build_variables(self, input_shape, dtype):
        build_cell(self.cell, input_shape, dtype)

    def _dropout(self, values, keep_prob, salt):
        if not isinstance(keep_prob, Tensor) and float(keep_prob) == 1.0:
            return values
        seed = None if self._seed is None else self._seed + salt
        flat = [nn_ops.dropout(v, keep_prob=keep_prob, seed=seed) for v in flatten(values)]
        return pack_sequence_as(values, flat)

    def __call__(self, inputs, state, scope=None):
        inputs = self._dropout(inputs, self._keep[0], 0)
        output, new_state = self.cell(inputs, state, scope=scope)
        new_state = self._dropout(new_state, self._keep[2], 1)
        return self._dropout(output, self._keep[1], 2), new_state
