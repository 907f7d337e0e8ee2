"""`tf.train.ProximalGradientDescentOptimizer` and `tf.train.ProximalAdagradOptimizer`: a gradient
step followed by the L1 / L2 proximal operator (soft-thresholding, then shrinking)."""

from nbdist.ops import training_more_ops
from nbdist.train.optimizer import Optimizer


class ProximalGradientDescentOptimizer(Optimizer):
    """Proximal gradient descent (TF 1.x's `tf.train.ProximalGradientDescentOptimizer`)::

        prox = var - learning_rate * grad
        var = sign(prox) * max(|prox| - learning_rate * l1, 0) / (1 + learning_rate * l2)

    No slots.

    Args:
        learning_rate: a number, a scalar Tensor or a callable returning one.
        l1_regularization_strength, l2_regularization_strength: non-negative numbers.
        use_locking: recorded on the update ops (nbdist always locks).
        name: name scope of the update ops.
    """

    def __init__(
        self,
        learning_rate,
        l1_regularization_strength=0.0,
        l2_regularization_strength=0.0,
        use_locking=False,
        name="ProximalGradientDescent",
    ):
        super().__init__(use_locking, name)
        self._hyper.update(
            learning_rate=learning_rate, l1=l1_regularization_strength, l2=l2_regularization_strength
        )

    def _apply_dense(self, grad, var):
        hyper = [self._hyper_tensor(n, var.dtype) for n in ("learning_rate", "l1", "l2")]
        return training_more_ops.apply_proximal_gradient_descent(
            var, *hyper, grad, use_locking=self._use_locking
        ).op


class ProximalAdagradOptimizer(Optimizer):
    """Proximal Adagrad (TF 1.x's `tf.train.ProximalAdagradOptimizer`)::

        accum += grad**2
        rate = learning_rate / sqrt(accum)
        prox = var - rate * grad
        var = sign(prox) * max(|prox| - rate * l1, 0) / (1 + rate * l2)

    Each variable gets a slot ``"accumulator"`` (``<var>/ProximalAdagrad``) filled with
    `initial_accumulator_value`.

    Raises:
        ValueError: if `initial_accumulator_value` is not positive.
    """

    def __init__(
        self,
        learning_rate,
        initial_accumulator_value=0.1,
        l1_regularization_strength=0.0,
        l2_regularization_strength=0.0,
        use_locking=False,
        name="ProximalAdagrad",
    ):
        if initial_accumulator_value <= 0.0:
            raise ValueError(f"initial_accumulator_value must be positive: {initial_accumulator_value}")
        super().__init__(use_locking, name)
        self._hyper.update(
            learning_rate=learning_rate, l1=l1_regularization_strength, l2=l2_regularization_strength
        )
        self._initial_accumulator_value = initial_accumulator_value

    def _create_slots(self, var_list):
        for v in var_list:
            self._filled_slot(v, self._initial_accumulator_value, "accumulator", self._name)

    def _apply_dense(self, grad, var):
        hyper = [self._hyper_tensor(n, var.dtype) for n in ("learning_rate", "l1", "l2")]
        return training_more_ops.apply_proximal_adagrad(
            var, self.get_slot(var, "accumulator"), *hyper, grad, use_locking=self._use_locking
        ).op
