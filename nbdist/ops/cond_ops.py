"""`tf.cond`, `tf.case` and `tf.switch_case`, built as TF 1.x builds them: Switch and Merge.

``cond(pred, true_fn, false_fn)`` records each branch in a `CondContext`. Every tensor a
branch reads from outside comes in through ``Switch(x, pred)`` - output 0 (``output_false``)
is live when `pred` is false, output 1 (``output_true``) when it is true - and each output of
the cond is ``Merge([false value, true value])``. At run time the untaken side's Switch outputs
are *dead* (`nbdist.ops.deadness`): the ops behind them are skipped, on whichever task they
were placed (a dead tensor crosses tasks as a flag), and each Merge forwards its one live
input. An op of a branch with no data input (a constant) runs after the branch's *pivot*, an
identity of ``Switch(pred, pred)``'s side, so it is dead with its branch too.

Gradients follow the same structure (TF's): Merge's gradient is a Switch of the incoming
gradient on which input was taken (Merge's ``value_index``), so the gradient of the untaken
branch is dead; Switch's gradient merges the gradients of its two outputs (the untaken side's
is ``zeros_like`` that side, dead or zero as it should be).
"""

import numpy as np

from nbdist import errors
from nbdist.graph import dtypes as _dtypes
from nbdist.graph.graph import Operation, Tensor, get_default_graph
from nbdist.graph.tensor_shape import TensorShape
from nbdist.ops import registry
from nbdist.ops.constant_op import convert_to_tensor
from nbdist.ops.deadness import DEAD
from nbdist.ops.indexed_slices import IndexedSlices
from nbdist.ops.nest import flatten, pack_sequence_as, same_structure
from nbdist.ops.tensor_array_ops import TensorArray, from_flows

# -- Switch ---------------------------------------------------------------------------------


@registry.shape("Switch")
def _switch_shape(inputs, attrs):
    data, pred = inputs
    if pred.shape.ndims not in (None, 0):
        raise ValueError(f"the predicate of a Switch must be a scalar, got shape {pred.shape}")
    return [(data.dtype, data.shape), (data.dtype, data.shape)]


@registry.kernel("Switch")
def _switch_kernel(ctx, node, data, pred):
    if np.ndim(pred) != 0:
        raise errors.InvalidArgumentError(
            node.name, None, f"the predicate of tf.cond must be a scalar bool, got shape {np.shape(pred)}"
        )
    return (DEAD, data) if bool(pred) else (data, DEAD)


@registry.gradient("Switch")
def _switch_grad(op, grad_false, grad_true):
    # gradients() gave the unused side zeros_like(that output): zero when that side ran, dead when not.
    return [merge([grad_false, grad_true], name="cond_grad")[0], None]


def switch(data, pred, name=None):
    """``(output_false, output_true)``: `data` on the side `pred` selects; the other is dead."""
    data = convert_to_tensor(data)
    pred = convert_to_tensor(pred, dtype=_dtypes.bool)
    op = registry.make_op("Switch", [data, pred], name=name or "Switch")
    return op.outputs[0], op.outputs[1]


# -- Merge ----------------------------------------------------------------------------------
registry.declare("Merge", takes_dead=True)


@registry.shape("Merge")
def _merge_shape(inputs, attrs):
    dtypes = {t.dtype for t in inputs}
    if len(dtypes) != 1:
        names = ", ".join(f"{t.name} ({t.dtype.name})" for t in inputs)
        raise TypeError(f"the branches of a tf.cond must give the same dtypes; Merge of {names}")
    shapes = [t.shape for t in inputs]
    merged = shapes[0]
    for shape in shapes[1:]:
        merged = _common_shape(merged, shape)
    return [(inputs[0].dtype, merged), (_dtypes.int32, TensorShape([]))]


def _common_shape(a, b):
    """The most specific shape both `a` and `b` have (unknown where they differ)."""
    if a.ndims is None or b.ndims is None or a.ndims != b.ndims:
        return TensorShape(None)
    return TensorShape([x if x == y else None for x, y in zip(a.dims, b.dims)])


@registry.kernel("Merge")
def _merge_kernel(ctx, node, *inputs):
    for i, value in enumerate(inputs):
        if value is not DEAD:
            return value, np.int32(i)
    return DEAD, DEAD


@registry.gradient("Merge")
def _merge_grad(op, grad, grad_index):
    index = op.outputs[1]
    if len(op.inputs) == 2:
        from nbdist.ops.math_ops import cast  # noqa: PLC0415 - math_ops is built on this module's peers

        grad_false, grad_true = switch(grad, cast(index, _dtypes.bool), name="cond_grad_switch")
        return [grad_false, grad_true]
    from nbdist.ops.math_ops import equal  # noqa: PLC0415

    return [switch(grad, equal(index, i), name="cond_grad_switch")[1] for i in range(len(op.inputs))]


def merge(inputs, name=None):
    """``(output, value_index)``: the one live tensor of `inputs` and its position."""
    inputs = [convert_to_tensor(t) for t in inputs]
    op = registry.make_op("Merge", inputs, name=name or "Merge")
    return op.outputs[0], op.outputs[1]


# -- the branch context ---------------------------------------------------------------------------
class CondContext:
    """One branch of a `tf.cond` while it is recorded: ops made in it take outer tensors
    through a Switch on `pred` (one per tensor) and, with no data input, run after its pivot.

    Args:
        pred: the scalar bool tensor.
        branch: 1 for the true branch, 0 for the false one (the Switch output it uses).
        outer: the context the cond itself is in (a branch of an enclosing cond), or None.
    """

    def __init__(self, pred, branch, outer):
        self.pred = pred
        self.branch = branch
        self.outer = outer
        self.graph = pred.graph
        self._captured = {}  # outer tensor -> its Switch output in this branch
        self._pivot = None

    def contains(self, op):
        """True when `op` was made in this branch (or in a cond nested in it)."""
        context = op.control_flow_context
        while context is not None:
            if context is self:
                return True
            context = context.outer
        return False

    def _in_outer(self, make):
        """Runs `make()` recording into the enclosing context (where the cond itself is)."""
        graph = self.graph
        graph.set_control_flow_context(self.outer)
        try:
            with graph.control_dependencies(None):
                return make()
        finally:
            graph.set_control_flow_context(self)

    def capture(self, t):
        """`t` as this branch sees it: itself when made here, else its Switch's live side."""
        if self.contains(t.op):
            return t
        got = self._captured.get(t)
        if got is None:
            got = self._in_outer(lambda: switch(t, self.pred)[self.branch])
            got.op.control_flow_context = self  # the Switch belongs to the branch it serves
            self._captured[t] = got
        return got

    @property
    def pivot(self):
        """An identity of ``Switch(pred, pred)``'s side for this branch: live only when it runs."""
        if self._pivot is None:

            def make():
                from nbdist.ops.unary_ops import identity  # noqa: PLC0415 - math ops build on this module

                side = switch(self.pred, self.pred, name="switch_t" if self.branch else "switch_f")
                return identity(side[self.branch], name="pivot_t" if self.branch else "pivot_f")

            self._pivot = self._in_outer(make)
            self._pivot.op.control_flow_context = self
        return self._pivot

    def prepare_inputs(self, op_type, inputs, control_inputs):
        """The inputs and control inputs of an op of type `op_type` made in this branch
        (`Graph.create_op`). A ref input (the variable an assign updates) stays the resource's
        creator: only values go through a Switch."""
        refs = registry.lookup(op_type).ref_inputs if registry.lookup(op_type, None) else {}
        inputs = [t if pos in refs else self.capture(t) for pos, t in enumerate(inputs)]
        if len(inputs) == len(refs):  # no value input: run after the pivot, dead with the branch
            control_inputs = [*control_inputs, self.pivot.op]
        return inputs, control_inputs


def _record_branch(fn, pred, branch, outer, what):
    """Calls `fn` recording into a new `CondContext`; returns ``(structure, flat outputs)``."""
    graph = pred.graph
    context = CondContext(pred, branch, outer)
    graph.set_control_flow_context(context)
    try:
        result = fn()
        if result is None:
            raise ValueError(f"the {what} of tf.cond returned None; it must return tensors (or ops)")
        flat = []
        for x in flatten(result):
            if isinstance(x, Operation):  # an op: the cond's output says when it ran
                from nbdist.ops.control_flow_ops import with_dependencies  # noqa: PLC0415 - built on this module

                x = with_dependencies([x], context.pivot)
            elif isinstance(x, IndexedSlices):
                x = convert_to_tensor(x)
            elif isinstance(x, TensorArray):  # travels as its flow, rebuilt after the Merge
                x = x.flow
            else:
                x = convert_to_tensor(x)
            flat.append(context.capture(x))
        return result, flat
    finally:
        graph.set_control_flow_context(outer)


def cond(pred, true_fn=None, false_fn=None, strict=False, name=None, fn1=None, fn2=None):
    """`tf.cond`: ``true_fn()`` if `pred` else ``false_fn()``, only the taken branch running.

    Args:
        pred: a scalar bool tensor (a Python bool is refused, as in TF 1.x).
        true_fn, false_fn: callables returning the same structure of tensors (or ops).
        strict: keep a one-element list or tuple as such (by default it is unpacked).
        fn1, fn2: TF's deprecated names for `true_fn` and `false_fn`.

    Returns:
        The structure the branches return, each tensor a Merge of the two branches' values
        (an op returned by a branch gives the Merge's op).
    """
    true_fn = true_fn if true_fn is not None else fn1
    false_fn = false_fn if false_fn is not None else fn2
    if not callable(true_fn) or not callable(false_fn):
        raise TypeError("tf.cond needs callables true_fn and false_fn (e.g. lambda: x + 1)")
    if isinstance(pred, bool):
        raise TypeError("pred must not be a Python bool; pass a bool tensor (tf.constant(True))")
    graph = get_default_graph()
    with graph.name_scope(name or "cond"):
        pred = convert_to_tensor(pred, dtype=_dtypes.bool)
        if pred.shape.ndims not in (None, 0):
            raise ValueError(
                f"the predicate of tf.cond must be a scalar, got {pred.name} of shape {pred.shape}"
            )
        outer = graph.get_control_flow_context()
        if outer is not None:
            pred = outer.capture(pred)
        from nbdist.ops.unary_ops import identity  # noqa: PLC0415

        pred = identity(pred, name="pred_id")
        true_result, true_flat = _record_branch(true_fn, pred, 1, outer, "true_fn")
        false_result, false_flat = _record_branch(false_fn, pred, 0, outer, "false_fn")
        if not same_structure(true_result, false_result):
            raise ValueError(
                "the two branches of tf.cond must return the same structure: true_fn gave "
                f"{true_result!r:.200}, false_fn {false_result!r:.200}"
            )
        merged = []
        for t, f, original in zip(true_flat, false_flat, flatten(true_result)):
            if t.dtype != f.dtype:
                raise TypeError(
                    f"the branches of tf.cond give different dtypes: {t.dtype.name} ({t.name}) "
                    f"and {f.dtype.name} ({f.name})"
                )
            out = merge([f, t])[0]
            merged.append(out.op if isinstance(original, Operation) else out)
    result = pack_sequence_as(true_result, from_flows(flatten(true_result), merged))
    if not strict and isinstance(result, (list, tuple)) and len(result) == 1:
        return result[0]
    return result


def case(pred_fn_pairs, default=None, exclusive=False, strict=False, name="case"):
    """`tf.case`: the fn of the first pair whose predicate is true, else ``default()``.

    Built as TF builds it, nested `cond`s. Without a `default`, the last pair's fn is the
    default, run after checking that its predicate holds ("None of conditions evaluated as
    True" otherwise). With ``exclusive=True``, more than one true predicate is an error.
    """
    if isinstance(pred_fn_pairs, dict):
        pairs = list(pred_fn_pairs.items())
    else:
        pairs = list(pred_fn_pairs)
    for pair in pairs:
        if not (isinstance(pair, tuple) and len(pair) == 2 and callable(pair[1])):
            raise TypeError(f"tf.case takes (predicate, callable) pairs, got {pair!r}")
    if not pairs:
        raise ValueError("tf.case needs at least one (predicate, fn) pair")
    from nbdist.ops.control_flow_ops import Assert, with_dependencies  # noqa: PLC0415
    from nbdist.ops.math_ops import cast  # noqa: PLC0415
    from nbdist.ops.reduction_ops import reduce_sum  # noqa: PLC0415

    graph = get_default_graph()
    with graph.name_scope(name):
        preds = [convert_to_tensor(p, dtype=_dtypes.bool) for p, _ in pairs]
        fns = [f for _, f in pairs]
        if default is None:
            last_pred, last_fn = preds.pop(), fns.pop()
            from nbdist.ops.concat_slice_ops import stack  # noqa: PLC0415

            all_preds = stack([*preds, last_pred], name="preds_c")

            def default():
                check = Assert(last_pred, ["Input error: None of conditions evaluated as True:", all_preds])
                result = last_fn()
                return _after(check, result, with_dependencies)

        fn = default
        for pred, branch in reversed(list(zip(preds, fns))):
            fn = _cond_fn(pred, branch, fn, strict)
        if exclusive and len(pairs) > 1:
            from nbdist.ops.concat_slice_ops import stack  # noqa: PLC0415

            every = stack([convert_to_tensor(p, dtype=_dtypes.bool) for p, _ in pairs])
            how_many = reduce_sum(cast(every, _dtypes.int32))
            from nbdist.ops.math_ops import less_equal  # noqa: PLC0415

            check = Assert(
                less_equal(how_many, 1),
                ["Input error: exclusive=True: more than 1 conditions evaluated as True:", every],
            )
            return _after(check, fn(), with_dependencies)
        return fn()


def _after(check, result, with_dependencies):
    """`result` (a structure of tensors) made to wait for the op `check`."""
    flat = [with_dependencies([check], t) if isinstance(t, Tensor) else t for t in flatten(result)]
    return pack_sequence_as(result, flat)


def _cond_fn(pred, true_fn, false_fn, strict):
    return lambda: cond(pred, true_fn, false_fn, strict=strict)


def switch_case(branch_index, branch_fns, default=None, name="switch_case"):
    """`tf.switch_case`: ``branch_fns[branch_index]()``; an index out of range runs `default`
    (the last branch when `default` is None), as TF."""
    if isinstance(branch_fns, dict):
        items = sorted(branch_fns.items())
    else:
        items = list(enumerate(branch_fns))
    if not items:
        raise ValueError("tf.switch_case needs at least one branch")
    from nbdist.ops.math_ops import equal  # noqa: PLC0415

    graph = get_default_graph()
    with graph.name_scope(name):
        index = convert_to_tensor(branch_index, dtype=_dtypes.int32)
        if default is None:
            default = items[-1][1]
        pairs = [(equal(index, i), fn) for i, fn in items]
        fn = default
        for pred, branch in reversed(pairs):
            fn = _cond_fn(pred, branch, fn, False)
        return fn()


__all__ = ["case", "cond", "switch_case"]
