"""`tf.train.AdagradOptimizer`: per-coordinate learning rates from the sum of squared gradients."""

from nbdist.ops import training_ops
from nbdist.train.optimizer import Optimizer


class AdagradOptimizer(Optimizer):
    """Adagrad (TF 1.x's `tf.train.AdagradOptimizer`)::

        accum += grad**2
        var -= learning_rate * grad / sqrt(accum)

    Each variable gets a slot ``"accumulator"`` (variable ``<var>/Adagrad``) filled with
    `initial_accumulator_value`, colocated with the variable.

    Args:
        learning_rate: a number, a scalar Tensor or a callable returning one.
        initial_accumulator_value: the accumulators' starting value; must be positive.
        use_locking: recorded on the update ops (nbdist always locks).
        name: name scope of the update ops and suffix of the slot variables.

    Raises:
        ValueError: if `initial_accumulator_value` is not positive.
    """

    def __init__(self, learning_rate, initial_accumulator_value=0.1, use_locking=False, name="Adagrad"):
        if initial_accumulator_value <= 0.0:
            raise ValueError(f"initial_accumulator_value must be positive: {initial_accumulator_value}")
        super().__init__(use_locking, name)
        self._hyper["learning_rate"] = learning_rate
        self._initial_accumulator_value = initial_accumulator_value

    def _create_slots(self, var_list):
        for v in var_list:
            self._filled_slot(v, self._initial_accumulator_value, "accumulator", self._name)

    def _apply_dense(self, grad, var):
        return training_ops.apply_adagrad(
            var,
            self.get_slot(var, "accumulator"),
            self._hyper_tensor("learning_rate", var.dtype),
            grad,
            use_locking=self._use_locking,
        ).op
