"""`tf.train.FtrlOptimizer`: FTRL-Proximal (McMahan et al.), sparse models with L1 / L2."""

from nbdist.ops import math_ops, training_more_ops
from nbdist.train.optimizer import Optimizer


class FtrlOptimizer(Optimizer):
    """FTRL-Proximal (TF 1.x's `tf.train.FtrlOptimizer`; the update is `apply_ftrl`'s)::

        new_accum = accum + grad**2
        linear += grad - (new_accum**-p - accum**-p) / learning_rate * var      (p: learning_rate_power)
        var = (sign(linear) * l1 - linear) / (new_accum**-p / learning_rate + 2 * l2)  if |linear| > l1
              0                                                                     otherwise

    With ``l2_shrinkage_regularization_strength > 0`` `linear` takes ``grad + 2 * shrinkage * var``
    (TF's `ApplyFtrlV2`); `beta` adds ``beta / (2 * learning_rate)`` to the L2 strength, as TF.

    Slots per variable, colocated with it: ``"accum"`` (filled with `initial_accumulator_value`,
    ``<var>/<accum_name or name>``) and ``"linear"`` (zeros, ``<var>/<linear_name or name>``).

    Raises:
        ValueError: for a positive `learning_rate_power`, a non-positive
            `initial_accumulator_value` or a negative regularization strength (TF's checks).
    """

    def __init__(
        self,
        learning_rate,
        learning_rate_power=-0.5,
        initial_accumulator_value=0.1,
        l1_regularization_strength=0.0,
        l2_regularization_strength=0.0,
        use_locking=False,
        name="Ftrl",
        accum_name=None,
        linear_name=None,
        l2_shrinkage_regularization_strength=0.0,
        beta=None,
    ):
        super().__init__(use_locking, name)
        if initial_accumulator_value < 0.0:
            raise ValueError(
                f"initial_accumulator_value {initial_accumulator_value} needs to be positive or zero"
            )
        if learning_rate_power > 0.0:
            raise ValueError(f"learning_rate_power {learning_rate_power} needs to be negative or zero")
        for what, value in (
            ("l1_regularization_strength", l1_regularization_strength),
            ("l2_regularization_strength", l2_regularization_strength),
            ("l2_shrinkage_regularization_strength", l2_shrinkage_regularization_strength),
        ):
            if value < 0.0:
                raise ValueError(f"{what} {value} needs to be positive or zero")
        self._hyper.update(
            learning_rate=learning_rate,
            learning_rate_power=learning_rate_power,
            l1=l1_regularization_strength,
            l2=l2_regularization_strength,
            l2_shrinkage=l2_shrinkage_regularization_strength,
        )
        self._initial_accumulator_value = initial_accumulator_value
        self._shrinkage = l2_shrinkage_regularization_strength
        self._beta = 0.0 if beta is None else beta
        self._accum_name, self._linear_name = accum_name, linear_name

    def _create_slots(self, var_list):
        for v in var_list:
            self._filled_slot(v, self._initial_accumulator_value, "accum", self._accum_name or self._name)
            self._zeros_slot(v, "linear", self._linear_name or self._name)

    def _apply_dense(self, grad, var):
        lr = self._hyper_tensor("learning_rate", var.dtype)
        l2 = self._hyper_tensor("l2", var.dtype)
        if self._beta:
            l2 = l2 + self._beta / (2.0 * math_ops.maximum(lr, 1e-36))
        l1, power = self._hyper_tensor("l1", var.dtype), self._hyper_tensor("learning_rate_power", var.dtype)
        slots = (self.get_slot(var, "accum"), self.get_slot(var, "linear"))
        if self._shrinkage <= 0.0:
            return training_more_ops.apply_ftrl(
                var, *slots, grad, lr, l1, l2, power, use_locking=self._use_locking
            ).op
        shrinkage = self._hyper_tensor("l2_shrinkage", var.dtype)
        return training_more_ops.apply_ftrl_v2(
            var, *slots, grad, lr, l1, l2, shrinkage, power, use_locking=self._use_locking
        ).op
