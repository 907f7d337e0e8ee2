"""`tf.train.AdagradDAOptimizer`: Adagrad dual averaging, for sparse (L1-regularised) linear models."""

from nbdist.graph import dtypes as _dtypes
from nbdist.ops import math_ops, training_more_ops
from nbdist.ops.cast_select_ops import cast
from nbdist.train.optimizer import Optimizer


class AdagradDAOptimizer(Optimizer):
    """Adagrad dual averaging (TF 1.x's `tf.train.AdagradDAOptimizer`)::

        g += grad;  gg += grad**2;  T = global_step + 1
        var = -learning_rate * shrink(g) / (l2 * T * learning_rate + sqrt(gg))

    with ``shrink(g) = sign(g) * max(|g| - l1 * T, 0)`` under L1. Each variable gets the slots
    ``"gradient_accumulator"`` (zeros) and ``"gradient_squared_accumulator"`` (filled with
    `initial_gradient_squared_accumulator_value`), named ``<var>/AdagradDA`` and
    ``<var>/AdagradDA_1`` as TF's. `global_step` is required: the update reads it (as TF's, the
    step's value when the update runs, plus one); `minimize(loss, global_step=...)` increments it.

    Raises:
        ValueError: a non-positive `initial_gradient_squared_accumulator_value`.
    """

    def __init__(
        self,
        learning_rate,
        global_step,
        initial_gradient_squared_accumulator_value=0.1,
        l1_regularization_strength=0.0,
        l2_regularization_strength=0.0,
        use_locking=False,
        name="AdagradDA",
    ):
        if initial_gradient_squared_accumulator_value <= 0.0:
            raise ValueError(
                "initial_gradient_squared_accumulator_value must be positive: "
                f"{initial_gradient_squared_accumulator_value}"
            )
        super().__init__(use_locking, name)
        self._hyper.update(
            learning_rate=learning_rate, l1=l1_regularization_strength, l2=l2_regularization_strength
        )
        self._initial_value = initial_gradient_squared_accumulator_value
        self._global_step = global_step

    def _create_slots(self, var_list):
        for v in var_list:
            self._zeros_slot(v, "gradient_accumulator", self._name)
            self._filled_slot(v, self._initial_value, "gradient_squared_accumulator", self._name)

    def _apply_dense(self, grad, var):
        hyper = [self._hyper_tensor(n, var.dtype) for n in ("learning_rate", "l1", "l2")]
        with var.graph.colocate_with(var.op):
            step = math_ops.add(cast(self._global_step, _dtypes.int64), 1)
        return training_more_ops.apply_adagrad_da(
            var,
            self.get_slot(var, "gradient_accumulator"),
            self.get_slot(var, "gradient_squared_accumulator"),
            grad,
            *hyper,
            step,
            use_locking=self._use_locking,
        ).op
