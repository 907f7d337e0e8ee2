"""`tf.layers.Layer`: TF 1.x's layer object over variable scopes and `get_variable`.

A layer's variables live in one variable scope, chosen once: ``name`` when given (the
function forms ``tf.layers.dense(x, 4, name="fc")`` open ``variable_scope("fc")`` at
construction, as TF does), else a unique scope from the class's snake-case name (``dense``,
``dense_1``, ``conv2d_1``...). Variables are made by `get_variable` inside that scope, so
their names (``dense/kernel``), ``reuse=`` and checkpoints line up with TF's; a built layer
called again reuses its variables. The ops of a call are created under the scope's original
name scope (``dense/MatMul``, ``dense/MatMul_1`` on a second call).

Regularizer results join ``REGULARIZATION_LOSSES`` (named ``<layer>/<var>/Regularizer/...``),
a layer's `updates` (batch norm's moving averages) join ``UPDATE_OPS`` after each call.
"""

import re

import numpy as np

from nbdist.graph import dtypes as _dtypes
from nbdist.graph.graph import GraphKeys, Tensor, get_default_graph
from nbdist.ops import math_ops
from nbdist.ops.constant_op import convert_to_tensor
from nbdist.ops.init_ops import glorot_uniform_initializer, zeros_initializer
from nbdist.ops.shape_ops import shape
from nbdist.ops.state_ops import Variable, global_variables
from nbdist.ops.variable_scope import VariableScope, get_variable, variable_scope

__all__ = ["InputSpec", "Layer"]

_UIDS_KEY = ("__layer_name_uids",)


def _snake_case(name):
    intermediate = re.sub("(.)([A-Z][a-z0-9]+)", r"\1_\2", name)
    return re.sub("([a-z])([A-Z])", r"\1_\2", intermediate).lower()


def _unique_layer_name(base_name):
    """Keras's `unique_object_name`: ``dense_1``, ``dense_2``... per graph (the layer's `name`,
    which is not its variable scope's: the first ``Dense()`` is ``dense_1`` in scope ``dense``)."""
    ref = get_default_graph().get_collection_ref(_UIDS_KEY)
    if not ref:
        ref.append({})
    uids = ref[0]
    uids[base_name] = uids.get(base_name, 0) + 1
    return f"{base_name}_{uids[base_name]}"


def training_switch(value, what):
    """`value` as a Python bool, or as a scalar bool tensor: a switch decided at run time
    (``tf.placeholder_with_default(False, [])``), which the layer turns into a ``tf.cond``.

    Raises:
        TypeError: for anything else, or a tensor that is not a scalar bool.
    """
    if isinstance(value, Variable):
        value = value.value()
    if isinstance(value, Tensor):
        if value.dtype != _dtypes.bool or value.shape.ndims not in (None, 0):
            raise TypeError(f"{what}: a training tensor must be a scalar bool, got {value!r}")
        return value
    if isinstance(value, (bool, np.bool_)) or value in (0, 1):
        return bool(value)
    raise TypeError(f"{what}: training must be a Python bool or a scalar bool tensor, got {value!r}")


class InputSpec:
    """`tf.layers.InputSpec`: what a layer accepts (a dtype, a shape or a rank, rank bounds,
    known sizes of some axes), as plain data; nbdist's layers do not check it.

    Args:
        shape: a shape with ``None`` for unknown sizes; sets `ndim` to its length.
        axes: ``{axis: size}`` for the axes whose size is fixed (keys made ints).
    """

    def __init__(
        self,
        dtype=None,
        shape=None,
        ndim=None,
        max_ndim=None,
        min_ndim=None,
        axes=None,
        allow_last_axis_squeeze=False,
        name=None,
    ):
        self.dtype = None if dtype is None else _dtypes.as_dtype(dtype).name
        self.shape = None if shape is None else tuple(shape)
        self.ndim = len(self.shape) if self.shape is not None else ndim
        self.max_ndim = max_ndim
        self.min_ndim = min_ndim
        self.name = name
        self.allow_last_axis_squeeze = allow_last_axis_squeeze
        self.axes = {int(k): v for k, v in (axes or {}).items()}
        if self.axes and self.ndim is not None and max(self.axes) >= self.ndim:
            raise ValueError(f"InputSpec: axis {max(self.axes)} is beyond ndim {self.ndim}")

    def __repr__(self):
        fields = ("dtype", "shape", "ndim", "max_ndim", "min_ndim", "axes")
        spec = [f"{k}={getattr(self, k)}" for k in fields if getattr(self, k)]
        return f"InputSpec({', '.join(spec)})"

    def get_config(self):
        return {
            "dtype": self.dtype,
            "shape": self.shape,
            "ndim": self.ndim,
            "max_ndim": self.max_ndim,
            "min_ndim": self.min_ndim,
            "axes": self.axes,
        }

    @classmethod
    def from_config(cls, config):
        return cls(**config)


def add_to_collection_once(elements, key):
    collection = get_default_graph().get_collection_ref(key)
    present = {id(e) for e in collection}
    collection.extend(e for e in elements if id(e) not in present)


class Layer:
    """`tf.layers.Layer`: a layer with its own variable scope (TF 1.x's ``tf.layers`` base class).

    Subclasses define ``build(input_shape)`` (creating variables with `add_weight`) and
    ``call(inputs, ...)``; calling the layer builds it once, then runs `call` in its scope.

    Args:
        trainable: whether its variables join ``TRAINABLE_VARIABLES``.
        name: the variable scope's name (made unique unless the function form's ``_scope``
            fixes it); default the class's snake-case name.
        dtype: the variables' dtype; default the first input's.
    """

    def __init__(self, trainable=True, name=None, dtype=None, **kwargs):
        scope = kwargs.pop("_scope", None)
        self._reuse = kwargs.pop("_reuse", None)
        if kwargs:
            raise TypeError(f"{type(self).__name__}: unexpected keyword arguments {sorted(kwargs)!r}")
        self.trainable = trainable
        self.built = False
        self.dtype = None if dtype is None else _dtypes.as_dtype(dtype)
        self._trainable_weights = []
        self._non_trainable_weights = []
        self._losses = []
        self._updates = []
        self.activity_regularizer = None
        snake = _snake_case(type(self).__name__)
        if isinstance(name, VariableScope):
            self._base_name, self._name = name.name, _unique_layer_name(snake)
        elif name:
            self._base_name = self._name = name
        else:
            self._base_name, self._name = snake, _unique_layer_name(snake)
        self._scope = None
        if scope:
            with variable_scope(scope) as captured:
                self._scope = captured
        self._current_scope = None

    # -- what TF's layers expose ----------------------------------------------------------------
    name = property(lambda self: self._name)
    trainable_weights = property(lambda self: list(self._trainable_weights) if self.trainable else [])
    trainable_variables = trainable_weights
    losses = property(lambda self: list(self._losses))
    updates = property(lambda self: list(self._updates))

    @property
    def non_trainable_weights(self):
        if self.trainable:
            return list(self._non_trainable_weights)
        return self._trainable_weights + self._non_trainable_weights

    non_trainable_variables = non_trainable_weights

    @property
    def weights(self):
        return self.trainable_weights + self.non_trainable_weights

    variables = weights

    @property
    def scope_name(self):
        if self._scope is None:
            raise ValueError(f"layer {self._name!r}: no name scope yet; call the layer first")
        return self._scope.name

    def build(self, input_shape):
        self.built = True

    def call(self, inputs):
        return inputs

    def apply(self, inputs, *args, **kwargs):
        return self(inputs, *args, **kwargs)

    # -- scopes and variables ---------------------------------------------------------------------
    def _set_scope(self, scope=None):
        if self._scope is not None:
            return
        if self._reuse:
            opened = variable_scope(scope if scope is not None else self._base_name)
        else:
            opened = variable_scope(scope, default_name=self._base_name)
        with opened as captured:
            self._scope = captured

    def add_weight(
        self,
        name,
        shape,
        dtype=None,
        initializer=None,
        regularizer=None,
        trainable=None,
        constraint=None,
        partitioner=None,
    ):
        """A variable ``<scope>/<name>`` from `get_variable` (created, or shared once built / with
        ``reuse``); its `regularizer`'s result joins ``REGULARIZATION_LOSSES`` when it is new."""
        trainable = True if trainable is None else trainable
        existing = {id(v) for v in global_variables()}
        dtype = _dtypes.as_dtype(dtype or self.dtype or _dtypes.float32)
        self._set_scope(None)
        graph = get_default_graph()
        with variable_scope(
            self._scope, reuse=self.built or self._reuse, auxiliary_name_scope=False
        ) as scope:
            self._current_scope = scope
            with graph.name_scope(scope.original_name_scope):
                if initializer is None:
                    initializer = scope.initializer
                if initializer is None:
                    initializer = glorot_uniform_initializer() if dtype.is_floating else zeros_initializer()
                variable = get_variable(
                    name,
                    shape=shape,
                    dtype=dtype,
                    initializer=initializer,
                    trainable=trainable and self.trainable,
                    constraint=constraint,
                    partitioner=partitioner,
                )
                if regularizer is not None and id(variable) not in existing:
                    with graph.name_scope(f"{name}/Regularizer"):
                        self._add_losses([regularizer(variable)])
        target = self._trainable_weights if trainable else self._non_trainable_weights
        if all(v is not variable for v in target):
            target.append(variable)
        return variable

    def _add_losses(self, losses):
        losses = [convert_to_tensor(t) for t in losses if t is not None]
        self._losses.extend(losses)
        add_to_collection_once(losses, GraphKeys.REGULARIZATION_LOSSES)

    def add_update(self, updates):
        """Records update ops (a tensor counts as its op, as in TF: ``UPDATE_OPS`` holds ops)."""
        updates = updates if isinstance(updates, (list, tuple)) else [updates]
        self._updates.extend(getattr(u, "op", u) for u in updates)

    def __call__(self, inputs, *args, **kwargs):
        """Builds the layer on first use, then runs `call` in its scope (``scope=`` fixes the scope
        of a layer not yet built)."""
        self._set_scope(kwargs.pop("scope", None))
        graph = get_default_graph()
        reuse = True if self.built else self._reuse
        with variable_scope(self._scope, reuse=reuse, auxiliary_name_scope=False) as scope:
            self._current_scope = scope
            with graph.name_scope(scope.original_name_scope):
                inputs = convert_to_tensor(inputs)
                if not self.built:
                    if self.dtype is None:
                        self.dtype = inputs.dtype
                    self.build(inputs.shape)
                    self.built = True
                outputs = self.call(inputs, *args, **kwargs)
                if self.activity_regularizer is not None:
                    self._activity_loss(outputs)
        add_to_collection_once(self._updates, GraphKeys.UPDATE_OPS)
        return outputs

    def _activity_loss(self, outputs):
        """Keras's activity regularization: the regularizer's value divided by the batch size."""
        with get_default_graph().name_scope("ActivityRegularizer"):
            loss = convert_to_tensor(self.activity_regularizer(outputs))
            batch_size = math_ops.cast(shape(outputs)[0], loss.dtype)
            self._add_losses([loss / batch_size])

    def __repr__(self):
        return f"<tf.layers.{type(self).__name__} {self._name!r}>"
