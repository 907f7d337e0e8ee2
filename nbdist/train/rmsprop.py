"""`tf.train.RMSPropOptimizer`: gradients divided by a running root mean square (Hinton's RMSProp)."""

from nbdist.ops import training_ops
from nbdist.train.optimizer import Optimizer


class RMSPropOptimizer(Optimizer):
    """RMSProp (TF 1.x's `tf.train.RMSPropOptimizer`)::

        ms = decay * ms + (1 - decay) * grad**2
        mom = momentum * mom + learning_rate * grad / sqrt(ms + epsilon)
        var -= mom

    With ``centered=True`` the denominator is ``sqrt(ms - mg**2 + epsilon)``, where ``mg`` is
    the running mean of the gradient (an estimate of its variance instead of its second moment).

    Slots per variable, colocated with it, named as TF names them: ``"rms"`` (``<var>/RMSProp``,
    ones at first, as in TF 1.x), then ``"mg"`` when centered, then ``"momentum"`` (zeros;
    ``<var>/RMSProp_1``, or ``_2`` when centered).

    Args:
        learning_rate, decay, momentum, epsilon: numbers, scalar Tensors or callables.
        use_locking: recorded on the update ops (nbdist always locks).
        centered: normalise by the gradient's estimated variance.
        name: name scope of the update ops and suffix of the slot variables.
    """

    def __init__(
        self,
        learning_rate,
        decay=0.9,
        momentum=0.0,
        epsilon=1e-10,
        use_locking=False,
        centered=False,
        name="RMSProp",
    ):
        super().__init__(use_locking, name)
        self._hyper.update(learning_rate=learning_rate, decay=decay, momentum=momentum, epsilon=epsilon)
        self._centered = centered

    def _create_slots(self, var_list):
        for v in var_list:
            self._filled_slot(v, 1, "rms", self._name)
            if self._centered:
                self._zeros_slot(v, "mg", self._name)
            self._zeros_slot(v, "momentum", self._name)

    def _apply_dense(self, grad, var):
        hyper = [self._hyper_tensor(n, var.dtype) for n in ("learning_rate", "decay", "momentum", "epsilon")]
        rms, mom = self.get_slot(var, "rms"), self.get_slot(var, "momentum")
        if self._centered:
            return training_ops.apply_centered_rms_prop(
                var, self.get_slot(var, "mg"), rms, mom, *hyper, grad, use_locking=self._use_locking
            ).op
        return training_ops.apply_rms_prop(var, rms, mom, *hyper, grad, use_locking=self._use_locking).op
