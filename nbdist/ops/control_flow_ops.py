"""Control: `no_op`, `group`, `tuple` and `with_dependencies` (ordering without data), and
`Assert`. `cond` / `case` / `switch_case` are in cond_ops.py, loops in while_ops.py."""

import numpy as np

from nbdist import errors
from nbdist.graph import dtypes as _dtypes
from nbdist.graph.graph import Operation, Tensor, get_default_graph, graph_element
from nbdist.ops import math_ops, registry
from nbdist.ops.constant_op import convert_to_tensor
from nbdist.ops.indexed_slices import IndexedSlices
from nbdist.ops.tensor_format import summarize_value

registry.shape("NoOp")(lambda inputs, attrs: [])
registry.kernel("NoOp")(lambda ctx, node: None)
registry.no_gradient("NoOp")


def no_op(name=None):
    return registry.make_op("NoOp", [], name=name, graph=get_default_graph())


def _as_op(x):
    x = graph_element(x)
    if isinstance(x, Tensor):
        return x.op
    if isinstance(x, Operation):
        return x
    raise TypeError(f"group() takes ops, tensors or variables, got {x!r}")


def group(*inputs, name=None):
    """An op that runs after all of `inputs` have run (TF's `tf.group`)."""
    ops = [_as_op(x) for x in inputs if x is not None]
    graph = ops[0].graph if ops else get_default_graph()
    with graph.control_dependencies(ops):
        return registry.make_op("NoOp", [], name=name or "group_deps", graph=graph)


def with_dependencies(dependencies, output_tensor, name=None):
    """`output_tensor`, produced only after `dependencies` have run."""
    with get_default_graph().control_dependencies(dependencies):
        return math_ops.identity(output_tensor, name=name)


def tuple(tensors, name=None, control_inputs=None):  # noqa: A001 - TF's public name tf.tuple
    """Tensors equal to `tensors`, each available only once all of them are computed
    (an `IndexedSlices` is gated through its values and indices)."""
    parts = []
    for t in tensors:
        if isinstance(t, IndexedSlices):
            parts += [t.values, t.indices]
        elif t is not None:
            parts.append(t)
    gate = group(*parts, *(control_inputs or ()))

    def gated(t):
        if isinstance(t, IndexedSlices):
            gated_values = with_dependencies([gate], t.values)
            return IndexedSlices(gated_values, with_dependencies([gate], t.indices), t.dense_shape)
        return None if t is None else with_dependencies([gate], t)

    return [gated(t) for t in tensors]


# -- Assert ----------------------------------------------------------------------------------
registry.declare("Assert", stateful=True)
registry.shape("Assert")(lambda inputs, attrs: [])
registry.no_gradient("Assert")


@registry.kernel("Assert")
def _assert_kernel(ctx, node, condition, *data):
    if np.ndim(condition) != 0:
        raise errors.InvalidArgumentError(
            node.name, None, f"tf.Assert's condition must be a scalar bool, got shape {np.shape(condition)}"
        )
    if not bool(condition):
        summarize = node.attr.get("summarize", 3)
        raise errors.InvalidArgumentError(
            node.name, None, "assertion failed: " + " ".join(_summary(d, summarize) for d in data)
        )


def _summary(value, summarize):
    """One input of a failed `Assert`, as TF prints it: ``[a b c...]`` (first `summarize` values)."""
    return f"[{summarize_value(value, summarize)}]"


def Assert(condition, data, summarize=None, name=None):  # noqa: N802 - TF's public name tf.Assert
    """`tf.Assert`: an op that fails the step with `data` printed when `condition` is false."""
    condition = convert_to_tensor(condition, dtype=_dtypes.bool)
    data = [convert_to_tensor(d) for d in data]
    attrs = {"summarize": 3 if summarize is None else int(summarize)}
    return registry.make_op("Assert", [condition, *data], attrs, name=name or "Assert")
