"""`tf.train.MomentumOptimizer`: ``accum = momentum * accum + grad; var -= lr * accum``."""

from nbdist.ops import training_ops
from nbdist.train.optimizer import Optimizer


class MomentumOptimizer(Optimizer):
    """Gradient descent with momentum (TF 1.x's `tf.train.MomentumOptimizer`).

    Each variable gets a slot ``"momentum"`` (variable ``<var>/Momentum``), zeros at
    first, colocated with the variable.

    Args:
        learning_rate: a number, a scalar Tensor or a callable returning one.
        momentum: a number, a scalar Tensor or a callable returning one.
        use_locking: recorded on the update ops (nbdist always locks).
        name: name scope of the update ops and suffix of the slot variables.
        use_nesterov: use Nesterov momentum (``var -= lr * (grad + momentum * accum)``).
    """

    def __init__(self, learning_rate, momentum, use_locking=False, name="Momentum", use_nesterov=False):
        super().__init__(use_locking, name)
        self._hyper["learning_rate"] = learning_rate
        self._hyper["momentum"] = momentum
        self._use_nesterov = use_nesterov

    def _create_slots(self, var_list):
        for v in var_list:
            self._zeros_slot(v, "momentum", self._name)

    def _apply_dense(self, grad, var):
        return training_ops.apply_momentum(
            var,
            self.get_slot(var, "momentum"),
            self._hyper_tensor("learning_rate", var.dtype),
            grad,
            self._hyper_tensor("momentum", var.dtype),
            use_locking=self._use_locking,
            use_nesterov=self._use_nesterov,
        ).op

    def _apply_sparse(self, grad, var):
        return training_ops.sparse_apply_momentum(
            var,
            self.get_slot(var, "momentum"),
            self._hyper_tensor("learning_rate", var.dtype),
            grad.values,
            grad.indices,
            self._hyper_tensor("momentum", var.dtype),
            use_locking=self._use_locking,
            use_nesterov=self._use_nesterov,
        ).op
