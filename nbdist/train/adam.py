"""`tf.train.AdamOptimizer`: Kingma & Ba's Adam with TF 1.x's update and state layout."""

import numbers

import numpy as np

from nbdist.ops import control_flow_ops, math_ops, state_ops, training_ops
from nbdist.train.optimizer import Optimizer


class AdamOptimizer(Optimizer):
    """Adam (TF 1.x's `tf.train.AdamOptimizer`). At step ``t`` (from 1)::

        lr_t = learning_rate * sqrt(1 - beta2**t) / (1 - beta1**t)
        m = beta1 * m + (1 - beta1) * grad
        v = beta2 * v + (1 - beta2) * grad**2
        var -= lr_t * m / (sqrt(v) + epsilon)

    State: slots ``"m"`` and ``"v"`` per variable (``<var>/Adam``, ``<var>/Adam_1``) and
    two non-slot variables ``beta1_power`` and ``beta2_power`` holding ``beta**t``,
    colocated with the first variable by name and multiplied by beta after the updates.
    The beta powers take the dtype of that variable when `beta1`/`beta2` are numbers
    (TF makes them float32), of the tensors otherwise.

    Args:
        learning_rate, beta1, beta2, epsilon: numbers, scalar Tensors or callables.
        use_locking: recorded on the update ops (nbdist always locks).
        name: name scope of the update ops and suffix of the slot variables.
    """

    def __init__(
        self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8, use_locking=False, name="Adam"
    ):
        super().__init__(use_locking, name)
        self._hyper.update(learning_rate=learning_rate, beta1=beta1, beta2=beta2, epsilon=epsilon)

    def _get_beta_accumulators(self, graph=None):
        return tuple(self._get_non_slot_variable(name, graph) for name in ("beta1_power", "beta2_power"))

    def _create_slots(self, var_list):
        first_var = min(var_list, key=lambda v: v.name)
        for name in ("beta1", "beta2"):
            beta = self._hyper[name]
            beta = beta() if callable(beta) else beta
            if isinstance(beta, numbers.Real):
                beta = np.asarray(beta, dtype=first_var.dtype.np)
            self._create_non_slot_variable(beta, f"{name}_power", colocate_with=first_var)
        for v in var_list:
            self._zeros_slot(v, "m", self._name)
            self._zeros_slot(v, "v", self._name)

    def _apply_dense(self, grad, var):
        beta1_power, beta2_power = self._get_beta_accumulators(var.graph)
        dtype = var.dtype
        return training_ops.apply_adam(
            var,
            self.get_slot(var, "m"),
            self.get_slot(var, "v"),
            math_ops.cast(beta1_power, dtype),
            math_ops.cast(beta2_power, dtype),
            self._hyper_tensor("learning_rate", dtype),
            self._hyper_tensor("beta1", dtype),
            self._hyper_tensor("beta2", dtype),
            self._hyper_tensor("epsilon", dtype),
            grad,
            use_locking=self._use_locking,
        ).op

    def _apply_sparse(self, grad, var):
        """TF's sparse Adam: the moments decay in every row, the gradient adds to its rows only,
        and every row of `var` moves (``Assign`` + ``ScatterAdd`` + ``AssignSub``, all on the
        variable's task)."""
        beta1_power, beta2_power = self._get_beta_accumulators(var.graph)
        dtype = var.dtype
        beta1_power, beta2_power = math_ops.cast(beta1_power, dtype), math_ops.cast(beta2_power, dtype)
        lr_t = self._hyper_tensor("learning_rate", dtype)
        beta1_t = self._hyper_tensor("beta1", dtype)
        beta2_t = self._hyper_tensor("beta2", dtype)
        epsilon_t = self._hyper_tensor("epsilon", dtype)
        lr = lr_t * math_ops.sqrt(1 - beta2_power) / (1 - beta1_power)
        graph = var.graph
        m = self.get_slot(var, "m")
        m_decayed = state_ops.assign(m, m * beta1_t)
        with graph.control_dependencies([m_decayed]):
            m_t = state_ops.scatter_add(m, grad.indices, grad.values * (1 - beta1_t))
        v = self.get_slot(var, "v")
        v_decayed = state_ops.assign(v, v * beta2_t)
        with graph.control_dependencies([v_decayed]):
            v_t = state_ops.scatter_add(v, grad.indices, (grad.values * grad.values) * (1 - beta2_t))
        var_update = state_ops.assign_sub(var, lr * m_t / (math_ops.sqrt(v_t) + epsilon_t))
        return control_flow_ops.group(var_update, m_t, v_t)

    def _finish(self, update_ops, name_scope):
        """Groups the updates with ``beta_power *= beta``, which runs after them."""
        graph = update_ops[0].graph
        beta1_power, beta2_power = self._get_beta_accumulators(graph)
        with graph.control_dependencies(update_ops), graph.colocate_with(beta1_power):
            update_beta1 = beta1_power.assign(beta1_power * self._hyper_tensor("beta1", beta1_power.dtype))
            update_beta2 = beta2_power.assign(beta2_power * self._hyper_tensor("beta2", beta2_power.dtype))
        return control_flow_ops.group(*update_ops, update_beta1, update_beta2, name=name_scope)
