"""The optimizers' update ops: `ApplyGradientDescent`, `ApplyMomentum`, `ApplyAdam`, `ApplyAdagrad`,
`ApplyRMSProp`, `ApplyCenteredRMSProp`, and the sparse `SparseApplyMomentum` (only the rows an
`IndexedSlices` gradient names).

Each op takes the variable (and its slots, e.g. the momentum accumulator) as *ref
inputs*, so its kernel receives the `VariableResource`s themselves, and the
hyper-parameters and the gradient as ordinary value inputs of the variable's dtype
(so they may be constants, fed placeholders or computed tensors). The kernel
computes TF 1.x's update formula and stores the results under the resources' locks;
the op's output is the variable's new value. Constructors create the op colocated
with the variable: a writer must run on the task that holds the variable.

Stores are copy-on-write: the kernel builds the new arrays and swaps them in under
the locks instead of overwriting the old buffer. An array a reader already has (a
fetched value, a tensor queued for the wire, another worker's concurrent forward
pass) therefore never changes under it, and concurrent writers never lose updates.
TF's ``use_locking`` attr is recorded for fidelity; nbdist always takes the locks.
"""

import numpy as np

from nbdist import errors
from nbdist.graph import dtypes as _dtypes
from nbdist.graph.graph import Tensor
from nbdist.ops import registry
from nbdist.ops.constant_op import convert_to_tensor
from nbdist.ops.state_ops import Variable

# op type -> its inputs in TF's order, each (name, kind): kind "ref" (a variable or slot of
# the variable's shape), "scalar" (a hyper-parameter), "like" (a tensor of the variable's shape),
# "rows" (some rows of the variable: ``[n, *var.shape[1:]]``) or "indices" (those rows' numbers).
_SIGNATURES = {
    "ApplyGradientDescent": (("var", "ref"), ("alpha", "scalar"), ("delta", "like")),
    "ApplyMomentum": (
        ("var", "ref"),
        ("accum", "ref"),
        ("lr", "scalar"),
        ("grad", "like"),
        ("momentum", "scalar"),
    ),
    "SparseApplyMomentum": (
        ("var", "ref"),
        ("accum", "ref"),
        ("lr", "scalar"),
        ("grad", "rows"),
        ("indices", "indices"),
        ("momentum", "scalar"),
    ),
    "ApplyAdam": (
        ("var", "ref"),
        ("m", "ref"),
        ("v", "ref"),
        ("beta1_power", "scalar"),
        ("beta2_power", "scalar"),
        ("lr", "scalar"),
        ("beta1", "scalar"),
        ("beta2", "scalar"),
        ("epsilon", "scalar"),
        ("grad", "like"),
    ),
    "ApplyAdagrad": (("var", "ref"), ("accum", "ref"), ("lr", "scalar"), ("grad", "like")),
    "ApplyRMSProp": (
        ("var", "ref"),
        ("ms", "ref"),
        ("mom", "ref"),
        ("lr", "scalar"),
        ("rho", "scalar"),
        ("momentum", "scalar"),
        ("epsilon", "scalar"),
        ("grad", "like"),
    ),
    "ApplyCenteredRMSProp": (
        ("var", "ref"),
        ("mg", "ref"),
        ("ms", "ref"),
        ("mom", "ref"),
        ("lr", "scalar"),
        ("rho", "scalar"),
        ("momentum", "scalar"),
        ("epsilon", "scalar"),
        ("grad", "like"),
    ),
}


def _apply_shape(op_type):
    signature = _SIGNATURES[op_type]

    def shape_fn(inputs, attrs):
        var = inputs[0]
        for (arg, kind), t in zip(signature, inputs):
            if kind == "indices":
                if not t.dtype.is_integer or t.shape.ndims not in (None, 1):
                    raise TypeError(f"{op_type}: indices {t.name} must be a 1-D int32 or int64 tensor")
                continue
            if t.dtype != var.dtype:
                raise TypeError(
                    f"{op_type}: input {arg!r} ({t.name}) has dtype {t.dtype.name}, but the variable "
                    f"{var.op.name!r} is {var.dtype.name}; cast it with tf.cast()"
                )
            if kind == "scalar" and t.shape.ndims not in (None, 0):
                raise ValueError(f"{op_type}: {arg!r} must be a scalar, got {t.name} of shape {t.shape}")
            rows_shape = t.shape[1:] if t.shape.ndims else t.shape
            if (
                kind == "rows"
                and var.shape.ndims is not None
                and not rows_shape.is_compatible_with(var.shape[1:])
            ):
                raise ValueError(
                    f"{op_type}: {arg!r} ({t.name}) has shape {t.shape}, but rows of the variable "
                    f"{var.op.name!r} have shape {var.shape[1:]}"
                )
            if kind in ("ref", "like") and not t.shape.is_compatible_with(var.shape):
                raise ValueError(
                    f"{op_type}: {arg!r} ({t.name}) has shape {t.shape}, but the variable "
                    f"{var.op.name!r} has shape {var.shape}"
                )
        return [(var.dtype, var.shape)]

    return shape_fn


for _t, _sig in _SIGNATURES.items():
    registry.declare(
        _t, ref_inputs=tuple(i for i, (_, kind) in enumerate(_sig) if kind == "ref"), stateful=True
    )
    registry.shape(_t)(_apply_shape(_t))
    registry.no_gradient(_t)


# -- kernels --------------------------------------------------------------------------------------
# The dense updates compute TF's formulas in TF's order, in place: one new array per tensor they
# update (``out=np.empty_like(w)``: an array even for a scalar variable, then written in place;
# the copy-on-write store swaps it in) and no other temporary of the variable's size, but for
# the one scratch array a formula may need (Adam's denominator, Nesterov's ``grad * lr``). Every
# input has the variable's dtype (the shape functions check it), so the results are the same
# bits, and of the same dtype, as the plain expressions. The hot kernels take their (two or three) locks
# in one ``with``, after checking that the resources are distinct.
def _locked(node, *resources):
    """Holds the locks of `resources`, in argument order (variable first, then its slots)."""
    if len(resources) == 1:
        return resources[0].lock  # (the common case: no stack of contexts)
    _check_distinct(node, resources)
    return _Locks(resources)


def _check_distinct(node, resources):
    """Raises `InvalidArgumentError` if a resource is given twice (its lock would wait for itself)."""
    if len(set(resources)) != len(resources):  # (resources hash by identity)
        names = [r.name for r in resources]
        raise errors.InvalidArgumentError(
            node.name, None, f"{node.op} got the same variable twice among its ref inputs {names}"
        )


class _Locks:
    """The locks of several resources, taken in order and released in reverse."""

    __slots__ = ("_locks",)

    def __init__(self, resources):
        self._locks = [r.lock for r in resources]

    def __enter__(self):
        taken = []
        try:
            for lock in self._locks:
                lock.acquire()
                taken.append(lock)
        except BaseException:  # (interrupted while waiting: let go of what it holds)
            for lock in reversed(taken):
                lock.release()
            raise
        return self

    def __exit__(self, *exc_info):
        for lock in reversed(self._locks):
            lock.release()


def _read_like(node, var, var_value, resource_or_value, arg):
    """The value of a slot resource or a gradient, checked to have the variable's shape."""
    value = resource_or_value.read() if hasattr(resource_or_value, "read") else np.asarray(resource_or_value)
    if value.shape != var_value.shape:
        raise errors.InvalidArgumentError(
            node.name,
            None,
            f"{node.op}: {arg} has shape {list(value.shape)}, but the variable {var.name} has shape "
            f"{list(var_value.shape)}",
        )
    return value


@registry.kernel("ApplyGradientDescent")
def _apply_gradient_descent_kernel(ctx, node, var, alpha, delta):
    with var.lock:
        w = var.read()
        delta = _read_like(node, var, w, delta, "delta")
        new_w = np.multiply(delta, alpha, out=np.empty_like(w))  # var -= grad * lr
        var.value = np.subtract(w, new_w, out=new_w)
    return new_w


@registry.kernel("ApplyMomentum")
def _apply_momentum_kernel(ctx, node, var, accum, lr, grad, momentum):
    _check_distinct(node, (var, accum))
    with var.lock, accum.lock:
        w = var.read()
        a = _read_like(node, var, w, accum, "accum")
        grad = _read_like(node, var, w, grad, "grad")
        new_a = np.multiply(a, momentum, out=np.empty_like(w))  # accum = accum * momentum + grad
        new_a += grad
        if node.attr.get("use_nesterov"):  # var -= grad * lr + accum * momentum * lr
            new_w = np.multiply(new_a, momentum, out=np.empty_like(w))
            new_w *= lr
            new_w += np.multiply(grad, lr)
        else:  # var -= accum * lr
            new_w = np.multiply(new_a, lr, out=np.empty_like(w))
        np.subtract(w, new_w, out=new_w)
        accum.value = new_a
        var.value = new_w
    return new_w


def _check_rows(node, var, w, grad, indices):
    """The gradient rows and their indices, checked against the variable (TF's messages)."""
    grad, indices = np.asarray(grad), np.asarray(indices)
    if indices.ndim != 1 or grad.shape != (len(indices), *w.shape[1:]):
        raise errors.InvalidArgumentError(
            node.name,
            None,
            f"{node.op}: grad of shape {list(grad.shape)} and indices of shape {list(indices.shape)} "
            f"do not name rows of the variable {var.name} of shape {list(w.shape)}",
        )
    bad = (indices < 0) | (indices >= len(w))
    if np.any(bad):
        i = int(np.argmax(bad))
        raise errors.InvalidArgumentError(
            node.name, None, f"{node.op}: indices[{i}] = {int(indices[i])} is not in [0, {len(w)})"
        )
    return grad, indices


@registry.kernel("SparseApplyMomentum")
def _sparse_apply_momentum_kernel(ctx, node, var, accum, lr, grad, indices, momentum):
    """TF's kernel, row by row in order: a repeated index is updated twice (optimizers sum first)."""
    with _locked(node, var, accum):
        w = var.read()
        a = _read_like(node, var, w, accum, "accum")
        grad, indices = _check_rows(node, var, w, grad, indices)
        w, a = w.copy(), a.copy()
        nesterov = node.attr.get("use_nesterov")
        for row, g in zip(indices, grad):
            a[row] = a[row] * momentum + g
            if nesterov:
                w[row] -= g * lr + a[row] * momentum * lr
            else:
                w[row] -= a[row] * lr
        accum.value = a
        var.value = w
    return w


@registry.kernel("ApplyAdam")
def _apply_adam_kernel(ctx, node, var, m, v, beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad):
    _check_distinct(node, (var, m, v))
    with var.lock, m.lock, v.lock:
        w = var.read()
        m_val = _read_like(node, var, w, m, "m")
        v_val = _read_like(node, var, w, v, "v")
        grad = _read_like(node, var, w, grad, "grad")
        alpha = lr * np.sqrt(1 - beta2_power) / (1 - beta1_power)
        new_m = np.subtract(grad, m_val, out=np.empty_like(w))  # m += (grad - m) * (1 - beta1)
        new_m *= 1 - beta1
        new_m += m_val
        new_v = np.square(grad, out=np.empty_like(w))  # v += (grad**2 - v) * (1 - beta2)
        new_v -= v_val
        new_v *= 1 - beta2
        new_v += v_val
        denominator = np.sqrt(new_v)  # var -= m * alpha / (sqrt(v) + epsilon)
        denominator += epsilon
        new_w = np.multiply(new_m, alpha, out=np.empty_like(w))
        new_w /= denominator
        np.subtract(w, new_w, out=new_w)
        m.value, v.value = new_m, new_v
        var.value = new_w
    return new_w


@registry.kernel("ApplyAdagrad")
def _apply_adagrad_kernel(ctx, node, var, accum, lr, grad):
    with _locked(node, var, accum):
        w = var.read()
        a = _read_like(node, var, w, accum, "accum")
        grad = _read_like(node, var, w, grad, "grad")
        if node.attr.get("update_slots", True):
            a = np.asarray(a + np.square(grad), dtype=w.dtype)
            accum.value = a
        var.value = new_w = np.asarray(w - grad * lr / np.sqrt(a), dtype=w.dtype)
    return new_w


def _rms_prop_update(node, var, mg, ms, mom, lr, rho, momentum, epsilon, grad):
    """TF's (centered when `mg` is given) RMSProp step; stores the slots and the variable."""
    w = var.read()
    grad = _read_like(node, var, w, grad, "grad")
    ms_val = _read_like(node, var, w, ms, "ms")
    ms_val = np.asarray(ms_val + (np.square(grad) - ms_val) * (1 - rho), dtype=w.dtype)
    denom = ms_val + epsilon
    if mg is not None:
        mg_val = _read_like(node, var, w, mg, "mg")
        mg_val = np.asarray(mg_val + (grad - mg_val) * (1 - rho), dtype=w.dtype)
        denom = ms_val - np.square(mg_val) + epsilon
        mg.value = mg_val
    mom_val = _read_like(node, var, w, mom, "mom")
    mom_val = np.asarray(mom_val * momentum + grad * lr / np.sqrt(denom), dtype=w.dtype)
    ms.value, mom.value = ms_val, mom_val
    var.value = new_w = np.asarray(w - mom_val, dtype=w.dtype)
    return new_w


@registry.kernel("ApplyRMSProp")
def _apply_rms_prop_kernel(ctx, node, var, ms, mom, lr, rho, momentum, epsilon, grad):
    with _locked(node, var, ms, mom):
        return _rms_prop_update(node, var, None, ms, mom, lr, rho, momentum, epsilon, grad)


@registry.kernel("ApplyCenteredRMSProp")
def _apply_centered_rms_prop_kernel(ctx, node, var, mg, ms, mom, lr, rho, momentum, epsilon, grad):
    with _locked(node, var, mg, ms, mom):
        return _rms_prop_update(node, var, mg, ms, mom, lr, rho, momentum, epsilon, grad)


# -- constructors ---------------------------------------------------------------------------------
def _ref(var, op_type):
    if isinstance(var, Variable):
        return var._ref()
    if isinstance(var, Tensor) and var.op.type == "VariableV2":
        return var
    raise TypeError(f"{op_type} updates a tf.Variable, got {var!r}")


def _apply(op_type, refs, values, attrs, name):
    """Creates `op_type` colocated with the variable (``refs[0]``); returns its output."""
    refs = [_ref(r, op_type) for r in refs]
    graph = refs[0].graph
    with graph.colocate_with(refs[0].op):
        values = [convert_to_tensor(v, preferred_dtype=refs[0].dtype) for v in values]
        return registry.make_op(op_type, refs + values, attrs, name=name).outputs[0]


def apply_gradient_descent(var, alpha, delta, use_locking=False, name=None):
    """``var -= alpha * delta``.

    Args:
        var: the `tf.Variable` to update.
        alpha: scalar learning rate, of the variable's dtype.
        delta: the change (the gradient), of the variable's shape and dtype.
        use_locking: recorded as TF's attr; nbdist always locks.
        name: op name (default ``"ApplyGradientDescent"``).

    Returns:
        The variable's new value (a Tensor); run it, or its `.op`, to apply the update.

    Raises:
        TypeError: if an input's dtype differs from the variable's.
        ValueError: if `alpha` is not a scalar or `delta`'s shape differs from the variable's.
    """
    return _apply("ApplyGradientDescent", [var], [alpha, delta], {"use_locking": bool(use_locking)}, name)


def apply_momentum(var, accum, lr, grad, momentum, use_locking=False, use_nesterov=False, name=None):
    """``accum = accum * momentum + grad; var -= lr * accum`` (TF's `ApplyMomentum`).

    With ``use_nesterov=True``: ``var -= lr * grad + lr * momentum * accum`` (after the
    accumulator update), as TF computes Nesterov momentum.

    Args:
        var: the `tf.Variable` to update.
        accum: its momentum slot variable (same shape and dtype).
        lr, momentum: scalar hyper-parameters of the variable's dtype.
        grad: the gradient, of the variable's shape and dtype.

    Returns:
        The variable's new value (a Tensor).

    Raises:
        TypeError, ValueError: as `apply_gradient_descent`.
    """
    attrs = {"use_locking": bool(use_locking), "use_nesterov": bool(use_nesterov)}
    return _apply("ApplyMomentum", [var, accum], [lr, grad, momentum], attrs, name)


def sparse_apply_momentum(
    var, accum, lr, grad, indices, momentum, use_locking=False, use_nesterov=False, name=None
):
    """`apply_momentum` on the rows `indices` only (TF's `SparseApplyMomentum`)::

        accum[indices[i]] = accum[indices[i]] * momentum + grad[i]
        var[indices[i]] -= lr * accum[indices[i]]

    Args:
        var, accum: the variable and its momentum slot.
        lr, momentum: scalar hyper-parameters of the variable's dtype.
        grad: the rows' gradients, ``[len(indices), *var.shape[1:]]``.
        indices: 1-D int32 or int64, the rows' numbers.

    Returns:
        The variable's new value (a Tensor).
    """
    attrs = {"use_locking": bool(use_locking), "use_nesterov": bool(use_nesterov)}
    if not isinstance(indices, Tensor):
        indices = convert_to_tensor(indices, dtype=_dtypes.int32)
    return _apply("SparseApplyMomentum", [var, accum], [lr, grad, indices, momentum], attrs, name)


def apply_adam(
    var, m, v, beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad, use_locking=False, name=None
):
    """One Adam step, TF's `ApplyAdam`::

        lr_t = lr * sqrt(1 - beta2_power) / (1 - beta1_power)
        m = m + (grad - m) * (1 - beta1)
        v = v + (grad**2 - v) * (1 - beta2)
        var = var - lr_t * m / (sqrt(v) + epsilon)

    Args:
        var: the `tf.Variable` to update; `m`, `v`: its first and second moment slots.
        beta1_power, beta2_power: ``beta1**t`` and ``beta2**t`` for this step ``t`` (1-based).
        lr, beta1, beta2, epsilon: scalar hyper-parameters of the variable's dtype.
        grad: the gradient, of the variable's shape and dtype.

    Returns:
        The variable's new value (a Tensor).

    Raises:
        TypeError, ValueError: as `apply_gradient_descent`.
    """
    values = [beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad]
    return _apply("ApplyAdam", [var, m, v], values, {"use_locking": bool(use_locking)}, name)


def apply_adagrad(var, accum, lr, grad, use_locking=False, update_slots=True, name=None):
    """One Adagrad step, TF's `ApplyAdagrad`::

        accum += grad**2            (unless update_slots=False)
        var -= lr * grad / sqrt(accum)

    Args:
        var: the `tf.Variable` to update; `accum`: its accumulator slot.
        lr: scalar learning rate of the variable's dtype.
        grad: the gradient, of the variable's shape and dtype.

    Returns:
        The variable's new value (a Tensor).

    Raises:
        TypeError, ValueError: as `apply_gradient_descent`.
    """
    attrs = {"use_locking": bool(use_locking), "update_slots": bool(update_slots)}
    return _apply("ApplyAdagrad", [var, accum], [lr, grad], attrs, name)


def apply_rms_prop(var, ms, mom, lr, rho, momentum, epsilon, grad, use_locking=False, name=None):
    """One RMSProp step, TF's `ApplyRMSProp`::

        ms = ms + (grad**2 - ms) * (1 - rho)
        mom = mom * momentum + lr * grad / sqrt(ms + epsilon)
        var -= mom

    Args:
        var: the `tf.Variable` to update; `ms`, `mom`: its mean-square and momentum slots.
        lr, rho, momentum, epsilon: scalar hyper-parameters of the variable's dtype.
        grad: the gradient, of the variable's shape and dtype.

    Returns:
        The variable's new value (a Tensor).

    Raises:
        TypeError, ValueError: as `apply_gradient_descent`.
    """
    values = [lr, rho, momentum, epsilon, grad]
    return _apply("ApplyRMSProp", [var, ms, mom], values, {"use_locking": bool(use_locking)}, name)


def apply_centered_rms_prop(var, mg, ms, mom, lr, rho, momentum, epsilon, grad, use_locking=False, name=None):
    """One centered RMSProp step, TF's `ApplyCenteredRMSProp`: as `apply_rms_prop`, with the
    mean gradient ``mg = mg + (grad - mg) * (1 - rho)`` and ``sqrt(ms - mg**2 + epsilon)`` as
    the denominator (the gradient's variance instead of its second moment)."""
    values = [lr, rho, momentum, epsilon, grad]
    attrs = {"use_locking": bool(use_locking)}
    return _apply("ApplyCenteredRMSProp", [var, mg, ms, mom], values, attrs, name)
