"""`tf.nn.static_bidirectional_rnn` and `tf.nn.static_state_saving_rnn`, over `static_rnn` as TF
builds them: the backward direction runs on the inputs reversed in time (each sequence's first
`sequence_length` steps, `tf.reverse_sequence` on the stacked steps), its outputs reversed back
and concatenated to the forward ones; the state-saving RNN reads its initial state from a state
saver (any object with ``state(name)`` and ``save_state(name, value)``) and saves its final state
before its last output and state can be read."""

from nbdist.graph.graph import control_dependencies
from nbdist.ops.concat_slice_ops import concat, stack, unstack
from nbdist.ops.constant_op import convert_to_tensor
from nbdist.ops.nest import flatten, pack_sequence_as
from nbdist.ops.rnn_ops import static_rnn
from nbdist.ops.tile_ops import reverse_sequence
from nbdist.ops.unary_ops import identity
from nbdist.ops.variable_scope import variable_scope

__all__ = ["static_bidirectional_rnn", "static_state_saving_rnn"]


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
