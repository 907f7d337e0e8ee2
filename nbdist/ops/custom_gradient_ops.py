"""TF 1.x's gradient machinery beside `tf.gradients`: `tf.RegisterGradient` and
`Graph.gradient_override_map` (an op differentiated by another registered gradient),
`tf.NotDifferentiable` / `tf.NoGradient` / `tf.no_gradient`, `tf.custom_gradient` (graph mode:
the forward function returns ``(y, grad_fn)``), `tf.grad_pass_through`, `tf.recompute_grad`
and `tf.hessians`.

As in TF, `custom_gradient` puts an ``IdentityN`` over the results, inputs and variables
used, whose gradient (registered under a fresh type name, through the override map) calls
``grad_fn``::

    @tf.custom_gradient
    def clip_grad(x):
        def grad(dy):
            return tf.clip_by_value(dy, -1.0, 1.0)
        return tf.identity(x), grad
"""

import contextlib
import functools
import inspect
import itertools

from nbdist.graph.graph import Graph, get_default_graph
from nbdist.ops import registry, state_ops
from nbdist.ops.array_extra_ops import identity_n
from nbdist.ops.cast_select_ops import zeros_like
from nbdist.ops.concat_slice_ops import concat, stack
from nbdist.ops.constant_op import convert_to_tensor
from nbdist.ops.gradients import gradients
from nbdist.ops.nest import flatten, pack_sequence_as
from nbdist.ops.reshape_ops import reshape
from nbdist.ops.shape_ops import shape
from nbdist.ops.unary_ops import identity

__all__ = [
    "NoGradient",
    "NotDifferentiable",
    "RegisterGradient",
    "custom_gradient",
    "grad_pass_through",
    "hessians",
    "no_gradient",
    "recompute_grad",
]


# -- the registry, TF's way ---------------------------------------------------------------------------
def _registered(op_type):
    d = registry.lookup(op_type, None)
    return d is not None and (d.grad_fn is not None or d.no_gradient)


class RegisterGradient:
    """`tf.RegisterGradient`: a decorator registering ``f(op, *grads) -> input grads`` as the
    gradient of `op_type` (a new type name, to use with `Graph.gradient_override_map`).

    Raises:
        TypeError: `op_type` is not a string.
        KeyError: `op_type` has a gradient (or is not differentiable) already.
    """

    def __init__(self, op_type):
        if not isinstance(op_type, str):
            raise TypeError("op_type must be a string")
        self._op_type = op_type

    def __call__(self, f):
        if _registered(self._op_type):
            raise KeyError(f"Registering two gradient with name '{self._op_type}'!")
        registry.gradient(self._op_type, indexed_slices=False)(f)
        return f


def no_gradient(op_type):
    """`tf.no_gradient` (and `tf.NotDifferentiable`, `tf.NoGradient`): ops of `op_type` pass no
    gradient to their inputs (`tf.gradients` gives None through them, no error).

    Raises:
        TypeError: `op_type` is not a string.
        KeyError: `op_type` has a gradient (or is not differentiable) already.
    """
    if not isinstance(op_type, str):
        raise TypeError("op_type must be a string")
    if _registered(op_type):
        raise KeyError(f"Registering two gradient with name '{op_type}'!")
    registry.no_gradient(op_type)


NotDifferentiable = NoGradient = no_gradient


@contextlib.contextmanager
def _gradient_override_map(self, op_type_map):
    """`Graph.gradient_override_map`: ops of a type in `op_type_map` (``{"Square": "MySquare"}``)
    made inside are differentiated with the gradient registered for the mapped type.

    Raises:
        TypeError: a key or value is not a string.
    """
    for key, value in op_type_map.items():
        if not (isinstance(key, str) and isinstance(value, str)):
            raise TypeError("op_type_map must be a dictionary mapping strings to strings")
    saved = getattr(self._local, "gradient_override_map", {})
    self._local.gradient_override_map = {**saved, **op_type_map}
    try:
        yield
    finally:
        self._local.gradient_override_map = saved


Graph.gradient_override_map = _gradient_override_map  # (graph.py never imports ops)


# -- custom_gradient -------------------------------------------------------------------------------------
_uids = itertools.count()


def _variables_read(ops, args):
    """The variables (global and local) whose value one of `ops` reads, other than `args`."""
    reads = {}
    for v in state_ops.global_variables() + state_ops.local_variables():
        reads.setdefault(id(v.value()), v)
    for a in args:
        reads.pop(id(a), None)
    used = {}
    for op in ops:
        for t in op.inputs:
            v = reads.get(id(t))
            if v is not None:
                used.setdefault(id(v), v)
    return list(used.values())


def _takes_variables(grad_fn):
    try:
        params = inspect.signature(grad_fn).parameters
    except (TypeError, ValueError):
        return False
    return "variables" in params or any(p.kind is p.VAR_KEYWORD for p in params.values())


def custom_gradient(f=None):
    """`tf.custom_gradient`: `f(*x)` returns ``(y, grad_fn)``; the decorated function returns
    `y`, whose gradient with respect to `x` is ``grad_fn(*dy)`` (one gradient per input, or one
    tensor for one input). When `f` reads variables, ``grad_fn(*dy, variables=...)`` must
    return ``(input grads, variable grads)``.

    Raises:
        TypeError: `f` reads variables and `grad_fn` takes no ``variables`` argument; or keyword
            arguments in the call (as TF's graph mode).
    """
    if f is None:
        return custom_gradient

    @functools.wraps(f)
    def decorated(*args, **kwargs):
        if kwargs:
            raise TypeError(
                "The custom_gradient decorator currently supports keywords arguments only when eager "
                "execution is enabled."
            )
        graph = get_default_graph()
        args = [convert_to_tensor(x) for x in args]
        first = graph.version
        result, grad_fn = f(*args)
        flat_result = [convert_to_tensor(y) for y in flatten(result)]
        variables = _variables_read(graph.operations_since(first), args)
        if variables and not _takes_variables(grad_fn):
            raise TypeError(
                "@tf.custom_gradient grad_fn must accept keyword argument 'variables', since function "
                f"uses variables: {variables}"
            )
        name = f"CustomGradient-{next(_uids)}"
        n_results, n_args = len(flat_result), len(args)

        def grad(op, *result_grads):
            result_grads = list(result_grads[:n_results])
            if variables:
                input_grads, variable_grads = grad_fn(*result_grads, variables=variables)
                if len(variable_grads) != len(variables):
                    raise ValueError("Must return gradient for each variable from @custom_gradient grad_fn.")
            else:
                input_grads, variable_grads = grad_fn(*result_grads), []
            input_grads = list(input_grads) if isinstance(input_grads, (list, tuple)) else [input_grads]
            if len(input_grads) != n_args:
                raise ValueError(
                    f"custom_gradient's grad_fn returned {len(input_grads)} gradients for {n_args} inputs"
                )
            return [None] * n_results + input_grads + list(variable_grads)

        RegisterGradient(name)(grad)
        inputs = flat_result + args + [v.value() for v in variables]
        with graph.gradient_override_map({"IdentityN": name}):
            outputs = identity_n(inputs)
        return pack_sequence_as(result, outputs[:n_results])

    return decorated


def grad_pass_through(f):
    """`tf.grad_pass_through`: `f` in the forward pass, the identity in the backward pass
    (the gradient with respect to each input is the output's; variables get none)."""

    @custom_gradient
    def pass_through(*args):
        def grad(*dys, variables=None):
            if variables is not None:
                return dys, [None] * len(variables)
            return dys

        return f(*args), grad

    return functools.wraps(f)(pass_through)


def recompute_grad(f):
    """`tf.recompute_grad`: `f`, whose forward ops are computed again for the backward pass
    (after the output gradients) instead of being kept: the same gradients, less memory held."""

    @custom_gradient
    def recomputed(*args):
        result = f(*args)

        def grad(*dys, variables=None):
            with get_default_graph().control_dependencies(dys):
                again = f(*[identity(x) for x in args])
            wrt = list(args) + list(variables or [])
            grads = gradients(flatten(again), wrt, grad_ys=list(dys))
            if variables is not None:
                return grads[: len(args)], grads[len(args) :]
            return grads

        return result, grad

    return functools.wraps(f)(recomputed)


def hessians(
    ys, xs, name="hessians", colocate_gradients_with_ops=False, gate_gradients=False, aggregation_method=None
):
    """`tf.hessians`: for each x, the second derivatives of ``sum(ys)``, shaped
    ``x.shape + x.shape``.

    nbdist differentiates each element of the gradient in turn (TF loops over them in a
    `while_loop` with a `TensorArray`), so each x's number of elements must be known while
    building.

    Raises:
        ValueError: an x of unknown size.
    """
    xs = list(xs) if isinstance(xs, (list, tuple)) else [xs]
    kwargs = {
        "colocate_gradients_with_ops": colocate_gradients_with_ops,
        "gate_gradients": gate_gradients,
        "aggregation_method": aggregation_method,
    }
    result = []
    for gradient, x in zip(gradients(ys, xs, name=name, **kwargs), xs):
        n = x.shape.num_elements() if x.shape.is_fully_defined() else None
        if n is None:
            raise ValueError(
                f"tf.hessians: the shape of {x.name} ({x.shape}) is not fully known; nbdist builds one "
                "gradient per element, so it needs x's size while building"
            )
        if gradient is None:
            result.append(None)
            continue
        flat = reshape(gradient, [-1])
        rows = [gradients(flat[j], x, name=name, **kwargs)[0] for j in range(n)]
        rows = [zeros_like(x) if r is None else convert_to_tensor(r) for r in rows]
        stacked = stack(rows) if rows else reshape(zeros_like(x), [0, *x.shape.as_list()])
        x_shape = shape(x)
        result.append(reshape(stacked, concat([x_shape, x_shape], 0)))
    return result
