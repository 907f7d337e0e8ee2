"""Reverse-mode differentiation that adds gradient ops *to the graph*.

`gradients(ys, xs)` walks back from `ys` to `xs` over the ops between them, calls each
op type's registered gradient function (which builds ops), and sums the gradients that
reach a tensor along several paths with `add_n`. Because gradients are ordinary ops,
they are placed, partitioned and drawn like the forward ops; with
``colocate_gradients_with_ops=True`` each one is placed with its forward op.

A gradient may be an `IndexedSlices` (`tf.gather`'s, with respect to its params): it flows
on through the gradient functions registered with ``indexed_slices=True`` (``Identity``, the
stitch of a sharded lookup) and is densified before any other one. Several contributions to
one tensor are concatenated into one `IndexedSlices` when all are sparse (an embedding read
twice), else summed densely with `add_n` (the rule of the TF whose ``compat.v1`` the parity
tests run).
"""

import collections
import contextlib
import enum

from nbdist.graph import dtypes as _dtypes
from nbdist.graph.graph import Tensor, graph_element
from nbdist.ops import array_ops, math_ops, registry
from nbdist.ops.constant_op import convert_to_tensor
from nbdist.ops.indexed_slices import IndexedSlices


class AggregationMethod:
    """`tf.AggregationMethod`: how `gradients` sums a tensor's gradient contributions. nbdist
    sums them with one `add_n` whichever is chosen (the values are the same)."""

    ADD_N = 0
    DEFAULT = ADD_N
    EXPERIMENTAL_TREE = 1
    EXPERIMENTAL_ACCUMULATE_N = 2


class UnconnectedGradients(enum.Enum):
    """`tf.UnconnectedGradients`: the gradient of an x that `ys` do not depend on: None or zeros."""

    NONE = "none"
    ZERO = "zero"


def _as_tensor_list(values, what):
    if isinstance(values, (list, tuple)):
        out = list(values)
    else:
        out = [values]
    result = []
    for v in out:
        if what == "ys" and hasattr(v, "_as_graph_element") and hasattr(v, "value"):
            v = v.value()  # a variable as ys means its value
        if what == "ys" and isinstance(v, IndexedSlices):
            v = convert_to_tensor(v)  # a sparse y (a gradient, for second order) is differentiated dense
        v = graph_element(v)
        if not isinstance(v, Tensor):
            raise TypeError(f"tf.gradients: {what} must be tensors or variables, got {v!r}")
        result.append(v)
    return result


def _ops_between(ys, xs):
    """Ops on some path from an x to a y, and for each op the count of its consumers there."""
    reach_from_x = set()
    queue = collections.deque(x.op for x in xs)
    consumers = collections.defaultdict(list)
    for op in ys[0].graph.get_operations():
        for t in op.inputs:
            consumers[t.op].append(op)
    while queue:
        op = queue.popleft()
        if op in reach_from_x:
            continue
        reach_from_x.add(op)
        queue.extend(consumers[op])
    between = set()
    queue = collections.deque(y.op for y in ys)
    while queue:
        op = queue.popleft()
        if op in between or op not in reach_from_x:
            continue
        between.add(op)
        queue.extend(t.op for t in op.inputs)
    return between


def gradients(
    ys,
    xs,
    grad_ys=None,
    name="gradients",
    colocate_gradients_with_ops=False,
    gate_gradients=False,
    aggregation_method=None,
    stop_gradients=None,
    unconnected_gradients=UnconnectedGradients.NONE,
):
    """Symbolic partial derivatives of ``sum(ys)`` with respect to each of `xs`.

    Args:
        ys: a tensor or list of tensors to differentiate.
        xs: a tensor, variable or list of them.
        grad_ys: optional initial gradients, one per y (default: ones).
        colocate_gradients_with_ops: place each gradient op with its forward op.
        aggregation_method: an `AggregationMethod` value (all give the same sums here).
        stop_gradients: tensors treated as constants.
        unconnected_gradients: ``"none"`` (None for an x that `ys` do not depend on) or
            ``"zero"`` (zeros shaped like it), or an `UnconnectedGradients`.

    Returns:
        A list with one Tensor, `IndexedSlices` (where TF gives one: a gathered `x`) or None
        (when `x` does not affect `ys`) per x.

    Raises:
        LookupError: if an op on the path has no registered gradient.
        ValueError: an unknown `aggregation_method` or `unconnected_gradients`.
    """
    unconnected_gradients = _check_options(aggregation_method, unconnected_gradients)
    ys = _as_tensor_list(ys, "ys")
    xs = _as_tensor_list(xs, "xs")
    stop = {id(t) for t in _as_tensor_list(stop_gradients, "stop_gradients")} if stop_gradients else set()
    graph = ys[0].graph
    if grad_ys is None:
        grad_ys = [None] * len(ys)
    elif not isinstance(grad_ys, (list, tuple)):
        grad_ys = [grad_ys]
    if len(grad_ys) != len(ys):
        raise ValueError(f"tf.gradients: {len(grad_ys)} grad_ys for {len(ys)} ys")

    with graph.name_scope(name):
        between = _ops_between(ys, xs)
        # tensor -> its gradient contributions as (consumer op id, gradient): summed in the
        # consumers' creation order, as TF does (it shows in a concatenated IndexedSlices).
        pending = collections.defaultdict(list)
        for y, gy in zip(ys, grad_ys):
            with graph.colocate_with(y.op) if colocate_gradients_with_ops else contextlib.nullcontext():
                g = (
                    math_ops.ones_like(y, name="grad_ys")
                    if gy is None
                    else convert_to_tensor(gy, dtype=y.dtype)
                )
            pending[y].append((-1, g))

        x_ids = {id(x) for x in xs}
        created = {op: i for i, op in enumerate(graph.get_operations())}
        for op in sorted(between, key=created.__getitem__, reverse=True):
            out_grads = [_aggregate(pending.get(t), graph) for t in op.outputs]
            for t, g in zip(op.outputs, out_grads):
                if g is not None:
                    pending[t] = [(-1, g)]
            if all(g is None for g in out_grads) or any(id(t) in stop for t in op.outputs):
                continue
            if id(op.outputs[0]) in x_ids and len(op.outputs) == 1 and not op.inputs:
                continue
            grad_type = op.attrs.get("_gradient_op_type", op.type)  # (Graph.gradient_override_map)
            grad_fn = registry.get_gradient(grad_type)
            if grad_fn is None:
                continue
            out_grads = [
                g if g is not None else math_ops.zeros_like(t) for g, t in zip(out_grads, op.outputs)
            ]
            scope = graph.colocate_with(op) if colocate_gradients_with_ops else contextlib.nullcontext()
            with scope, graph.name_scope(f"{op.name}_grad"):
                if not registry.lookup(grad_type).grad_takes_indexed_slices:
                    out_grads = [convert_to_tensor(g) for g in out_grads]
                in_grads = grad_fn(op, *out_grads)
            if not isinstance(in_grads, (list, tuple)):  # (TF takes one gradient for one input)
                in_grads = [in_grads]
            if len(in_grads) != len(op.inputs):
                raise ValueError(
                    f"gradient of {op.type} returned {len(in_grads)} values for {len(op.inputs)} inputs"
                )
            for t, g in zip(op.inputs, in_grads):
                if g is not None and t.op in between and id(t) not in stop:
                    pending[t].append((created[op], g))
        grads = [_aggregate(pending.get(x), graph) for x in xs]
        if unconnected_gradients is UnconnectedGradients.ZERO:
            grads = [math_ops.zeros_like(x) if g is None else g for g, x in zip(grads, xs)]
        return grads


def _check_options(aggregation_method, unconnected_gradients):
    """The `UnconnectedGradients` asked for; ValueError for an unknown option, as TF's."""
    if aggregation_method not in (None, 0, 1, 2):  # (AggregationMethod's values)
        raise ValueError(
            f"Invalid `aggregation_method` specified {aggregation_method}. Accepted values are [0, 1, 2]."
        )
    try:
        return UnconnectedGradients(unconnected_gradients)
    except ValueError:
        raise ValueError(f"Unknown value for unconnected_gradients: {unconnected_gradients!r}") from None


def _aggregate(grads, graph):
    """The sum of a tensor's gradient contributions: dense if all are, else one `IndexedSlices`."""
    if not grads:
        return None
    grads = [g for _, g in sorted(grads, key=lambda pair: pair[0])]
    if len(grads) == 1:
        return grads[0]
    if not all(isinstance(g, IndexedSlices) for g in grads):
        # Some are dense: the sum is dense (TF 2.x's compat.v1 rule; TF 1.15 made all sparse).
        return math_ops.add_n([convert_to_tensor(g) for g in grads])
    slices = _as_indexed_slices_list(grads)
    return IndexedSlices(
        array_ops.concat([s.values for s in slices], 0),
        array_ops.concat([s.indices for s in slices], 0),
        slices[0].dense_shape,
    )


def _as_indexed_slices_list(grads):
    """The `IndexedSlices` with one index dtype (int64 if they differ, TF's rule)."""
    slices = list(grads)
    if len({s.indices.dtype for s in slices}) > 1:
        slices = [
            IndexedSlices(s.values, math_ops.cast(s.indices, _dtypes.int64), s.dense_shape) for s in slices
        ]
    return slices
