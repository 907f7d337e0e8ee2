"""`tf.train.GradientDescentOptimizer`: ``var -= learning_rate * grad``."""

from nbdist.ops import state_ops, training_ops
from nbdist.train.optimizer import Optimizer


class GradientDescentOptimizer(Optimizer):
    """Plain gradient descent (TF 1.x's `tf.train.GradientDescentOptimizer`).

    Args:
        learning_rate: a number, a scalar Tensor (e.g. a placeholder fed per step or a
            decayed rate) or a callable returning one.
        use_locking: recorded on the update ops (nbdist always locks).
        name: name scope of the update ops.

    Example::

        train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    """

    def __init__(self, learning_rate, use_locking=False, name="GradientDescent"):
        super().__init__(use_locking, name)
        self._hyper["learning_rate"] = learning_rate

    def _apply_dense(self, grad, var):
        lr = self._hyper_tensor("learning_rate", var.dtype)
        return training_ops.apply_gradient_descent(var, lr, grad, use_locking=self._use_locking).op

    def _apply_sparse_duplicate_indices(self, grad, var):
        """``ScatterSub`` of ``lr * grad.values`` into the rows `grad` names (repeats add up, as TF)."""
        lr = self._hyper_tensor("learning_rate", var.dtype)
        return state_ops.scatter_sub(var, grad.indices, grad.values * lr, use_locking=self._use_locking).op
