"""TF 2's behaviour switches as `tensorflow.compat.v1` has them: a program written for TF 2's
``compat.v1`` calls ``tf.disable_v2_behavior()`` first. nbdist is TF 1.x (graph mode, ref
variables, TF 1.x's `cond`), so each `disable_*` has nothing to switch off; `executing_eagerly`
and the other queries answer False.

Of the `enable_*` switches nbdist honours the one whose behaviour it already has
(`enable_v2_tensorshape`: shapes index to ints); the others would need what nbdist is not
(eager execution, resource variables, functional `cond`, elementwise ``==`` on tensors), so
they raise `NotImplementedError` saying so, rather than letting a program believe it runs
under TF 2's rules.
"""


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
    """Accepted for TF 1.x programs; nbdist's shapes still index to ints or None (TF 2's, as
    `enable_v2_tensorshape` says), which compare equal to TF 1.x's `Dimension`s; a known one
    also has TF 1.x's ``.value`` (``x.get_shape()[1].value``), an unknown one is None."""


def executing_eagerly():
    """False: nbdist builds graphs and runs them in sessions."""
    return False


def executing_eagerly_outside_functions():
    """False: outside functions too, nbdist builds graphs."""
    return False


def control_flow_v2_enabled():
    """False: `tf.cond` builds TF 1.x's Switch / Merge (its `tf.while_loop` is a functional
    ``While`` op either way)."""
    return False


def resource_variables_enabled():
    """False: nbdist's variables are TF 1.x's ref variables (``VariableV2``)."""
    return False


def enable_v2_tensorshape():
    """Nothing to do: indexing an nbdist `TensorShape` already gives an int or None (TF 2's),
    not a `Dimension` (a known one is an int with ``.value`` too)."""


def _refuse(switch, what):
    def refused(*args, **kwargs):
        raise NotImplementedError(
            f"tf.{switch}() cannot be honoured: nbdist {what}. Remove the call; nbdist runs "
            "TF 1.x graph programs (tf.placeholder, tf.Session), as after tf.disable_v2_behavior()"
        )

    refused.__name__ = refused.__qualname__ = switch
    refused.__doc__ = f"Refused: nbdist {what}."
    return refused


enable_eager_execution = _refuse("enable_eager_execution", "builds graphs and runs them in sessions only")
enable_v2_behavior = _refuse("enable_v2_behavior", "is TF 1.x: graphs, ref variables, Switch / Merge cond")
enable_resource_variables = _refuse(
    "enable_resource_variables", "has TF 1.x's ref variables (VariableV2) only"
)
enable_control_flow_v2 = _refuse("enable_control_flow_v2", "builds tf.cond as TF 1.x's Switch / Merge only")
enable_tensor_equality = _refuse(
    "enable_tensor_equality", "compares tensors by identity (they are dict keys throughout)"
)

__all__ = [
    "control_flow_v2_enabled",
    "disable_control_flow_v2",
    "disable_eager_execution",
    "disable_resource_variables",
    "disable_tensor_equality",
    "disable_v2_behavior",
    "disable_v2_tensorshape",
    "enable_control_flow_v2",
    "enable_eager_execution",
    "enable_resource_variables",
    "enable_tensor_equality",
    "enable_v2_behavior",
    "enable_v2_tensorshape",
    "executing_eagerly",
    "executing_eagerly_outside_functions",
    "resource_variables_enabled",
]
