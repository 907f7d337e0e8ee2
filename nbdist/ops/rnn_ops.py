"""`tf.nn.dynamic_rnn`, `static_rnn` and `bidirectional_dynamic_rnn` over `tf.nn.rnn_cell`'s cells.

`dynamic_rnn` is a `tf.scan` (one functional ``While`` op) over the time indices: the cell's
variables are made first, in ``rnn/<cell>/`` as TF names them (`rnn_cell_ops.build_cell`), and
the loop's body only reads them, so their gradients flow out of the loop. The loop carries the
output and the state, each step slicing its input from the captured inputs; its stacked outputs
are the outputs, the last stacked state the final state. With `sequence_length`, steps at or
past a sequence's length give zeros and copy the state through (TF's `_copy_some_through`), so
the values and gradients are TF's.
"""

from nbdist.graph import dtypes as _dtypes
from nbdist.ops import math_ops
from nbdist.ops.cast_select_ops import where
from nbdist.ops.concat_slice_ops import concat
from nbdist.ops.constant_op import convert_to_tensor
from nbdist.ops.nest import flatten, pack_sequence_as
from nbdist.ops.reduction_ops import gather
from nbdist.ops.reshape_ops import expand_dims, reshape, reverse, transpose
from nbdist.ops.rnn_cell_ops import batch_zeros, build_cell
from nbdist.ops.shape_ops import shape
from nbdist.ops.unary_ops import identity
from nbdist.ops.variable_scope import variable_scope
from nbdist.ops.while_ops import scan

__all__ = ["bidirectional_dynamic_rnn", "dynamic_rnn", "static_rnn"]


def _swap_batch_time(x):
    return transpose(x, [1, 0, *range(2, x.shape.ndims)])


def _dim(x, axis):
    static = x.shape[axis]
    return static if static is not None else shape(x)[axis]


def _initial_state(cell, initial_state, batch_size, dtype):
    if initial_state is not None:
        return initial_state
    if dtype is None:
        raise ValueError("If there is no initial_state, you must give a dtype.")
    return cell.zero_state(batch_size, dtype)


def _sequence_length(sequence_length):
    if sequence_length is None:
        return None
    length = math_ops.cast(convert_to_tensor(sequence_length), _dtypes.int32)
    if length.shape.ndims not in (None, 1):
        raise ValueError(
            f"sequence_length must be a vector of length batch_size, but saw shape: {length.shape}"
        )
    return identity(length, name="sequence_length")


def _copy_some_through(finished, zero_output, output, state, new_state):
    """Past a sequence's end (`finished`, ``[batch]``): a zero output and the old state."""
    mask = expand_dims(finished, 1)
    output = where(mask, zero_output, output)
    flat = [where(mask, old, new) for old, new in zip(flatten(state), flatten(new_state))]
    return output, pack_sequence_as(new_state, flat)


def _check_cell(cell):
    for attr in ("output_size", "state_size", "zero_state"):
        if not hasattr(cell, attr):
            raise TypeError(f"cell must be an instance of RNNCell (tf.nn.rnn_cell.*), got {cell!r}")


def dynamic_rnn(
    cell,
    inputs,
    sequence_length=None,
    initial_state=None,
    dtype=None,
    parallel_iterations=None,
    swap_memory=False,
    time_major=False,
    scope=None,
):
    """`tf.nn.dynamic_rnn`: `cell` run over the time steps of `inputs`.

    Args:
        cell: a `tf.nn.rnn_cell` cell.
        inputs: ``[batch, time, depth]`` (``[time, batch, depth]`` when `time_major`), or a nested
            structure of such tensors; `depth` must be known.
        sequence_length: ``[batch]`` int lengths: past them outputs are zeros and the state is
            copied through.
        initial_state: the cell's initial state; else `dtype` is required (zeros).
        parallel_iterations, swap_memory: accepted; iterations run one after another.
        scope: the variable scope, default ``"rnn"``.

    Returns:
        ``(outputs, state)``: outputs ``[batch, time, output_size]`` (time-major when
        `time_major`), the final state in the structure of `cell.state_size`.

    Raises:
        ValueError: no `initial_state` and no `dtype`, or inputs of unknown depth.
    """
    del parallel_iterations, swap_memory
    _check_cell(cell)
    with variable_scope(scope or "rnn"):
        flat = [convert_to_tensor(x) for x in flatten(inputs)]
        if not time_major:
            flat = [_swap_batch_time(x) for x in flat]
        batch_size = _dim(flat[0], 1)
        state = _initial_state(cell, initial_state, batch_size, dtype)
        dtype = flatten(state)[0].dtype
        build_cell(cell, flat[0].shape[1:], dtype)
        length = _sequence_length(sequence_length)
        zero_output = batch_zeros(batch_size, cell.output_size, dtype)
        times = math_ops.range(_dim(flat[0], 0))

        def step(carried, time):
            # A strided slice of the captured inputs, not scan's gather of its elems: its gradient
            # is dense at any time length (a gather's, of unknown length, warns when densified).
            old_state = carried[1]
            output, new_state = cell(pack_sequence_as(inputs, [x[time] for x in flat]), old_state)
            if length is not None:
                output, new_state = _copy_some_through(
                    math_ops.greater_equal(time, length), zero_output, output, old_state, new_state
                )
            return output, new_state

        outputs, states = scan(step, times, initializer=(zero_output, state))
        final_state = pack_sequence_as(state, [s[-1] for s in flatten(states)])
        steps, rest = flat[0].shape.as_list()[0], outputs.shape.as_list()[1:]
        if steps is not None and rest.count(None) <= 1:  # TF's static shape: the inputs' steps
            outputs = reshape(outputs, [steps, *(-1 if d is None else d for d in rest)])
        if not time_major:
            outputs = _swap_batch_time(outputs)
    return outputs, final_state


def static_rnn(cell, inputs, initial_state=None, dtype=None, sequence_length=None, scope=None):
    """`tf.nn.static_rnn`: `cell` run over a Python list of ``[batch, depth]`` inputs, one call
    per step (no loop op); returns ``(outputs list, final state)``. `sequence_length` as in
    `dynamic_rnn`.

    Raises:
        TypeError: `inputs` not a list or tuple; ValueError: it is empty, or no state nor dtype.
    """
    _check_cell(cell)
    if not isinstance(inputs, (list, tuple)):
        raise TypeError(f"inputs must be a sequence, got {type(inputs).__name__}")
    if not inputs:
        raise ValueError("inputs must not be empty")
    with variable_scope(scope or "rnn"):
        first = convert_to_tensor(flatten(inputs[0])[0])
        batch_size = _dim(first, 0)
        state = _initial_state(cell, initial_state, batch_size, dtype)
        length = _sequence_length(sequence_length)
        if length is not None:
            zero_output = batch_zeros(batch_size, cell.output_size, flatten(state)[0].dtype)
        outputs = []
        for time, x in enumerate(inputs):
            output, new_state = cell(x, state)
            if length is not None:
                finished = math_ops.greater_equal(convert_to_tensor(time, dtype=_dtypes.int32), length)
                output, new_state = _copy_some_through(finished, zero_output, output, state, new_state)
            outputs.append(output)
            state = new_state
    return outputs, state


def _reverse_sequence(x, lengths, time_major):
    """TF's ``reverse_sequence`` along time: each sequence's first `length` steps reversed."""
    if lengths is None:
        return reverse(x, [0 if time_major else 1])
    x_tm = x if time_major else _swap_batch_time(x)
    dims = shape(x_tm)
    steps = expand_dims(math_ops.range(dims[0]), 1)  # [time, 1]
    lengths = expand_dims(math_ops.cast(lengths, _dtypes.int32), 0)  # [1, batch]
    steps = steps + lengths * 0
    source = where(math_ops.less(steps, lengths), lengths - 1 - steps, steps)
    rows = source * dims[1] + expand_dims(math_ops.range(dims[1]), 0)
    static = x_tm.shape.as_list()
    known = None not in static[2:]  # static shapes where known (its gradient needs no warning)
    flat = reshape(x_tm, [-1, *static[2:]] if known else concat([convert_to_tensor([-1]), dims[2:]], 0))
    out = gather(flat, reshape(rows, [-1]))
    out = reshape(out, [-1 if d is None else d for d in static] if static.count(None) <= 1 else dims)
    return out if time_major else _swap_batch_time(out)


def bidirectional_dynamic_rnn(
    cell_fw,
    cell_bw,
    inputs,
    sequence_length=None,
    initial_state_fw=None,
    initial_state_bw=None,
    dtype=None,
    parallel_iterations=None,
    swap_memory=False,
    time_major=False,
    scope=None,
):
    """`tf.nn.bidirectional_dynamic_rnn`: `cell_fw` over `inputs` (scope ``fw``) and `cell_bw`
    over them reversed in time (each sequence's first `sequence_length` steps, scope ``bw``),
    under ``bidirectional_rnn``; returns ``((output_fw, output_bw), (state_fw, state_bw))``,
    the backward outputs reversed back to the inputs' order."""
    del parallel_iterations, swap_memory
    with variable_scope(scope or "bidirectional_rnn"):
        with variable_scope("fw") as fw_scope:
            output_fw, state_fw = dynamic_rnn(
                cell_fw,
                inputs,
                sequence_length,
                initial_state_fw,
                dtype,
                time_major=time_major,
                scope=fw_scope,
            )
        with variable_scope("bw") as bw_scope:
            flat = [
                _reverse_sequence(convert_to_tensor(x), sequence_length, time_major) for x in flatten(inputs)
            ]
            reversed_out, state_bw = dynamic_rnn(
                cell_bw,
                pack_sequence_as(inputs, flat),
                sequence_length,
                initial_state_bw,
                dtype,
                time_major=time_major,
                scope=bw_scope,
            )
        output_bw = _reverse_sequence(reversed_out, sequence_length, time_major)
    return (output_fw, output_bw), (state_fw, state_bw)
