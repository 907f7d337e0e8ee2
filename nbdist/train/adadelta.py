"""`tf.train.AdadeltaOptimizer`: steps scaled by running averages of squared gradients and updates."""

from nbdist.ops import training_more_ops
from nbdist.train.optimizer import Optimizer


class AdadeltaOptimizer(Optimizer):
    """Adadelta (TF 1.x's `tf.train.AdadeltaOptimizer`)::

        accum = rho * accum + (1 - rho) * grad**2
        update = sqrt(accum_update + epsilon) / sqrt(accum + epsilon) * grad
        accum_update = rho * accum_update + (1 - rho) * update**2
        var -= learning_rate * update

    Slots per variable (zeros, colocated with it): ``"accum"`` (``<var>/Adadelta``) and
    ``"accum_update"`` (``<var>/Adadelta_1``).

    Args:
        learning_rate, rho, epsilon: numbers, scalar Tensors or callables.
        use_locking: recorded on the update ops (nbdist always locks).
        name: name scope of the update ops and suffix of the slot variables.
    """

    def __init__(self, learning_rate=0.001, rho=0.95, epsilon=1e-8, use_locking=False, name="Adadelta"):
        super().__init__(use_locking, name)
        self._hyper.update(learning_rate=learning_rate, rho=rho, epsilon=epsilon)

    def _create_slots(self, var_list):
        for v in var_list:
            self._zeros_slot(v, "accum", self._name)
            self._zeros_slot(v, "accum_update", self._name)

    def _apply_dense(self, grad, var):
        return training_more_ops.apply_adadelta(
            var,
            self.get_slot(var, "accum"),
            self.get_slot(var, "accum_update"),
            *[self._hyper_tensor(n, var.dtype) for n in ("learning_rate", "rho", "epsilon")],
            grad,
            use_locking=self._use_locking,
        ).op
