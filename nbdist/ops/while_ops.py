"""`tf.while_loop`, and on it `tf.map_fn`, `tf.scan`, `tf.foldl` and `tf.foldr`: a functional loop.

nbdist records a loop as TF 2 does, one ``While`` op whose condition and body are functions
(`FuncGraph`s kept as `SubgraphDef` attrs), not as TF 1.x's Enter/Merge/Switch/NextIteration/
Exit frame; docs/architecture.md says why. The op takes the loop variables and every outer
tensor the functions read (their *captures*); the runtime's kernel (runtime/loop_kernels.py)
runs the condition, then the body, until the condition is false or `maximum_iterations`.

Outputs: the loop variables' final values; the values the body *accumulates* (one per
iteration, stacked: how `map_fn` and `scan` collect their results, as TF's TensorArrays do);
the loop's history (the loop variables at the start of each iteration, kept when
``back_prop``); and the number of iterations it ran.

The gradient is another loop (``WhileGrad``) that runs the same number of iterations
backwards: at iteration k it runs the body's gradient function on the history's entry k, the
gradients of the body's outputs and of that iteration's accumulated values, and sums the
gradients of the captured tensors. The body is recomputed from its inputs (an op with random
results in a differentiated body would differ between the two passes: nbdist refuses the
gradient of such a loop; the loop itself runs).

A loop runs where its op is placed; every op of its condition and body runs there too. An op
of a body with a device of another task is refused when the step is partitioned, naming it.
"""

from nbdist.graph import dtypes as _dtypes
from nbdist.graph.func_graph import FuncGraph
from nbdist.graph.graph import get_default_graph
from nbdist.graph.graph_def import SubgraphDef, import_graph_def
from nbdist.graph.tensor_shape import TensorShape, as_shape
from nbdist.ops import registry
from nbdist.ops.constant_op import convert_to_tensor
from nbdist.ops.nest import flatten, pack_sequence_as

# "While": a body with stateful ops (a queue, a random op): never pruned or deduplicated, and
# run off a server's I/O thread (a queue in it may wait). "StatelessWhile": anything else.
registry.declare("While", stateful=True, blocking=True)
registry.declare("WhileGrad", stateful=True, blocking=True)
LOOP_OPS = ("While", "StatelessWhile")


def _loop_shape(inputs, attrs):
    n_vars = attrs["n_vars"]
    specs = [(t.dtype, attrs["shape_invariants"][i]) for i, t in enumerate(inputs[:n_vars])]
    for dtype, shape in attrs["accumulated"]:
        specs.append((dtype, TensorShape([None]).concatenate(shape)))
    return [*specs, (_dtypes.variant, TensorShape([])), (_dtypes.int32, TensorShape([]))]


for _type in LOOP_OPS:
    registry.shape(_type)(_loop_shape)


def _loop_grad(op, *grads):
    n_vars, n_acc = op.get_attr("n_vars"), len(op.get_attr("accumulated"))
    n_inputs = len(op.inputs)
    if not op.get_attr("back_prop"):
        return [None] * n_inputs
    first_capture = n_vars + (1 if op.get_attr("has_maximum_iterations") else 0)
    var_inputs, captures = op.inputs[:n_vars], op.inputs[first_capture:]
    diff_vars = [i for i, t in enumerate(var_inputs) if t.dtype.is_floating]
    diff_caps = [i for i, t in enumerate(captures) if t.dtype.is_floating]
    if not diff_vars and not diff_caps:
        return [None] * n_inputs
    _refuse_random_body(op)
    body_grad = _body_gradient(op, diff_vars, diff_caps)
    var_grads = [grads[i] for i in diff_vars]
    acc_grads = list(grads[n_vars : n_vars + n_acc])
    attrs = {
        "body_grad": body_grad,
        "loop": op.get_attr("loop"),
        "n_captures": len(captures),
        "diff_captures": diff_caps,
        "n_grads_of_vars": len(diff_vars),
        "capture_specs": [(captures[i].dtype, captures[i].shape) for i in diff_caps],
        "var_specs": [(var_inputs[i].dtype, op.outputs[i].shape) for i in diff_vars],
    }
    with op.graph.colocate_with(op):  # where the history is: it never crosses tasks
        grad_op = registry.make_op(
            "WhileGrad",
            [op.outputs[n_vars + n_acc], *captures, *var_grads, *acc_grads],
            attrs,
            name="WhileGrad",
        )
    out = [None] * n_inputs
    for k, i in enumerate(diff_vars):
        out[i] = grad_op.outputs[k]
    for k, i in enumerate(diff_caps):
        out[first_capture + i] = grad_op.outputs[len(diff_vars) + k]
    return out


for _type in LOOP_OPS:
    registry.gradient(_type)(_loop_grad)


@registry.shape("WhileGrad")
def _while_grad_shape(inputs, attrs):
    return [*attrs["var_specs"], *attrs["capture_specs"]]


registry.no_gradient("WhileGrad")


def _body_gradient(op, diff_vars, diff_caps):
    """The SubgraphDef of one backward iteration: from (the loop variables at the start of the
    iteration, the captures, the gradients of the body's differentiable outputs and of its
    accumulated values) to the gradients of the differentiable loop variables and captures."""
    from nbdist.ops.cast_select_ops import zeros_like  # noqa: PLC0415 - gradients build on this module's peers
    from nbdist.ops.gradients import gradients  # noqa: PLC0415

    body = op.get_attr("body")
    n_vars, accumulated = op.get_attr("n_vars"), op.get_attr("accumulated")
    graph = FuncGraph(op.graph, f"gradient of while loop {op.name!r}")
    with graph.as_default(), graph.name_scope(None):  # its names start afresh: body/..., gradients/...
        inputs = []
        for i, name in enumerate(body.inputs):
            spec = _spec_of(body, name)
            inputs.append(graph.add_placeholder(spec[0], spec[1], f"input_{i}"))
        outputs = import_graph_def(
            {"node": [n.to_dict() for n in body.nodes]},
            input_map=dict(zip(body.inputs, inputs)),
            return_elements=body.outputs,
            name="body",
        )
        given = dict(zip(body.inputs, inputs))  # an output that is an input is that input
        outputs = [given.get(name, t) for name, t in zip(body.outputs, outputs)]
        var_outs, acc_outs = outputs[:n_vars], outputs[n_vars:]
        grad_ins = []
        for k, i in enumerate(diff_vars):
            grad_ins.append(graph.add_placeholder(var_outs[i].dtype, var_outs[i].shape, f"dvar_{k}"))
        for k, (dtype, shape) in enumerate(accumulated):
            grad_ins.append(graph.add_placeholder(dtype, shape, f"dacc_{k}"))
        ys = [var_outs[i] for i in diff_vars] + list(acc_outs)
        grad_ys = grad_ins
        keep = [k for k, y in enumerate(ys) if y.dtype.is_floating]
        xs = [inputs[i] for i in diff_vars] + [inputs[n_vars + i] for i in diff_caps]
        grads = (
            gradients([ys[k] for k in keep], xs, grad_ys=[grad_ys[k] for k in keep])
            if keep
            else [None] * len(xs)
        )
        grads = [zeros_like(x) if g is None else convert_to_tensor(g) for g, x in zip(grads, xs)]
    return SubgraphDef.of(graph, [*inputs, *grad_ins], grads)


def _spec_of(subgraph, tensor_name):
    op, _, index = tensor_name.rpartition(":")
    node = next(n for n in subgraph.nodes if n.name == op)
    return node.output[int(index)]


# -- recording -----------------------------------------------------------------------------------
def _trace(fn, graph, what, var_specs, names, returns_structure):
    """Records ``fn(*loop variables)`` in a new `FuncGraph`; returns the graph, its placeholders
    and the flat tensors `fn` returned (and their structure)."""
    func = FuncGraph(graph, what)
    with func.as_default():
        placeholders = [
            func.add_placeholder(dt, sh, f"{names}/loop_var_{i}") for i, (dt, sh) in enumerate(var_specs)
        ]
        args = pack_sequence_as(returns_structure, placeholders)
        result = fn(*args) if isinstance(args, list) else fn(args)
        flat = [convert_to_tensor(x) for x in flatten(result)] if result is not None else None
    return func, placeholders, result, flat


def refuse_outer_resources(func, what):
    """Refuses an op of function graph `func` that takes a resource (a variable it updates, a
    queue) made outside the function: a captured tensor stands for a value, not for the
    resource itself. `what` names the function (``"body of while loop 'while'"``)."""
    captured = {t.op.name for t in func.captures.values()}
    ops = {op.name for op in func.get_operations()} - captured
    for op in func.get_operations():
        node = op.node_def
        for _, src, kind in registry.ref_inputs(node):
            if src not in ops:
                raise ValueError(
                    f"{op.type} op {op.name!r} in the {what} uses the {kind.name} made by {src!r} "
                    "outside it; nbdist's functions (while_loop bodies, tf.data functions) read "
                    "variables but do not update them or other resources (carry state in the "
                    "loop's variables)"
                )


def _is_stateful(func):
    return any(registry.lookup(op.type).stateful for op in func.get_operations())


def _while(cond, body, loop_vars, shape_invariants, back_prop, maximum_iterations, name, accumulates=False):
    """The `While` op for flat `loop_vars`; `body` returns the next values, and with
    `accumulates` after them the values to stack. Returns ``(final values, stacked values, op)``."""
    graph = get_default_graph()
    with graph.name_scope(name) as scope:
        loop_vars = [convert_to_tensor(v) for v in loop_vars]
        loop_name = scope.rstrip("/")
        invariants = [
            as_shape(s) if s is not None else v.shape
            for v, s in zip(loop_vars, shape_invariants or [None] * len(loop_vars))
        ]
        for v, s in zip(loop_vars, invariants):
            if not s.is_compatible_with(v.shape):
                raise ValueError(
                    f"loop variable {v.name} of while loop {loop_name!r} has shape {v.shape}, not "
                    f"compatible with its shape invariant {s}"
                )
        specs = [(v.dtype, s) for v, s in zip(loop_vars, invariants)]
        structure = ["."] * len(loop_vars)
        cond_graph, cond_inputs, _, cond_out = _trace(
            cond, graph, f"condition of while loop {loop_name!r}", specs, "cond", structure
        )
        if (
            not cond_out
            or len(cond_out) != 1
            or cond_out[0].dtype != _dtypes.bool
            or cond_out[0].shape.ndims not in (None, 0)
        ):
            raise TypeError(
                f"the condition of while loop {loop_name!r} must return one scalar bool tensor, "
                f"got {cond_out}"
            )
        body_graph, body_inputs, _, body_out = _trace(
            body, graph, f"body of while loop {loop_name!r}", specs, "body", structure
        )
        n_returned = 0 if body_out is None else len(body_out)
        n_accumulated = n_returned - len(loop_vars) if accumulates else 0
        if n_returned != len(loop_vars) + n_accumulated or n_accumulated < 0:
            raise ValueError(
                f"the body of while loop {loop_name!r} must return {len(loop_vars)} loop variables "
                f"(the structure of loop_vars), got {n_returned - n_accumulated}"
            )
        for v, s, out in zip(loop_vars, invariants, body_out):
            if out.dtype != v.dtype:
                raise TypeError(
                    f"loop variable {v.name} of while loop {loop_name!r} enters as {v.dtype.name} "
                    f"but the body returns {out.dtype.name}"
                )
            if not s.is_compatible_with(out.shape) or (s.ndims is not None and out.shape.ndims is None):
                raise ValueError(
                    f"Input tensor '{v.name}' enters the loop with shape {s}, but has shape "
                    f"{out.shape} after one iteration. To allow the shape to vary across iterations, "
                    "use the `shape_invariants` argument of tf.while_loop to specify a less-specific shape."
                )
        # Both functions take every capture of either, in one order.
        captures = list(dict.fromkeys([*cond_graph.captures, *body_graph.captures]))
        for func in (cond_graph, body_graph):
            for t in captures:
                if t not in func.captures:
                    func.captures[t] = func.add_placeholder(t.dtype, t.shape, f"captured/{t.op.name}")
            refuse_outer_resources(func, func.what)
        body_outputs = [body_graph.capture(t) if t.graph is not body_graph else t for t in body_out]
        cond_def = SubgraphDef.of(
            cond_graph, [*cond_inputs, *(cond_graph.captures[t] for t in captures)], cond_out
        )
        body_def = SubgraphDef.of(
            body_graph, [*body_inputs, *(body_graph.captures[t] for t in captures)], body_outputs
        )
        inputs = list(loop_vars)
        if maximum_iterations is not None:
            inputs.append(convert_to_tensor(maximum_iterations, dtype=_dtypes.int32))
        inputs += captures
        stateful = _is_stateful(cond_graph) or _is_stateful(body_graph)
        attrs = {
            "cond": cond_def,
            "body": body_def,
            "n_vars": len(loop_vars),
            "shape_invariants": invariants,
            "accumulated": [(t.dtype, t.shape) for t in body_out[len(loop_vars) :]],
            "has_maximum_iterations": maximum_iterations is not None,
            "back_prop": bool(back_prop),
            "loop": loop_name,
        }
        controls = list(dict.fromkeys([*cond_graph.outer_control_inputs, *body_graph.outer_control_inputs]))
        op = registry.make_op(
            "While" if stateful else "StatelessWhile",
            inputs,
            attrs,
            name="while",
            graph=graph,
            control_inputs=controls,
        )
    n = len(loop_vars)
    return op.outputs[:n], op.outputs[n : n + n_accumulated], op


_RANDOM_OPS = frozenset(
    {
        "Multinomial",
        "RandomGamma",
        "RandomPoissonV2",
        "RandomShuffle",
        "RandomStandardNormal",
        "RandomUniform",
        "RandomUniformInt",
        "TruncatedNormal",
        "FixedUnigramCandidateSampler",
        "LogUniformCandidateSampler",
        "UniformCandidateSampler",
    }
)  # stateful draws (a stateless op draws the same again: recomputing it is fine)


def _refuse_random_body(op):
    """The gradient recomputes the body: a body that draws random numbers would draw others."""
    drawn = [n.name for n in op.get_attr("body").nodes if n.op in _RANDOM_OPS]
    if drawn:
        raise ValueError(
            f"cannot differentiate while loop {op.get_attr('loop')!r}: its body draws random numbers "
            f"({', '.join(drawn[:3])}) and nbdist's loop gradient recomputes the body, which would draw "
            "others. Draw them before the loop (and index them in the body), use a stateless random op, "
            "or stop the gradient"
        )


def while_loop(
    cond,
    body,
    loop_vars,
    shape_invariants=None,
    parallel_iterations=10,
    back_prop=True,
    swap_memory=False,
    name=None,
    maximum_iterations=None,
    return_same_structure=False,
):
    """`tf.while_loop`: repeats ``loop_vars = body(*loop_vars)`` while ``cond(*loop_vars)``.

    Args:
        cond, body: callables of the loop variables (unpacked when `loop_vars` is a list or
            tuple); `body` returns the same structure.
        loop_vars: a tensor, or a (nested) list / tuple / dict of tensors.
        shape_invariants: per loop variable, a shape it keeps (``[None, 2]`` lets its first
            dimension change between iterations); by default its shape on entry.
        parallel_iterations, swap_memory: accepted; nbdist runs iterations one after another.
        back_prop: keep what the gradient needs (the loop variables of each iteration).
        maximum_iterations: stop after this many iterations even if `cond` holds.
        return_same_structure: return a one-element list as a list (else its element).

    Returns:
        The loop variables after the last iteration, in the structure of `loop_vars`.
    """
    del parallel_iterations, swap_memory
    from nbdist.ops.tensor_array_ops import TensorArray, from_flows, to_flows  # noqa: PLC0415 - built on this module's peers

    if not callable(cond) or not callable(body):
        raise TypeError("tf.while_loop needs callables cond and body")
    single = not isinstance(loop_vars, (list, tuple, dict))
    structure = loop_vars if not single else [loop_vars]
    templates = flatten(structure)  # a TensorArray travels as its flow, rebuilt in and after the loop
    flat = to_flows(templates)
    if not flat:
        raise ValueError("tf.while_loop needs at least one loop variable")
    invariants = None
    if shape_invariants is not None:
        invariants = flatten(shape_invariants if not single else [shape_invariants])
    if any(isinstance(t, TensorArray) for t in templates):  # its flow's shape changes on a first write
        invariants = [
            TensorShape(None) if isinstance(t, TensorArray) else s
            for t, s in zip(templates, invariants or [None] * len(templates))
        ]

    def call(fn, args):
        packed = pack_sequence_as(structure, from_flows(templates, args))
        if single:
            return fn(packed[0])
        return fn(*packed) if isinstance(packed, (list, tuple)) else fn(packed)

    def flat_body(*args):
        result = call(body, args)
        if single and isinstance(result, (list, tuple)) and len(result) == 1:
            result = result[0]
        return to_flows(flatten(result if not single else [result]))

    finals, _, _ = _while(
        lambda *args: call(cond, args),
        flat_body,
        flat,
        invariants,
        back_prop,
        maximum_iterations,
        name or "while",
    )
    result = pack_sequence_as(structure, from_flows(templates, finals))
    if single:
        return result[0]
    if not return_same_structure and isinstance(result, (list, tuple)) and len(result) == 1:
        return result[0]
    return result


# -- map_fn, scan, folds ----------------------------------------------------------------------
def _elements(elems):
    flat = [convert_to_tensor(e) for e in flatten(elems)]
    if not flat:
        raise ValueError("elems must hold at least one tensor")
    return flat


def _length(flat, name):
    from nbdist.ops.shape_ops import shape  # noqa: PLC0415 - shape ops build on this module's peers

    first = flat[0]
    if first.shape.ndims == 0:
        raise ValueError(
            f"{name}: elems must have a first dimension to iterate over, got a scalar {first.name}"
        )
    return shape(first, out_type=_dtypes.int32)[0]


def _element(flat, i):
    from nbdist.ops.reduction_ops import gather  # noqa: PLC0415

    return [gather(e, i) for e in flat]


def map_fn(
    fn,
    elems,
    dtype=None,
    parallel_iterations=None,
    back_prop=True,
    swap_memory=False,
    infer_shape=True,
    name=None,
):
    """`tf.map_fn`: ``fn`` applied to each element of `elems` along its first dimension, the
    results stacked. `elems` may be a (nested) structure of tensors; `fn` may return one."""
    del dtype, parallel_iterations, swap_memory, infer_shape
    graph = get_default_graph()
    with graph.name_scope(name or "map"):
        flat = _elements(elems)
        n = _length(flat, "tf.map_fn")
        out_structure = []

        def body(i):
            x = pack_sequence_as(elems, _element(flat, i))
            y = fn(x)
            out_structure.append(y)
            return [i + 1, *flatten(y)]

        from nbdist.ops.math_ops import less  # noqa: PLC0415

        zero = convert_to_tensor(0, dtype=_dtypes.int32)
        _, stacked, _ = _while(
            lambda i: less(i, n),
            body,
            [zero],
            None,
            back_prop,
            None,
            "while",
            accumulates=True,
        )
    batch = flat[0].shape[0] if flat[0].shape.ndims else None
    for t in stacked:  # (the number of results is the number of elements: TF's static shape)
        if batch is not None and t.shape.ndims:
            t.set_shape(TensorShape([batch]).concatenate(t.shape[1:]))
    return pack_sequence_as(out_structure[0], stacked)


def scan(
    fn,
    elems,
    initializer=None,
    parallel_iterations=10,
    back_prop=True,
    swap_memory=False,
    infer_shape=True,
    reverse=False,
    name=None,
):
    """`tf.scan`: ``a = fn(a, x)`` over the elements of `elems`, every `a` stacked. Without an
    `initializer`, `a` starts as the first element (and the output starts with it)."""
    del parallel_iterations, swap_memory, infer_shape
    from nbdist.ops.concat_slice_ops import concat  # noqa: PLC0415
    from nbdist.ops.math_ops import less  # noqa: PLC0415
    from nbdist.ops.reshape_ops import expand_dims, reverse_v2  # noqa: PLC0415

    graph = get_default_graph()
    with graph.name_scope(name or "scan"):
        flat = _elements(elems)
        if reverse:
            flat = [reverse_v2(e, [0]) for e in flat]
        n = _length(flat, "tf.scan")
        if initializer is None:
            init_structure = elems
            init = _element(flat, convert_to_tensor(0, dtype=_dtypes.int32))
            start = 1
        else:
            init_structure = initializer
            init = [convert_to_tensor(a) for a in flatten(initializer)]
            start = 0

        def body(i, *acc):
            a = pack_sequence_as(init_structure, acc)
            x = pack_sequence_as(elems, _element(flat, i))
            new = [convert_to_tensor(t) for t in flatten(fn(a, x))]
            return [i + 1, *new, *new]

        i0 = convert_to_tensor(start, dtype=_dtypes.int32)
        _, stacked, _ = _while(
            lambda i, *acc: less(i, n), body, [i0, *init], None, back_prop, None, "while", accumulates=True
        )
        if initializer is None:
            stacked = [concat([expand_dims(a, 0), s], 0) for a, s in zip(init, stacked)]
        if reverse:
            stacked = [reverse_v2(s, [0]) for s in stacked]
    return pack_sequence_as(init_structure, stacked)


def _fold(fn, elems, initializer, back_prop, name, reverse):
    from nbdist.ops.math_ops import less  # noqa: PLC0415
    from nbdist.ops.reshape_ops import reverse_v2  # noqa: PLC0415

    graph = get_default_graph()
    with graph.name_scope(name):
        flat = _elements(elems)
        if reverse:
            flat = [reverse_v2(e, [0]) for e in flat]
        n = _length(flat, f"tf.{name}")
        if initializer is None:
            structure, init, start = elems, _element(flat, convert_to_tensor(0, dtype=_dtypes.int32)), 1
        else:
            structure, init, start = initializer, [convert_to_tensor(a) for a in flatten(initializer)], 0

        def body(i, *acc):
            a = pack_sequence_as(structure, acc)
            x = pack_sequence_as(elems, _element(flat, i))
            return [i + 1, *[convert_to_tensor(t) for t in flatten(fn(a, x))]]

        finals, _, _ = _while(
            lambda i, *acc: less(i, n),
            body,
            [convert_to_tensor(start, dtype=_dtypes.int32), *init],
            None,
            back_prop,
            None,
            "while",
        )
    return pack_sequence_as(structure, finals[1:])


def foldl(fn, elems, initializer=None, parallel_iterations=10, back_prop=True, swap_memory=False, name=None):
    """`tf.foldl`: ``a = fn(a, x)`` over the elements of `elems` from the first; the last `a`."""
    del parallel_iterations, swap_memory
    return _fold(fn, elems, initializer, back_prop, name or "foldl", reverse=False)


def foldr(fn, elems, initializer=None, parallel_iterations=10, back_prop=True, swap_memory=False, name=None):
    """`tf.foldr`: as `foldl`, from the last element to the first."""
    del parallel_iterations, swap_memory
    return _fold(fn, elems, initializer, back_prop, name or "foldr", reverse=True)


__all__ = ["foldl", "foldr", "map_fn", "scan", "while_loop"]
