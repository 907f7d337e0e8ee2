"""`tf.train.ExponentialMovingAverage`: shadow variables that follow variables (or tensors).

``apply(var_list)`` creates, for each variable, a shadow variable ``<var>/<name>``
colocated with it (so on its ps: updating the average sends nothing over the wire) and
returns the op that moves every shadow toward its variable::

    shadow -= (1 - decay) * (shadow - var)

With ``num_updates`` the decay is ``min(decay, (1 + num_updates) / (10 + num_updates))``,
so early averages move faster. A *tensor* (not a variable) gets a zeros shadow, and with
``zero_debias=True`` TF's bias correction (a ``biased`` and a ``local_step`` variable).

Reads: TF reads the variable through its snapshot, which aliases the variable's buffer,
so an average built under ``control_dependencies([train_op])`` sees the updated value.
nbdist's snapshots are copy-on-write values, so `apply` reads each variable (and
``num_updates``, when it is a variable) with a fresh read made in the caller's control
context: the average follows the value *after* the update, as in TF.

One difference: a shadow starts at the variable's initial value (the same tensor, so the
same value when both run in one initializer step, which is how
`tf.global_variables_initializer()` runs them). TF starts it at ``var.initialized_value()``,
which differs only when the variable was initialized (or restored) in an earlier step.
"""

from nbdist.graph import dtypes as _dtypes
from nbdist.graph.graph import GraphKeys, Tensor, get_default_graph
from nbdist.ops import array_ops, control_flow_ops, init_ops, math_ops, state_ops, variable_scope
from nbdist.ops.constant_op import convert_to_tensor

_FLOAT_TYPES = (_dtypes.float16, _dtypes.float32, _dtypes.float64)


def _read_now(value):
    """A variable's value read in the current control context (colocated with it); a tensor as is."""
    if not isinstance(value, state_ops.Variable):
        return convert_to_tensor(value)
    return state_ops.read_variable_now(value)


def assign_moving_average(variable, value, decay, zero_debias=True, name=None):
    """``variable -= (1 - decay) * (variable - value)`` (TF's `moving_averages.assign_moving_average`).

    With `zero_debias`, `variable` is the debiased average of a biased one kept beside it.
    Returns the updated value of `variable`.
    """
    graph = get_default_graph()
    with graph.name_scope(name or "AssignMovingAvg") as scope:
        one_minus_decay = convert_to_tensor(1.0 - decay, name="decay")
        if one_minus_decay.dtype != variable.dtype:
            one_minus_decay = math_ops.cast(one_minus_decay, variable.dtype)
        if zero_debias:
            return _zero_debias(variable, value, one_minus_decay, scope)
        current = _read_now(variable)
        return state_ops.assign_sub(variable, (current - _read_now(value)) * one_minus_decay, name=scope)


def _zero_debias(unbiased, value, one_minus_decay, scope):
    """TF's zero-debiased update: a biased EMA from zero, divided by ``1 - decay**t``."""
    graph = unbiased.graph
    with (
        variable_scope.variable_scope(unbiased.op.name),
        graph.name_scope(None),
        graph.control_dependencies(None),
        graph.colocate_with(unbiased),
    ):
        zeros = init_ops.zeros_initializer()
        biased = variable_scope.get_variable(
            "biased", shape=unbiased.shape, dtype=unbiased.dtype, initializer=zeros, trainable=False
        )
        local_step = variable_scope.get_variable(
            "local_step", shape=[], dtype=unbiased.dtype, initializer=zeros, trainable=False
        )
    update_biased = state_ops.assign_sub(biased, (_read_now(biased) - _read_now(value)) * one_minus_decay)
    update_step = state_ops.assign_add(local_step, 1)
    bias_factor = 1 - math_ops.pow(1.0 - one_minus_decay, update_step)
    return state_ops.assign(unbiased, update_biased / bias_factor, name=scope)


class ExponentialMovingAverage:
    """Maintains moving averages of variables (TF 1.x's `tf.train.ExponentialMovingAverage`).

    Args:
        decay: the decay, a number or a scalar float tensor (e.g. 0.999).
        num_updates: optional count of updates so far (e.g. the global step): the decay
            is then ``min(decay, (1 + num_updates) / (10 + num_updates))``.
        zero_debias: debias the averages of *tensors* (variables' shadows start at the
            variable's value and need no debiasing).
        name: suffix of the shadow variables and name scope of the update ops.

    Example::

        train_op = opt.minimize(loss, global_step=step)
        ema = tf.train.ExponentialMovingAverage(0.99, num_updates=step)
        with tf.control_dependencies([train_op]):
            train_op = ema.apply(tf.trainable_variables())
    """

    def __init__(self, decay, num_updates=None, zero_debias=False, name="ExponentialMovingAverage"):
        self._decay = decay
        self._num_updates = num_updates
        self._zero_debias = zero_debias
        self._name = name
        self._averages = {}  # variable or tensor -> its shadow Variable

    @property
    def name(self):
        return self._name

    def apply(self, var_list=None):
        """Creates the shadows (once) and returns the op that updates every average.

        Args:
            var_list: variables or tensors (default: the trainable variables).

        Raises:
            TypeError: for a variable or tensor that is not float16/32/64.
            ValueError: for the same variable twice in `var_list`.
        """
        graph = get_default_graph()
        var_list = state_ops.trainable_variables() if var_list is None else list(var_list)
        if len({id(v) for v in var_list}) != len(var_list):
            raise ValueError(f"ExponentialMovingAverage.apply: a variable is listed twice in {var_list}")
        debiased = set()
        for var in var_list:
            if var.dtype not in _FLOAT_TYPES:
                raise TypeError(f"The variables must be half, float, or double: {var.name}")
            if var in self._averages:
                continue
            if isinstance(var, state_ops.Variable):
                # The shadow starts at the variable's initial value, on the variable's task.
                avg = _create_slot(var, var.initial_value, self._name)
                graph.add_to_collection(GraphKeys.MOVING_AVERAGE_VARIABLES, var)
            elif isinstance(var, Tensor):
                avg = _create_zeros_slot(var, self._name)
                if self._zero_debias:
                    debiased.add(avg)
            else:
                raise TypeError(f"ExponentialMovingAverage.apply takes variables or tensors, got {var!r}")
            self._averages[var] = avg
        with graph.name_scope(self._name) as scope:
            decay = convert_to_tensor(self._decay, name="decay")
            if self._num_updates is not None:
                num_updates = math_ops.cast(_read_now(self._num_updates), _dtypes.float32, name="num_updates")
                decay = math_ops.minimum(decay, (1.0 + num_updates) / (10.0 + num_updates))
            updates = [
                assign_moving_average(
                    self._averages[var], var, decay, zero_debias=self._averages[var] in debiased
                )
                for var in var_list
            ]
            return control_flow_ops.group(*updates, name=scope)

    def average(self, var):
        """The shadow variable of `var`, or None if `apply` did not get it."""
        return self._averages.get(var)

    def average_name(self, var):
        """The shadow's op name: ``<var op name>/<name>`` (or the one `apply` made unique)."""
        if var in self._averages:
            return self._averages[var].op.name
        return get_default_graph().unique_name(f"{var.op.name}/{self._name}", mark_as_used=False)

    def variables_to_restore(self, moving_avg_variables=None):
        """``{name in a checkpoint: variable}`` that restores the *averages* into the variables.

        Args:
            moving_avg_variables: the averaged variables (default: the trainable ones and
                the ``MOVING_AVERAGE_VARIABLES`` collection); every other global variable
                maps its own name to itself.
        """
        if moving_avg_variables is None:
            moving_avg_variables = state_ops.trainable_variables() + state_ops.moving_average_variables()
        moving_avg_variables = list(dict.fromkeys(moving_avg_variables))
        name_map = {self.average_name(v): v for v in moving_avg_variables}
        averaged = {v.name for v in moving_avg_variables}
        for v in state_ops.global_variables():
            if v.name not in averaged and v.op.name not in name_map:
                name_map[v.op.name] = v
        return name_map


def _create_slot(primary, initial_value, name):
    """A non-trainable variable ``<primary>/<name>`` starting at `initial_value`, colocated with it."""
    graph = primary.graph
    with graph.name_scope(None), graph.control_dependencies(None), graph.colocate_with(primary):
        return state_ops.Variable(initial_value, trainable=False, name=f"{primary.op.name}/{name}")


def _create_zeros_slot(tensor, name):
    """A non-trainable variable of zeros shaped like `tensor`, ``<tensor op>/<name>`` (placed by
    the device scopes, as TF places a tensor's shadow).

    Raises:
        ValueError: when `tensor`'s shape is not fully defined.
    """
    if not tensor.shape.is_fully_defined():
        raise ValueError(
            f"ExponentialMovingAverage: the shape of {tensor.name} must be fully defined, got {tensor.shape}"
        )
    graph = tensor.graph
    with graph.name_scope(None), graph.control_dependencies(None):
        zeros = array_ops.zeros(tensor.shape.as_list(), tensor.dtype)
        return state_ops.Variable(zeros, trainable=False, name=f"{tensor.op.name}/{name}")
