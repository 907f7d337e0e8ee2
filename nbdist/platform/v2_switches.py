"""TF 2's behaviour switches as `tensorflow.compat.v1` has them: a program written for TF 2's
``compat.v1`` calls ``tf.disable_v2_behavior()`` first. nbdist is TF 1.x (graph mode, ref
variables, TF 1.x's `cond`), so each `disable_*` has nothing to switch off; `executing_eagerly`
is False."""


def disable_v2_behavior():
    """Nothing to do: nbdist always behaves as TF 1.x."""


def disable_eager_execution():
    """Nothing to do: nbdist always builds graphs."""


def disable_resource_variables():
    """Nothing to do: nbdist's variables are TF 1.x's ref variables."""


def disable_control_flow_v2():
    """Nothing to do: nbdist's `tf.cond` is TF 1.x's (Switch / Merge)."""


def disable_tensor_equality():
    """Nothing to do: nbdist's ``==`` on tensors compares the objects, as TF 1.x."""


def disable_v2_tensorshape():
    """Nothing to do: nbdist's `TensorShape` dimensions are TF 1.x's."""


def executing_eagerly():
    """False: nbdist builds graphs and runs them in sessions."""
    return False


__all__ = [
    "disable_control_flow_v2",
    "disable_eager_execution",
    "disable_resource_variables",
    "disable_tensor_equality",
    "disable_v2_behavior",
    "disable_v2_tensorshape",
    "executing_eagerly",
]
