"""`tf.layers.Dense` / `dense`, `Dropout` / `dropout`, `Flatten` / `flatten` (TF 1.x's core layers).

Each function form builds the class with ``name`` as its fixed variable scope and calls it once,
as TF does: ``tf.layers.dense(x, 10)`` makes ``dense/kernel`` (glorot uniform) and
``dense/bias`` (zeros); a second call makes ``dense_1/...``; ``name="fc", reuse=True`` shares
``fc/kernel``.
"""

import math

from nbdist.graph.tensor_shape import TensorShape
from nbdist.ops import activation_ops, math_ops, nn_ops
from nbdist.ops.bias_ops import bias_add
from nbdist.ops.concat_slice_ops import concat
from nbdist.ops.cond_ops import cond
from nbdist.ops.init_ops import zeros_initializer
from nbdist.ops.layers_base import Layer, training_switch
from nbdist.ops.matmul_ops import matmul
from nbdist.ops.reshape_ops import reshape, transpose
from nbdist.ops.shape_ops import shape
from nbdist.ops.unary_ops import identity

__all__ = ["Dense", "Dropout", "Flatten", "dense", "dropout", "flatten"]

# Keras's string activations that tf.layers programs use (``activation="relu"``).
_ACTIVATIONS = {
    "linear": None,
    "relu": math_ops.relu,
    "relu6": activation_ops.relu6,
    "elu": activation_ops.elu,
    "selu": activation_ops.selu,
    "sigmoid": math_ops.sigmoid,
    "tanh": math_ops.tanh,
    "softplus": math_ops.softplus,
    "softmax": nn_ops.softmax,
}


def get_activation(activation):
    """A callable (``tf.nn.relu``), None, or one of Keras's names (``"relu"``)."""
    if activation is None or callable(activation):
        return activation
    if activation in _ACTIVATIONS:
        return _ACTIVATIONS[activation]
    raise ValueError(
        f"unknown activation {activation!r}: pass a callable (tf.nn.relu) or one of {sorted(_ACTIVATIONS)}"
    )


class Dense(Layer):
    """`tf.layers.Dense`: ``activation(inputs @ kernel + bias)``.

    Inputs of rank > 2 are multiplied along their last axis.

    Args:
        units: the output size.
        kernel_initializer: default the scope's, else glorot uniform.
        kernel_regularizer, bias_regularizer: ``variable -> Tensor`` into
            ``REGULARIZATION_LOSSES``; activity_regularizer: on the output, divided by the batch.

    Raises:
        ValueError: when the inputs' last dimension is unknown.
    """

    def __init__(
        self,
        units,
        activation=None,
        use_bias=True,
        kernel_initializer=None,
        bias_initializer=None,
        kernel_regularizer=None,
        bias_regularizer=None,
        activity_regularizer=None,
        kernel_constraint=None,
        bias_constraint=None,
        trainable=True,
        name=None,
        **kwargs,
    ):
        super().__init__(trainable=trainable, name=name, **kwargs)
        self.units = int(units)
        self.activation = get_activation(activation)
        self.use_bias = use_bias
        self.kernel_initializer = kernel_initializer
        self.bias_initializer = bias_initializer or zeros_initializer()
        self.kernel_regularizer = kernel_regularizer
        self.bias_regularizer = bias_regularizer
        self.activity_regularizer = activity_regularizer
        self.kernel_constraint = kernel_constraint
        self.bias_constraint = bias_constraint

    def build(self, input_shape):
        input_shape = TensorShape(input_shape)
        last = input_shape.dims[-1] if input_shape.ndims else None
        if last is None:
            raise ValueError(
                f"{self.name}: the last dimension of the inputs to Dense must be defined, got {input_shape}"
            )
        self.kernel = self.add_weight(
            "kernel",
            [last, self.units],
            initializer=self.kernel_initializer,
            regularizer=self.kernel_regularizer,
            constraint=self.kernel_constraint,
        )
        self.bias = None
        if self.use_bias:
            self.bias = self.add_weight(
                "bias",
                [self.units],
                initializer=self.bias_initializer,
                regularizer=self.bias_regularizer,
                constraint=self.bias_constraint,
            )
        self.built = True

    def call(self, inputs):
        ndims = inputs.shape.ndims
        if ndims is not None and ndims <= 2:
            outputs = matmul(inputs, self.kernel)
        else:
            # TF's tensordot over the last axis: a matmul of the rows, reshaped back.
            rows = reshape(inputs, [-1, self.kernel.shape.dims[0]])
            dims = inputs.shape.dims
            if dims is not None and all(d is not None for d in dims[1:-1]):
                target = [-1, *dims[1:-1], self.units]
            else:
                target = concat([shape(inputs)[:-1], [self.units]], 0)
            outputs = reshape(matmul(rows, self.kernel), target, name="Tensordot")
        if self.use_bias:
            outputs = bias_add(outputs, self.bias)
        return self.activation(outputs) if self.activation is not None else outputs


def dense(
    inputs,
    units,
    activation=None,
    use_bias=True,
    kernel_initializer=None,
    bias_initializer=None,
    kernel_regularizer=None,
    bias_regularizer=None,
    activity_regularizer=None,
    kernel_constraint=None,
    bias_constraint=None,
    trainable=True,
    name=None,
    reuse=None,
):
    """`tf.layers.dense`: a `Dense` layer applied once.

    Its variable scope is `name` (unique ``dense``, ``dense_1``... if None); ``reuse=True``
    shares that scope's variables.
    """
    layer = Dense(
        units,
        activation=activation,
        use_bias=use_bias,
        kernel_initializer=kernel_initializer,
        bias_initializer=bias_initializer,
        kernel_regularizer=kernel_regularizer,
        bias_regularizer=bias_regularizer,
        activity_regularizer=activity_regularizer,
        kernel_constraint=kernel_constraint,
        bias_constraint=bias_constraint,
        trainable=trainable,
        name=name,
        _scope=name,
        _reuse=reuse,
    )
    return layer(inputs)


class Dropout(Layer):
    """`tf.layers.Dropout`: `tf.nn.dropout` at `rate` when training, else the identity.

    In training each element is zeroed with probability `rate` and the rest scaled by
    ``1 / (1 - rate)``.

    Raises:
        ValueError: for a `rate` outside ``[0, 1)``.
    """

    def __init__(self, rate=0.5, noise_shape=None, seed=None, name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        if not 0 <= rate < 1:
            raise ValueError(f"{self.name}: rate must be in [0, 1), got {rate!r}")
        self.rate = rate
        self.noise_shape = noise_shape
        self.seed = seed

    def call(self, inputs, training=False):
        training = training_switch(training, f"tf.layers.Dropout {self.name!r}")
        if training is False or self.rate == 0:
            return identity(inputs)

        def dropped():
            return nn_ops.dropout(inputs, rate=self.rate, noise_shape=self.noise_shape, seed=self.seed)

        if training is True:
            return dropped()
        return cond(training, dropped, lambda: identity(inputs))  # decided at run time, as TF's smart_cond


def dropout(inputs, rate=0.5, noise_shape=None, seed=None, training=False, name=None):
    """`tf.layers.dropout`: `Dropout` applied once; ``training=False`` (the default) is the identity."""
    layer = Dropout(rate, noise_shape=noise_shape, seed=seed, name=name)
    return layer(inputs, training=training)


class Flatten(Layer):
    """`tf.layers.Flatten`: ``(batch, ...) -> (batch, prod(...))``.

    channels_first inputs are moved to channels_last first, as TF does.
    """

    def __init__(self, data_format=None, name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        data_format = "channels_last" if data_format is None else data_format  # TF's default
        if data_format not in ("channels_last", "channels_first"):
            raise ValueError(
                f"{self.name}: data_format must be 'channels_last' or 'channels_first', got {data_format!r}"
            )
        self.data_format = data_format

    def call(self, inputs):
        ndims = inputs.shape.ndims
        if self.data_format == "channels_first" and ndims is not None and ndims > 1:
            inputs = transpose(inputs, [0, *range(2, ndims), 1])
        dims = inputs.shape.dims
        if ndims == 1:
            return reshape(inputs, [-1, 1])
        if dims is not None and all(d is not None for d in dims[1:]):
            return reshape(inputs, [-1, math.prod(dims[1:])])
        if dims is not None and dims[0] is not None:
            return reshape(inputs, [dims[0], -1])
        return reshape(inputs, concat([shape(inputs)[:1], [-1]], 0))


def flatten(inputs, name=None, data_format="channels_last"):
    """`tf.layers.flatten`: `Flatten` applied once."""
    return Flatten(data_format=data_format, name=name)(inputs)
