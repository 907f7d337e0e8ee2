"""`tf.nn.static_bidirectional_rnn`, `tf.nn.static_state_saving_rnn` and `tf.nn.raw_rnn`, as TF
builds them. The bidirectional RNN's backward direction runs on the inputs reversed in time
(each sequence's first `sequence_length` steps, `tf.reverse_sequence` on the stacked steps), its
outputs reversed back and concatenated to the forward ones; the state-saving RNN reads its
initial state from a state saver (any object with ``state(name)`` and ``save_state(name,
value)``) and saves its final state before its last output and state can be read; `raw_rnn` is
TF's `tf.while_loop` around the cell and the user's `loop_fn`, emitting into TensorArrays (the
cell's variables made before the loop, as `dynamic_rnn` makes them).
"""

from nbdist.graph import dtypes as _dtypes
from nbdist.graph.graph import control_dependencies
from nbdist.graph.tensor_shape import TensorShape
from nbdist.ops import math_ops
from nbdist.ops.array_ops import zeros
from nbdist.ops.cast_select_ops import where
from nbdist.ops.concat_slice_ops import concat, stack, unstack
from nbdist.ops.constant_op import convert_to_tensor
from nbdist.ops.nest import flatten, pack_sequence_as, same_structure
from nbdist.ops.reduction_ops import reduce_all
from nbdist.ops.reshape_ops import reshape
from nbdist.ops.rnn_cell_ops import build_cell
from nbdist.ops.rnn_ops import static_rnn
from nbdist.ops.shape_ops import shape
from nbdist.ops.tensor_array_ops import TensorArray
from nbdist.ops.tile_ops import reverse_sequence
from nbdist.ops.unary_ops import identity
from nbdist.ops.variable_scope import variable_scope
from nbdist.ops.while_ops import while_loop

__all__ = ["raw_rnn", "static_bidirectional_rnn", "static_state_saving_rnn"]


def _is_nested(value):
    return isinstance(value, (list, tuple, dict))


def _check_cell(name, cell):
    for attr in ("output_size", "state_size", "zero_state"):
        if not hasattr(cell, attr):
            raise TypeError(
                f"The argument {name!r} ({cell!r}) is not an RNNCell: '{attr}' property is missing."
            )


def _reverse_seq(input_seq, lengths):
    """TF's `_reverse_seq`: a list of steps reversed (each sequence within its length)."""
    if lengths is None:
        return list(reversed(input_seq))
    flat_steps = [flatten(step) for step in input_seq]
    flat_results = [[] for _ in input_seq]
    for sequence in zip(*flat_steps, strict=True):
        joined = stack([convert_to_tensor(s) for s in sequence])
        reversed_joined = reverse_sequence(joined, lengths, seq_axis=0, batch_axis=1)
        for result, step in zip(flat_results, unstack(reversed_joined), strict=True):
            step.set_shape(convert_to_tensor(sequence[0]).shape)
            result.append(step)
    return [pack_sequence_as(step, flat) for step, flat in zip(input_seq, flat_results, strict=True)]


def static_bidirectional_rnn(
    cell_fw,
    cell_bw,
    inputs,
    initial_state_fw=None,
    initial_state_bw=None,
    dtype=None,
    sequence_length=None,
    scope=None,
):
    """`tf.nn.static_bidirectional_rnn`: `static_rnn` forward (scope ``fw``) and backward (scope
    ``bw``) under ``bidirectional_rnn``.

    Returns:
        ``(outputs, output_state_fw, output_state_bw)``: each output the forward and (reversed
        back) backward outputs of its step, concatenated along depth.

    Raises:
        TypeError: a cell is not an RNNCell, or `inputs` is not a list; ValueError: it is empty.
    """
    _check_cell("cell_fw", cell_fw)
    _check_cell("cell_bw", cell_bw)
    if not _is_nested(inputs):
        raise TypeError("inputs must be a sequence")
    if not inputs:
        raise ValueError("inputs must not be empty")
    with variable_scope(scope or "bidirectional_rnn"):
        with variable_scope("fw") as fw_scope:
            output_fw, state_fw = static_rnn(
                cell_fw, inputs, initial_state_fw, dtype, sequence_length, scope=fw_scope
            )
        with variable_scope("bw") as bw_scope:
            reversed_inputs = _reverse_seq(inputs, sequence_length)
            tmp, state_bw = static_rnn(
                cell_bw, reversed_inputs, initial_state_bw, dtype, sequence_length, scope=bw_scope
            )
    output_bw = _reverse_seq(tmp, sequence_length)
    flat = tuple(concat([fw, bw], 1) for fw, bw in zip(flatten(output_fw), flatten(output_bw), strict=True))
    return pack_sequence_as(output_fw, flat), state_fw, state_bw


def static_state_saving_rnn(cell, inputs, state_saver, state_name, sequence_length=None, scope=None):
    """`tf.nn.static_state_saving_rnn`: `static_rnn` starting from ``state_saver.state(name)``
    and saving its final state with ``state_saver.save_state(name, value)``; the last output and
    the final state are read only after the save.

    Args:
        state_name: a name, or names nested as the cell's `state_size` (e.g. an LSTM's pair).

    Raises:
        ValueError: `state_name` nested unlike `cell.state_size`.
    """
    state_size = cell.state_size
    state_is_tuple = _is_nested(state_size)
    if state_is_tuple != _is_nested(state_name):
        raise ValueError(
            "Argument `state_name` should be the same type as `cell.state_size`. Received: "
            f"state_name={state_name!s}, cell.state_size={state_size!s}."
        )
    if state_is_tuple:
        names, sizes = flatten(state_name), flatten(state_size)
        if len(names) != len(sizes):
            raise ValueError(
                "Number of elements in argument `state_name` and `cell.state_size` are mismatched. "
                f"Received state_name={state_name} with {len(names)} elements and cell.state_size="
                f"{cell.state_size} with {len(sizes)} elements."
            )
        initial_state = pack_sequence_as(state_size, [state_saver.state(s) for s in names])
    else:
        initial_state = state_saver.state(state_name)
    outputs, state = static_rnn(
        cell, inputs, initial_state=initial_state, sequence_length=sequence_length, scope=scope
    )
    if state_is_tuple:
        flat_state = flatten(state)
        save = [state_saver.save_state(n, s) for n, s in zip(flatten(state_name), flat_state, strict=True)]
    else:
        save = [state_saver.save_state(state_name, state)]
    with control_dependencies(save):
        last = outputs[-1]
        outputs[-1] = pack_sequence_as(last, [identity(o) for o in flatten(last)])
        state = (
            pack_sequence_as(state, [identity(s) for s in flat_state]) if state_is_tuple else identity(state)
        )
    return outputs, state


def _assert_same_structure(a, b, what):
    if not same_structure(a, b):
        raise ValueError(f"raw_rnn: {what} do not have the same nested structure: {a!r} and {b!r}")


def _where_finished(finished, current, candidate):
    """TF's `_copy_some_through`: a finished row keeps `current`; TensorArrays and scalars pass."""

    def copy(cur, cand):
        if isinstance(cur, TensorArray) or cur.shape.ndims == 0:
            return cand
        mask = reshape(finished, [-1] + [1] * (cur.shape.ndims - 1))
        return where(mask, cur, cand)

    flat = [copy(c, n) for c, n in zip(flatten(current), flatten(candidate), strict=True)]
    return pack_sequence_as(candidate, flat)


def _emit_arrays(emit_structure, cell, flat_state, batch, static_batch):
    """The emit TensorArrays (dynamic size) and the zero emits of a finished row."""
    if emit_structure is not None:
        flat = flatten(emit_structure)
        sizes = [e.shape.as_list() if e.shape.is_fully_defined() else shape(e) for e in flat]  # (no batch)
        dtypes = [e.dtype for e in flat]
    else:
        emit_structure = cell.output_size
        sizes = [[s] if isinstance(s, int) else list(s) for s in flatten(emit_structure)]
        dtypes = [flat_state[0].dtype] * len(sizes)
    arrays, zero = [], []
    for i, (size, dtype) in enumerate(zip(sizes, dtypes, strict=True)):
        known = isinstance(size, list)
        element = (
            TensorShape([static_batch, *size]) if known else TensorShape([static_batch]).concatenate(None)
        )
        arrays.append(
            TensorArray(dtype, size=0, dynamic_size=True, element_shape=element, name=f"rnn_output_{i}")
        )
        zero.append(zeros(concat([[batch], size], 0) if not known else [batch, *size], dtype))
    return pack_sequence_as(emit_structure, arrays), pack_sequence_as(emit_structure, zero)


def raw_rnn(cell, loop_fn, parallel_iterations=None, swap_memory=False, scope=None):
    """`tf.nn.raw_rnn`: `cell` run in a `tf.while_loop` that `loop_fn` drives.

    ``loop_fn(time, cell_output, cell_state, loop_state)`` returns ``(elements_finished,
    next_input, next_cell_state, emit_output, next_loop_state)``; it is called once with
    ``time = 0`` and None for the rest (giving the initial input, state and emit structure),
    then after each step. The loop runs until every element is finished; a finished row emits
    zeros and keeps its state.

    Returns:
        ``(emit_ta, final_state, final_loop_state)``: `emit_ta` TensorArrays of the emitted
        values (``emit_ta.stack()`` is ``[time, batch, ...]``).

    Raises:
        TypeError: `cell` is not an RNNCell, or `loop_fn` not callable.
    """
    del parallel_iterations, swap_memory
    _check_cell("cell", cell)
    if not callable(loop_fn):
        raise TypeError(f"Argument `loop_fn` must be a callable. Received: {loop_fn}.")
    with variable_scope(scope or "rnn"):
        time = convert_to_tensor(0, dtype=_dtypes.int32)
        finished, next_input, initial_state, emit_structure, init_loop_state = loop_fn(time, None, None, None)
        flat_input = [convert_to_tensor(x) for x in flatten(next_input)]
        next_input = pack_sequence_as(next_input, flat_input)
        loop_state = (
            init_loop_state if init_loop_state is not None else convert_to_tensor(0, dtype=_dtypes.int32)
        )
        static_batch = flat_input[0].shape[0] if flat_input[0].shape.ndims else None
        for x in flat_input[1:]:
            other = x.shape[0] if x.shape.ndims else None
            if None not in (static_batch, other) and other != static_batch:
                raise ValueError(f"raw_rnn: the inputs' batch sizes differ: {static_batch} and {other}")
        batch = static_batch if static_batch is not None else shape(flat_input[0])[0]
        _assert_same_structure(initial_state, cell.state_size, "initial_state and cell.state_size")
        flat_state = [convert_to_tensor(s) for s in flatten(initial_state)]
        state = pack_sequence_as(initial_state, flat_state)
        build_cell(cell, flat_input[0].shape, flat_state[0].dtype)
        emit_ta, zero_emit = _emit_arrays(emit_structure, cell, flat_state, batch, static_batch)

        def condition(unused_time, elements_finished, *_):
            return math_ops.logical_not(reduce_all(elements_finished))

        def body(time, elements_finished, current_input, emit_ta, state, loop_state):
            next_output, cell_state = cell(current_input, state)
            next_time = time + 1
            next_finished, next_input, next_state, emit_output, next_loop_state = loop_fn(
                next_time, next_output, cell_state, loop_state
            )
            _assert_same_structure(state, next_state, "the state and loop_fn's next_cell_state")
            _assert_same_structure(current_input, next_input, "the input and loop_fn's next_input")
            _assert_same_structure(emit_ta, emit_output, "the emit structure and loop_fn's emit_output")
            loop_state = loop_state if next_loop_state is None else next_loop_state
            emit_output = _where_finished(elements_finished, zero_emit, emit_output)
            next_state = _where_finished(elements_finished, state, next_state)
            flat_ta = [
                ta.write(time, e) for ta, e in zip(flatten(emit_ta), flatten(emit_output), strict=True)
            ]
            emit_ta = pack_sequence_as(emit_ta, flat_ta)
            elements_finished = math_ops.logical_or(elements_finished, next_finished)
            return next_time, elements_finished, next_input, emit_ta, next_state, loop_state

        finished = convert_to_tensor(finished, dtype=_dtypes.bool)
        returned = while_loop(condition, body, [time, finished, next_input, emit_ta, state, loop_state])
        emit_ta, final_state, final_loop_state = returned[-3:]
        return emit_ta, final_state, final_loop_state if init_loop_state is not None else None
