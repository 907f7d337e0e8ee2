"""More of the optimizers' update ops: `ApplyAdadelta`, `ApplyFtrl` / `ApplyFtrlV2`,
`ApplyProximalGradientDescent`, `ApplyProximalAdagrad` and `ApplyAdagradDA`, each with TF 1.x's
formula.

As in `training_ops`: the variable and its slots are *ref inputs* (the kernel gets the
`VariableResource`s), hyper-parameters and the gradient are value inputs of the variable's
dtype, the kernel stores new arrays under the resources' locks (copy-on-write) and the op's
output is the variable's new value. Constructors colocate the op with the variable.
"""

import contextlib

import numpy as np

from nbdist import errors
from nbdist.graph.graph import Tensor
from nbdist.ops import registry
from nbdist.ops.constant_op import convert_to_tensor
from nbdist.ops.state_ops import Variable

# op type -> its inputs in TF's order: (name, kind), kind "ref" (variable or slot), "scalar"
# (a hyper-parameter) or "like" (a tensor of the variable's shape: the gradient).
_SIGNATURES = {
    "ApplyAdadelta": (
        ("var", "ref"),
        ("accum", "ref"),
        ("accum_update", "ref"),
        ("lr", "scalar"),
        ("rho", "scalar"),
        ("epsilon", "scalar"),
        ("grad", "like"),
    ),
    "ApplyFtrl": (
        ("var", "ref"),
        ("accum", "ref"),
        ("linear", "ref"),
        ("grad", "like"),
        ("lr", "scalar"),
        ("l1", "scalar"),
        ("l2", "scalar"),
        ("lr_power", "scalar"),
    ),
    "ApplyFtrlV2": (
        ("var", "ref"),
        ("accum", "ref"),
        ("linear", "ref"),
        ("grad", "like"),
        ("lr", "scalar"),
        ("l1", "scalar"),
        ("l2", "scalar"),
        ("l2_shrinkage", "scalar"),
        ("lr_power", "scalar"),
    ),
    "ApplyProximalGradientDescent": (
        ("var", "ref"),
        ("alpha", "scalar"),
        ("l1", "scalar"),
        ("l2", "scalar"),
        ("delta", "like"),
    ),
    "ApplyProximalAdagrad": (
        ("var", "ref"),
        ("accum", "ref"),
        ("lr", "scalar"),
        ("l1", "scalar"),
        ("l2", "scalar"),
        ("grad", "like"),
    ),
    "ApplyAdagradDA": (
        ("var", "ref"),
        ("gradient_accumulator", "ref"),
        ("gradient_squared_accumulator", "ref"),
        ("grad", "like"),
        ("lr", "scalar"),
        ("l1", "scalar"),
        ("l2", "scalar"),
        ("global_step", "step"),
    ),
}


def _apply_shape(op_type):
    signature = _SIGNATURES[op_type]

    def shape_fn(inputs, attrs):
        var = inputs[0]
        for (arg, kind), t in zip(signature, inputs):
            if kind == "step":  # an int64 scalar whatever the variable's dtype
                if t.dtype.name != "int64" or t.shape.ndims not in (None, 0):
                    raise TypeError(
                        f"{op_type}: {arg!r} must be an int64 scalar, got {t.name} ({t.dtype.name})"
                    )
                continue
            if t.dtype != var.dtype:
                raise TypeError(
                    f"{op_type}: input {arg!r} ({t.name}) has dtype {t.dtype.name}, but the variable "
                    f"{var.op.name!r} is {var.dtype.name}; cast it with tf.cast()"
                )
            if kind == "scalar" and t.shape.ndims not in (None, 0):
                raise ValueError(f"{op_type}: {arg!r} must be a scalar, got {t.name} of shape {t.shape}")
            if kind != "scalar" and not t.shape.is_compatible_with(var.shape):
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
@contextlib.contextmanager
def _locked(node, resources):
    """Holds the locks of `resources` in order; refuses a resource given twice."""
    if len(set(resources)) != len(resources):  # (resources hash by identity)
        raise errors.InvalidArgumentError(
            node.name, None, f"{node.op} got the same variable twice among its ref inputs"
        )
    with contextlib.ExitStack() as stack:
        for r in resources:
            stack.enter_context(r.lock)
        yield


def _values(node, var, *slots_and_grad):
    """The variable's value and those of its slots / the gradient, checked to share its shape."""
    w = var.read()
    out = [w]
    for x in slots_and_grad:
        value = x.read() if hasattr(x, "read") else np.asarray(x)
        if value.shape != w.shape:
            raise errors.InvalidArgumentError(
                node.name,
                None,
                f"{node.op}: an input has shape {list(value.shape)}, but the variable {var.name} has "
                f"shape {list(w.shape)}",
            )
        out.append(value)
    return out


def _as(w, value):
    return np.asarray(value, dtype=w.dtype)


@registry.kernel("ApplyAdadelta")
def _apply_adadelta_kernel(ctx, node, var, accum, accum_update, lr, rho, epsilon, grad):
    with _locked(node, (var, accum, accum_update)):
        w, a, u, grad = _values(node, var, accum, accum_update, grad)
        a = _as(w, a * rho + np.square(grad) * (1 - rho))
        update = np.sqrt(u + epsilon) / np.sqrt(a + epsilon) * grad
        u = _as(w, u * rho + np.square(update) * (1 - rho))
        accum.value, accum_update.value = a, u
        var.value = new_w = _as(w, w - update * lr)
    return new_w


def _ftrl(node, var, accum, linear, grad, lr, l1, l2, l2_shrinkage, lr_power):
    with _locked(node, (var, accum, linear)):
        w, a, lin, grad = _values(node, var, accum, linear, grad)
        shrunk = grad + 2 * l2_shrinkage * w if l2_shrinkage is not None else grad
        new_a = _as(w, a + np.square(grad))
        if lr_power == -0.5:
            lin = lin + shrunk - (np.sqrt(new_a) - np.sqrt(a)) / lr * w
            y = np.sqrt(new_a) / lr + 2 * l2
        else:
            lin = lin + shrunk - (np.power(new_a, -lr_power) - np.power(a, -lr_power)) / lr * w
            y = np.power(new_a, -lr_power) / lr + 2 * l2
        lin = _as(w, lin)
        new_w = _as(w, np.where(np.abs(lin) > l1, (np.sign(lin) * l1 - lin) / y, 0))
        accum.value, linear.value, var.value = new_a, lin, new_w
    return new_w


@registry.kernel("ApplyFtrl")
def _apply_ftrl_kernel(ctx, node, var, accum, linear, grad, lr, l1, l2, lr_power):
    return _ftrl(node, var, accum, linear, grad, lr, l1, l2, None, lr_power)


@registry.kernel("ApplyFtrlV2")
def _apply_ftrl_v2_kernel(ctx, node, var, accum, linear, grad, lr, l1, l2, l2_shrinkage, lr_power):
    return _ftrl(node, var, accum, linear, grad, lr, l1, l2, l2_shrinkage, lr_power)


def _proximal(w, prox, lr, l1, l2):
    """TF's proximal step: soft-threshold `prox` by ``lr * l1``, then shrink by ``1 + lr * l2``."""
    if l1 > 0:
        return _as(w, np.sign(prox) * np.maximum(np.abs(prox) - lr * l1, 0) / (1 + lr * l2))
    return _as(w, prox / (1 + lr * l2))


@registry.kernel("ApplyProximalGradientDescent")
def _apply_proximal_gradient_descent_kernel(ctx, node, var, alpha, l1, l2, delta):
    with _locked(node, (var,)):
        w, delta = _values(node, var, delta)
        var.value = new_w = _proximal(w, w - delta * alpha, alpha, l1, l2)
    return new_w


@registry.kernel("ApplyProximalAdagrad")
def _apply_proximal_adagrad_kernel(ctx, node, var, accum, lr, l1, l2, grad):
    with _locked(node, (var, accum)):
        w, a, grad = _values(node, var, accum, grad)
        a = _as(w, a + np.square(grad))
        rate = lr / np.sqrt(a)
        accum.value = a
        var.value = new_w = _proximal(w, w - grad * rate, rate, l1, l2)
    return new_w


@registry.kernel("ApplyAdagradDA")
def _apply_adagrad_da_kernel(ctx, node, var, g_acc, gg_acc, grad, lr, l1, l2, global_step):
    with _locked(node, (var, g_acc, gg_acc)):
        w, g, gg, grad = _values(node, var, g_acc, gg_acc, grad)
        g, gg = _as(w, g + grad), _as(w, gg + np.square(grad))
        shrunk = np.sign(g) * np.maximum(np.abs(g) - global_step * l1, 0) if l1 > 0 else g
        g_acc.value, gg_acc.value = g, gg
        var.value = new_w = _as(w, -lr * shrunk / (l2 * global_step * lr + np.sqrt(gg)))
    return new_w


# -- constructors ---------------------------------------------------------------------------------
def _apply(op_type, refs, values, use_locking, name):
    """Creates `op_type` colocated with the variable (``refs[0]``); returns its output."""
    resolved = []
    for r in refs:
        if isinstance(r, Variable):
            r = r.op.outputs[0]  # (the VariableV2 op's ref output)
        elif not (isinstance(r, Tensor) and r.op.type == "VariableV2"):
            raise TypeError(f"{op_type} updates a tf.Variable, got {r!r}")
        resolved.append(r)
    with resolved[0].graph.colocate_with(resolved[0].op):
        values = [
            v if isinstance(v, Tensor) else convert_to_tensor(v, preferred_dtype=resolved[0].dtype)
            for v in values
        ]
        op = registry.make_op(op_type, resolved + values, {"use_locking": bool(use_locking)}, name=name)
        return op.outputs[0]


def apply_adadelta(var, accum, accum_update, lr, rho, epsilon, grad, use_locking=False, name=None):
    """One Adadelta step, TF's `ApplyAdadelta`::

        accum = rho * accum + (1 - rho) * grad**2
        update = sqrt(accum_update + epsilon) / sqrt(accum + epsilon) * grad
        accum_update = rho * accum_update + (1 - rho) * update**2
        var -= lr * update

    Returns:
        The variable's new value (a Tensor).

    Raises:
        TypeError: if an input's dtype differs from the variable's.
        ValueError: if a hyper-parameter is not a scalar or a shape differs from the variable's.
    """
    values = [lr, rho, epsilon, grad]
    return _apply("ApplyAdadelta", [var, accum, accum_update], values, use_locking, name)


def apply_ftrl(var, accum, linear, grad, lr, l1, l2, lr_power, use_locking=False, name=None):
    """One FTRL-Proximal step, TF's `ApplyFtrl`::

        new_accum = accum + grad**2
        linear += grad - (new_accum**-lr_power - accum**-lr_power) / lr * var
        var = (sign(linear) * l1 - linear) / (new_accum**-lr_power / lr + 2 * l2)  if |linear| > l1
              0                                                                  otherwise
        accum = new_accum

    Returns:
        The variable's new value (a Tensor).

    Raises:
        TypeError, ValueError: as `apply_adadelta`.
    """
    values = [grad, lr, l1, l2, lr_power]
    return _apply("ApplyFtrl", [var, accum, linear], values, use_locking, name)


def apply_ftrl_v2(var, accum, linear, grad, lr, l1, l2, l2_shrinkage, lr_power, use_locking=False, name=None):
    """`apply_ftrl` with L2 shrinkage (TF's `ApplyFtrlV2`): `linear` takes
    ``grad + 2 * l2_shrinkage * var`` instead of ``grad`` (the accumulator still takes ``grad**2``)."""
    values = [grad, lr, l1, l2, l2_shrinkage, lr_power]
    return _apply("ApplyFtrlV2", [var, accum, linear], values, use_locking, name)


def apply_proximal_gradient_descent(var, alpha, l1, l2, delta, use_locking=False, name=None):
    """One proximal gradient step, TF's `ApplyProximalGradientDescent`::

        prox = var - alpha * delta
        var = sign(prox) * max(|prox| - alpha * l1, 0) / (1 + alpha * l2)

    Returns:
        The variable's new value (a Tensor).

    Raises:
        TypeError, ValueError: as `apply_adadelta`.
    """
    return _apply("ApplyProximalGradientDescent", [var], [alpha, l1, l2, delta], use_locking, name)


def apply_proximal_adagrad(var, accum, lr, l1, l2, grad, use_locking=False, name=None):
    """One proximal Adagrad step, TF's `ApplyProximalAdagrad`: ``accum += grad**2``, then
    `apply_proximal_gradient_descent`'s step with the rate ``lr / sqrt(accum)``.

    Returns:
        The variable's new value (a Tensor).

    Raises:
        TypeError, ValueError: as `apply_adadelta`.
    """
    return _apply("ApplyProximalAdagrad", [var, accum], [lr, l1, l2, grad], use_locking, name)


def apply_adagrad_da(
    var,
    gradient_accumulator,
    gradient_squared_accumulator,
    grad,
    lr,
    l1,
    l2,
    global_step,
    use_locking=False,
    name=None,
):
    """One Adagrad dual-averaging step, TF's `ApplyAdagradDA` (`global_step` an int64 scalar, T)::

        g += grad;  gg += grad**2
        var = -lr * shrink(g) / (l2 * T * lr + sqrt(gg)),  shrink(g) = sign(g) * max(|g| - l1 * T, 0)

    (without L1, ``shrink(g) = g``): the variable's old value does not enter.

    Returns:
        The variable's new value (a Tensor).

    Raises:
        TypeError, ValueError: as `apply_adadelta`; TypeError for a `global_step` not int64.
    """
    refs = [var, gradient_accumulator, gradient_squared_accumulator]
    return _apply("ApplyAdagradDA", refs, [grad, lr, l1, l2, global_step], use_locking, name)
