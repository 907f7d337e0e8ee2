"""`tf.layers.Conv2D` / `conv2d`, `MaxPooling2D` / `max_pooling2d`, `AveragePooling2D` /
`average_pooling2d`, `MaxPooling1D` / `max_pooling1d`, `AveragePooling1D` / `average_pooling1d`
(on a height of one): TF 1.x's layers over `tf.nn.conv2d`, `bias_add`, `max_pool`, `avg_pool`.

Sizes are an int or a pair; ``padding`` is Keras's lower-case ``"valid"`` / ``"same"``;
``data_format`` ``"channels_last"`` (NHWC) or ``"channels_first"`` (NCHW). The kernel is
``kernel_size + (in_channels, filters)``, as TF's.
"""

from nbdist.graph.tensor_shape import TensorShape
from nbdist.ops import conv_ops, pool_ops
from nbdist.ops.bias_ops import bias_add
from nbdist.ops.init_ops import zeros_initializer
from nbdist.ops.layers_base import Layer
from nbdist.ops.layers_core import get_activation
from nbdist.ops.reshape_ops import expand_dims, squeeze

__all__ = [
    "AveragePooling1D",
    "AveragePooling2D",
    "Conv2D",
    "MaxPooling1D",
    "MaxPooling2D",
    "average_pooling1d",
    "average_pooling2d",
    "conv2d",
    "max_pooling1d",
    "max_pooling2d",
]

_FORMATS = {"channels_last": "NHWC", "channels_first": "NCHW"}


def int_tuple(value, rank, what, layer):
    """`value` (an int, or `rank` ints) as a tuple of `rank` ints: a layer's sizes and strides."""
    if isinstance(value, int):
        return (value,) * rank
    value = tuple(value)
    if len(value) != rank or not all(isinstance(v, int) for v in value):
        kind = "an int" if rank == 1 else "a pair of ints" if rank == 2 else f"{rank} ints"
        raise ValueError(f"{layer}: {what} must be an int or {kind}, got {value!r}")
    return value


def _pair(value, what, layer):
    return int_tuple(value, 2, what, layer)


def layer_padding(padding, layer):
    """Keras's ``"valid"`` / ``"same"`` (any case) as the ops' ``"VALID"`` / ``"SAME"``."""
    if not isinstance(padding, str) or padding.lower() not in ("valid", "same"):
        raise ValueError(f"{layer}: padding must be 'valid' or 'same', got {padding!r}")
    return padding.upper()


def layer_data_format(data_format, layer):
    """``"channels_last"`` / ``"channels_first"`` as ``"NHWC"`` / ``"NCHW"``."""
    if data_format not in _FORMATS:
        raise ValueError(
            f"{layer}: data_format must be 'channels_last' or 'channels_first', got {data_format!r}"
        )
    return _FORMATS[data_format]


class Conv2D(Layer):
    """`tf.layers.Conv2D`: ``activation(conv2d(inputs, kernel) + bias)``.

    Args:
        filters: the output channels.
        kernel_size, strides, dilation_rate: an int or a pair.
        padding: ``"valid"`` or ``"same"``.
        data_format: ``"channels_last"`` or ``"channels_first"``.
        kernel_initializer: default the scope's, else glorot uniform; bias zeros.

    Raises:
        ValueError: bad sizes, padding or format, or an input with unknown channels.
    """

    def __init__(
        self,
        filters,
        kernel_size,
        strides=(1, 1),
        padding="valid",
        data_format="channels_last",
        dilation_rate=(1, 1),
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
        self.filters = int(filters)
        self.kernel_size = _pair(kernel_size, "kernel_size", self.name)
        self.strides = _pair(strides, "strides", self.name)
        self.padding = layer_padding(padding, self.name)
        self.data_format = data_format
        self._tf_format = layer_data_format(data_format, self.name)
        self.dilation_rate = _pair(dilation_rate, "dilation_rate", self.name)
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
        if input_shape.ndims != 4:
            raise ValueError(f"{self.name}: Conv2D takes 4-D inputs, got shape {input_shape}")
        channels = input_shape.dims[1 if self._tf_format == "NCHW" else -1]
        if channels is None:
            raise ValueError(
                f"{self.name}: the channel dimension of the inputs must be defined, got {input_shape}"
            )
        self.kernel = self.add_weight(
            "kernel",
            [*self.kernel_size, channels, self.filters],
            initializer=self.kernel_initializer,
            regularizer=self.kernel_regularizer,
            constraint=self.kernel_constraint,
        )
        self.bias = None
        if self.use_bias:
            self.bias = self.add_weight(
                "bias",
                [self.filters],
                initializer=self.bias_initializer,
                regularizer=self.bias_regularizer,
                constraint=self.bias_constraint,
            )
        self.built = True

    def call(self, inputs):
        outputs = conv_ops.conv2d(
            inputs,
            self.kernel,
            strides=list(self.strides),
            padding=self.padding,
            data_format=self._tf_format,
            dilations=list(self.dilation_rate),
            name="Conv2D",
        )
        if self.use_bias:
            outputs = bias_add(outputs, self.bias, data_format=self._tf_format)
        return self.activation(outputs) if self.activation is not None else outputs


def conv2d(
    inputs,
    filters,
    kernel_size,
    strides=(1, 1),
    padding="valid",
    data_format="channels_last",
    dilation_rate=(1, 1),
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
    """`tf.layers.conv2d`: a `Conv2D` layer applied once.

    Its variable scope is `name` (unique ``conv2d``, ``conv2d_1``... if None); ``reuse=True``
    shares that scope's variables.
    """
    layer = Conv2D(
        filters=filters,
        kernel_size=kernel_size,
        strides=strides,
        padding=padding,
        data_format=data_format,
        dilation_rate=dilation_rate,
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


class _Pooling2D(Layer):
    _POOL = None  # (tf.nn function, op name)

    def __init__(self, pool_size, strides, padding="valid", data_format="channels_last", name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        self.pool_size = _pair(pool_size, "pool_size", self.name)
        self.strides = _pair(pool_size if strides is None else strides, "strides", self.name)
        self.padding = layer_padding(padding, self.name)
        self.data_format = data_format
        self._tf_format = layer_data_format(data_format, self.name)

    def call(self, inputs):
        pool, op_name = self._POOL
        if self._tf_format == "NHWC":
            ksize, strides = [1, *self.pool_size, 1], [1, *self.strides, 1]
        else:
            ksize, strides = [1, 1, *self.pool_size], [1, 1, *self.strides]
        return pool(inputs, ksize, strides, self.padding, data_format=self._tf_format, name=op_name)


class MaxPooling2D(_Pooling2D):
    """`tf.layers.MaxPooling2D`: `tf.nn.max_pool` over `pool_size` windows every `strides`."""

    _POOL = (pool_ops.max_pool, "MaxPool")


class AveragePooling2D(_Pooling2D):
    """`tf.layers.AveragePooling2D`: `tf.nn.avg_pool` over `pool_size` windows every `strides`."""

    _POOL = (pool_ops.avg_pool, "AvgPool")


def max_pooling2d(inputs, pool_size, strides, padding="valid", data_format="channels_last", name=None):
    """`tf.layers.max_pooling2d`: `MaxPooling2D` applied once."""
    return MaxPooling2D(pool_size, strides, padding=padding, data_format=data_format, name=name)(inputs)


def average_pooling2d(inputs, pool_size, strides, padding="valid", data_format="channels_last", name=None):
    """`tf.layers.average_pooling2d`: `AveragePooling2D` applied once."""
    return AveragePooling2D(pool_size, strides, padding=padding, data_format=data_format, name=name)(inputs)


class _Pooling1D(Layer):
    _POOL = None  # (tf.nn function, op name)

    def __init__(self, pool_size, strides, padding="valid", data_format="channels_last", name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        self.pool_size = int_tuple(pool_size, 1, "pool_size", self.name)
        self.strides = int_tuple(pool_size if strides is None else strides, 1, "strides", self.name)
        self.padding = layer_padding(padding, self.name)
        self.data_format = data_format
        self._axis = 2 if layer_data_format(data_format, self.name) == "NCHW" else 1

    def call(self, inputs):
        pool, op_name = self._POOL
        nchw = self._axis == 2
        ksize = [1, 1, 1, *self.pool_size] if nchw else [1, 1, *self.pool_size, 1]
        strides = [1, 1, 1, *self.strides] if nchw else [1, 1, *self.strides, 1]
        outputs = pool(
            expand_dims(inputs, self._axis),
            ksize,
            strides,
            self.padding,
            data_format="NCHW" if nchw else "NHWC",
            name=op_name,
        )
        return squeeze(outputs, [self._axis])


class MaxPooling1D(_Pooling1D):
    """`tf.layers.MaxPooling1D`: the max over `pool_size` windows every `strides` (``[N, W, C]``)."""

    _POOL = (pool_ops.max_pool, "MaxPool")


class AveragePooling1D(_Pooling1D):
    """`tf.layers.AveragePooling1D`: the mean over `pool_size` windows every `strides`."""

    _POOL = (pool_ops.avg_pool, "AvgPool")


def max_pooling1d(inputs, pool_size, strides, padding="valid", data_format="channels_last", name=None):
    """`tf.layers.max_pooling1d`: `MaxPooling1D` applied once."""
    return MaxPooling1D(pool_size, strides, padding=padding, data_format=data_format, name=name)(inputs)


def average_pooling1d(inputs, pool_size, strides, padding="valid", data_format="channels_last", name=None):
    """`tf.layers.average_pooling1d`: `AveragePooling1D` applied once."""
    return AveragePooling1D(pool_size, strides, padding=padding, data_format=data_format, name=name)(inputs)
