"""`tf.layers.BatchNormalization` / `batch_normalization` (TF 1.x's layer).

Variables ``gamma`` (ones), ``beta`` (zeros), and the non-trainable ``moving_mean`` (zeros) and
``moving_variance`` (ones), in that order, as TF makes them. With ``training=True`` the batch's
moments normalize and each moving average gets ``moving -= (moving - batch) * (1 - momentum)``
(an `AssignSub` in ``AssignMovingAvg``, colocated with the variable), in ``UPDATE_OPS``; with
``training=False`` the moving averages normalize and nothing updates.

TF computes 4-D (and 5-D) inputs with channels on axis 1 or last with its fused kernel, whose
batch variance for the *update* carries Bessel's correction (``n / (n - 1)``, n the values per
channel) while the output uses the plain variance; ``fused`` keeps that rule here (the values are
computed by `tf.nn.moments` and `tf.nn.batch_normalization` either way).
"""

import math

from nbdist.graph.graph import colocate_with, get_default_graph
from nbdist.graph.tensor_shape import TensorShape
from nbdist.ops import math_ops
from nbdist.ops.cond_ops import cond
from nbdist.ops.constant_op import convert_to_tensor
from nbdist.ops.init_ops import ones_initializer, zeros_initializer
from nbdist.ops.layers_base import Layer, training_switch
from nbdist.ops.normalization_ops import batch_normalization as _nn_batch_normalization
from nbdist.ops.normalization_ops import moments
from nbdist.ops.reshape_ops import reshape
from nbdist.ops.shape_ops import size
from nbdist.ops.state_ops import assign_sub
from nbdist.ops.unary_ops import identity

__all__ = ["BatchNormalization", "batch_normalization"]


class BatchNormalization(Layer):
    """`tf.layers.BatchNormalization`: normalizes over every axis but `axis` (the channels).

    Args:
        axis: the axis (or list of axes) kept: the features.
        momentum: of the moving averages; epsilon: added to the variance.
        center, scale: make ``beta`` / ``gamma`` (else 0 and 1).
        fused: None (TF's choice: 4-D/5-D inputs with channels on axis 1 or last), True or False;
            it decides whether the variance of the moving update has Bessel's correction.

    Raises:
        NotImplementedError: for ``renorm=True``, a `virtual_batch_size` or an `adjustment`.
        ValueError: for an axis out of range or an input whose feature dimensions are unknown.
    """

    def __init__(
        self,
        axis=-1,
        momentum=0.99,
        epsilon=1e-3,
        center=True,
        scale=True,
        beta_initializer=None,
        gamma_initializer=None,
        moving_mean_initializer=None,
        moving_variance_initializer=None,
        beta_regularizer=None,
        gamma_regularizer=None,
        beta_constraint=None,
        gamma_constraint=None,
        renorm=False,
        renorm_clipping=None,
        renorm_momentum=0.99,
        fused=None,
        trainable=True,
        virtual_batch_size=None,
        adjustment=None,
        name=None,
        **kwargs,
    ):
        super().__init__(trainable=trainable, name=name, **kwargs)
        for what, value in (
            ("renorm", renorm or None),
            ("virtual_batch_size", virtual_batch_size),
            ("adjustment", adjustment),
        ):
            if value is not None:
                raise NotImplementedError(
                    f"{self.name}: BatchNormalization's {what}={value!r} is not supported by nbdist yet"
                )
        del renorm_clipping, renorm_momentum
        self.axis = list(axis) if isinstance(axis, (list, tuple)) else axis
        self.momentum = momentum
        self.epsilon = epsilon
        self.center = center
        self.scale = scale
        self.beta_initializer = beta_initializer or zeros_initializer()
        self.gamma_initializer = gamma_initializer or ones_initializer()
        self.moving_mean_initializer = moving_mean_initializer or zeros_initializer()
        self.moving_variance_initializer = moving_variance_initializer or ones_initializer()
        self.beta_regularizer = beta_regularizer
        self.gamma_regularizer = gamma_regularizer
        self.beta_constraint = beta_constraint
        self.gamma_constraint = gamma_constraint
        self.fused = fused

    def build(self, input_shape):
        input_shape = TensorShape(input_shape)
        ndims = input_shape.ndims
        if ndims is None:
            raise ValueError(f"{self.name}: the inputs' rank must be known")
        axes = self.axis if isinstance(self.axis, list) else [self.axis]
        if any(not -ndims <= a < ndims for a in axes):
            raise ValueError(f"{self.name}: axis {self.axis!r} out of range for inputs of rank {ndims}")
        self.axis = sorted({a % ndims for a in axes})
        dims = {a: input_shape.dims[a] for a in self.axis}
        if any(d is None for d in dims.values()):
            raise ValueError(f"{self.name}: axis {self.axis!r} of inputs {input_shape} must have known sizes")
        if self.fused is None:
            self.fused = ndims in (4, 5) and len(self.axis) == 1 and self.axis[0] in (1, ndims - 1)
        if len(self.axis) == 1:
            param_shape = [dims[self.axis[0]]]
        else:
            param_shape = [dims.get(i, 1) for i in range(ndims)]
        self._param_shape = param_shape
        self.gamma = self.beta = None
        if self.scale:
            self.gamma = self.add_weight(
                "gamma",
                param_shape,
                initializer=self.gamma_initializer,
                regularizer=self.gamma_regularizer,
                constraint=self.gamma_constraint,
            )
        if self.center:
            self.beta = self.add_weight(
                "beta",
                param_shape,
                initializer=self.beta_initializer,
                regularizer=self.beta_regularizer,
                constraint=self.beta_constraint,
            )
        self.moving_mean = self.add_weight(
            "moving_mean", param_shape, initializer=self.moving_mean_initializer, trainable=False
        )
        self.moving_variance = self.add_weight(
            "moving_variance", param_shape, initializer=self.moving_variance_initializer, trainable=False
        )
        self.built = True

    def call(self, inputs, training=False):
        training = training_switch(training, f"tf.layers.BatchNormalization {self.name!r}")
        ndims = inputs.shape.ndims
        reduction_axes = [i for i in range(ndims) if i not in self.axis]
        broadcast_shape = [1] * ndims
        broadcast_shape[self.axis[0]] = self._param_shape[0]

        def broadcast(v):
            if v is None or len(self.axis) > 1 or self.axis[0] == ndims - 1:
                return v
            return reshape(v, broadcast_shape)

        if training is False:
            mean, variance = self.moving_mean, self.moving_variance
        else:
            batch_mean, batch_variance = moments(inputs, reduction_axes, keep_dims=len(self.axis) > 1)
            mean, variance = batch_mean, batch_variance
            if training is not True:  # a tensor: TF's smart_cond, the batch's or the moving statistics
                mean, variance = cond(
                    training,
                    lambda: (identity(batch_mean), identity(batch_variance)),
                    lambda: (identity(self.moving_mean), identity(self.moving_variance)),
                )
        outputs = _nn_batch_normalization(
            inputs,
            broadcast(mean),
            broadcast(variance),
            broadcast(self.beta),
            broadcast(self.gamma),
            self.epsilon,
        )
        if training is not False:
            new_mean, new_variance = batch_mean, batch_variance
            if self.fused:
                new_variance = new_variance * self._bessel_factor(inputs, new_variance)
            for variable, value in ((self.moving_mean, new_mean), (self.moving_variance, new_variance)):
                if training is True:
                    self.add_update(self._assign_moving_average(variable, value))
                else:  # the update runs only in the steps that train
                    self.add_update(
                        cond(
                            training,
                            lambda variable=variable, value=value: self._assign_moving_average(
                                variable, value
                            ),
                            lambda variable=variable: identity(variable),
                        )
                    )
        return outputs

    def _bessel_factor(self, inputs, variance):
        """``n / (n - 1)`` for n values per channel (TF's fused kernel's correction)."""
        per_channel = inputs.shape.num_elements()
        if per_channel is not None:
            n = per_channel / math.prod(self._param_shape)
            return convert_to_tensor(n / max(n - 1.0, 1.0), dtype=variance.dtype)
        n = math_ops.cast(size(inputs), variance.dtype) / math.prod(self._param_shape)
        return n / math_ops.maximum(n - 1.0, 1.0)

    def _assign_moving_average(self, variable, value):
        with get_default_graph().name_scope("AssignMovingAvg") as scope, colocate_with(variable):
            decay = convert_to_tensor(1.0 - self.momentum, name="decay")
            if decay.dtype != variable.dtype:
                decay = math_ops.cast(decay, variable.dtype)
            return assign_sub(variable, (variable - value) * decay, name=scope)


def batch_normalization(
    inputs,
    axis=-1,
    momentum=0.99,
    epsilon=1e-3,
    center=True,
    scale=True,
    beta_initializer=None,
    gamma_initializer=None,
    moving_mean_initializer=None,
    moving_variance_initializer=None,
    beta_regularizer=None,
    gamma_regularizer=None,
    beta_constraint=None,
    gamma_constraint=None,
    training=False,
    trainable=True,
    name=None,
    reuse=None,
    renorm=False,
    renorm_clipping=None,
    renorm_momentum=0.99,
    fused=None,
    virtual_batch_size=None,
    adjustment=None,
):
    """`tf.layers.batch_normalization`: a `BatchNormalization` layer applied once.

    Its variable scope is `name` (unique ``batch_normalization``, ``batch_normalization_1``... if
    None); ``reuse=True`` shares that scope's variables.

    With ``training=True`` the moving-average updates join ``tf.GraphKeys.UPDATE_OPS``: run them
    with the train op (``tf.control_dependencies(tf.get_collection(tf.GraphKeys.UPDATE_OPS))``).
    """
    layer = BatchNormalization(
        axis=axis,
        momentum=momentum,
        epsilon=epsilon,
        center=center,
        scale=scale,
        beta_initializer=beta_initializer,
        gamma_initializer=gamma_initializer,
        moving_mean_initializer=moving_mean_initializer,
        moving_variance_initializer=moving_variance_initializer,
        beta_regularizer=beta_regularizer,
        gamma_regularizer=gamma_regularizer,
        beta_constraint=beta_constraint,
        gamma_constraint=gamma_constraint,
        renorm=renorm,
        renorm_clipping=renorm_clipping,
        renorm_momentum=renorm_momentum,
        fused=fused,
        trainable=trainable,
        virtual_batch_size=virtual_batch_size,
        adjustment=adjustment,
        name=name,
        _scope=name,
        _reuse=reuse,
    )
    return layer(inputs, training=training)
