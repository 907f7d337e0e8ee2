"""`tf.layers`' 3-D layers over the 3-D ops (conv3d_ops, pool3d_ops): `Conv3D` / `conv3d`,
`Conv3DTranspose` / `conv3d_transpose`, `MaxPooling3D` / `max_pooling3d`, `AveragePooling3D` /
`average_pooling3d`.

Variables are TF's: ``kernel`` (``kernel_size + (in, filters)``; transposed:
``kernel_size + (filters, in)``) and ``bias``. Sizes are an int or a triple; ``padding`` Keras's
``"valid"`` / ``"same"``; ``data_format`` ``"channels_last"`` (NDHWC) or ``"channels_first"``
(NCDHW).
"""

from nbdist.graph.tensor_shape import TensorShape
from nbdist.ops import conv3d_ops, pool3d_ops
from nbdist.ops.bias_ops import bias_add
from nbdist.ops.concat_slice_ops import stack
from nbdist.ops.init_ops import zeros_initializer
from nbdist.ops.layers_base import Layer
from nbdist.ops.layers_conv import int_tuple, layer_data_format, layer_padding
from nbdist.ops.layers_conv_more import deconv_length
from nbdist.ops.layers_core import get_activation
from nbdist.ops.shape_ops import shape

__all__ = [
    "AveragePooling3D",
    "Conv3D",
    "Conv3DTranspose",
    "MaxPooling3D",
    "average_pooling3d",
    "conv3d",
    "conv3d_transpose",
    "max_pooling3d",
]


def _triple(value, what, layer):
    return int_tuple(value, 3, what, layer)


def _five(values, nchw):
    """Spatial sizes as a 5-element list in the layer's format."""
    return [1, 1, *values] if nchw else [1, *values, 1]


class _Conv3DBase(Layer):
    """What the two 3-D convolutions share: sizes, padding, format, weights, bias, activation."""

    def __init__(
        self,
        filters,
        kernel_size,
        strides,
        padding,
        data_format,
        dilation_rate,
        activation,
        use_bias,
        kernel_initializer,
        bias_initializer,
        kernel_regularizer,
        bias_regularizer,
        activity_regularizer,
        kernel_constraint,
        bias_constraint,
        trainable,
        name,
        **kwargs,
    ):
        super().__init__(trainable=trainable, name=name, **kwargs)
        self.filters = int(filters)
        self.kernel_size = _triple(kernel_size, "kernel_size", self.name)
        self.strides = _triple(strides, "strides", self.name)
        self.padding = layer_padding(padding, self.name)
        self.data_format = data_format
        self._nchw = layer_data_format(data_format, self.name) == "NCHW"
        self.dilation_rate = _triple(dilation_rate, "dilation_rate", self.name)
        self.activation = get_activation(activation)
        self.use_bias = use_bias
        self.kernel_initializer = kernel_initializer
        self.bias_initializer = bias_initializer or zeros_initializer()
        self.kernel_regularizer = kernel_regularizer
        self.bias_regularizer = bias_regularizer
        self.activity_regularizer = activity_regularizer
        self.kernel_constraint = kernel_constraint
        self.bias_constraint = bias_constraint

    @property
    def _format(self):
        return "NCDHW" if self._nchw else "NDHWC"

    def _build(self, input_shape, kernel_shape):
        input_shape = TensorShape(input_shape)
        if input_shape.ndims != 5:
            raise ValueError(f"{self.name}: {type(self).__name__} takes 5-D inputs, got shape {input_shape}")
        channels = input_shape.dims[1 if self._nchw else -1]
        if channels is None:
            raise ValueError(
                f"{self.name}: the channel dimension of the inputs must be defined, got {input_shape}"
            )
        self.kernel = self.add_weight(
            "kernel",
            kernel_shape(channels),
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

    def _finish(self, outputs):
        if self.use_bias:
            outputs = bias_add(outputs, self.bias, data_format="NCHW" if self._nchw else "NHWC")
        return self.activation(outputs) if self.activation is not None else outputs


class Conv3D(_Conv3DBase):
    """`tf.layers.Conv3D`: ``activation(conv3d(inputs, kernel) + bias)``.

    Args:
        filters: the output channels.
        kernel_size, strides, dilation_rate: an int or a triple.
        padding: ``"valid"`` or ``"same"``; data_format ``"channels_last"`` or ``"channels_first"``.
        kernel_initializer: default the scope's, else glorot uniform; bias zeros.

    Raises:
        ValueError: bad sizes, padding or format, or an input with unknown channels.
    """

    def __init__(
        self,
        filters,
        kernel_size,
        strides=(1, 1, 1),
        padding="valid",
        data_format="channels_last",
        dilation_rate=(1, 1, 1),
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
        super().__init__(
            filters,
            kernel_size,
            strides,
            padding,
            data_format,
            dilation_rate,
            activation,
            use_bias,
            kernel_initializer,
            bias_initializer,
            kernel_regularizer,
            bias_regularizer,
            activity_regularizer,
            kernel_constraint,
            bias_constraint,
            trainable,
            name,
            **kwargs,
        )

    def build(self, input_shape):
        self._build(input_shape, lambda channels: [*self.kernel_size, channels, self.filters])

    def call(self, inputs):
        outputs = conv3d_ops.conv3d(
            inputs,
            self.kernel,
            strides=_five(self.strides, self._nchw),
            padding=self.padding,
            data_format=self._format,
            dilations=_five(self.dilation_rate, self._nchw),
            name="Conv3D",
        )
        return self._finish(outputs)


class Conv3DTranspose(_Conv3DBase):
    """`tf.layers.Conv3DTranspose`: ``activation(conv3d_transpose(inputs, kernel) + bias)``.

    The kernel is ``kernel_size + (filters, in_channels)``; each spatial output size is
    ``size * stride`` (``"same"``) plus ``max(kernel - stride, 0)`` (``"valid"``), as TF's.
    """

    def __init__(
        self,
        filters,
        kernel_size,
        strides=(1, 1, 1),
        padding="valid",
        data_format="channels_last",
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
        super().__init__(
            filters,
            kernel_size,
            strides,
            padding,
            data_format,
            1,
            activation,
            use_bias,
            kernel_initializer,
            bias_initializer,
            kernel_regularizer,
            bias_regularizer,
            activity_regularizer,
            kernel_constraint,
            bias_constraint,
            trainable,
            name,
            **kwargs,
        )

    def build(self, input_shape):
        self._build(input_shape, lambda channels: [*self.kernel_size, self.filters, channels])

    def call(self, inputs):
        dims = shape(inputs)
        axes = (2, 3, 4) if self._nchw else (1, 2, 3)
        static = inputs.shape.as_list()
        sizes = [
            deconv_length(static[a] if static[a] is not None else dims[a], k, s, self.padding)
            for a, k, s in zip(axes, self.kernel_size, self.strides, strict=True)
        ]
        out = [dims[0], self.filters, *sizes] if self._nchw else [dims[0], *sizes, self.filters]
        outputs = conv3d_ops.conv3d_transpose(
            inputs,
            self.kernel,
            stack(out),
            strides=_five(self.strides, self._nchw),
            padding=self.padding,
            data_format=self._format,
            name="conv3d_transpose",
        )
        known = [d if isinstance(d, int) else None for d in out]
        outputs.set_shape([static[0], *known[1:]])
        return self._finish(outputs)


def conv3d(
    inputs,
    filters,
    kernel_size,
    strides=(1, 1, 1),
    padding="valid",
    data_format="channels_last",
    dilation_rate=(1, 1, 1),
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
    """`tf.layers.conv3d`: a `Conv3D` layer applied once (variable scope `name`, `reuse` as TF's)."""
    layer = Conv3D(
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


def conv3d_transpose(
    inputs,
    filters,
    kernel_size,
    strides=(1, 1, 1),
    padding="valid",
    data_format="channels_last",
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
    """`tf.layers.conv3d_transpose`: a `Conv3DTranspose` layer applied once."""
    layer = Conv3DTranspose(
        filters=filters,
        kernel_size=kernel_size,
        strides=strides,
        padding=padding,
        data_format=data_format,
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


class _Pooling3D(Layer):
    _POOL = None  # (tf.nn function, op name)

    def __init__(self, pool_size, strides, padding="valid", data_format="channels_last", name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        self.pool_size = _triple(pool_size, "pool_size", self.name)
        self.strides = _triple(pool_size if strides is None else strides, "strides", self.name)
        self.padding = layer_padding(padding, self.name)
        self.data_format = data_format
        self._nchw = layer_data_format(data_format, self.name) == "NCHW"

    def call(self, inputs):
        pool, op_name = self._POOL
        return pool(
            inputs,
            _five(self.pool_size, self._nchw),
            _five(self.strides, self._nchw),
            self.padding,
            data_format="NCDHW" if self._nchw else "NDHWC",
            name=op_name,
        )


class MaxPooling3D(_Pooling3D):
    """`tf.layers.MaxPooling3D`: `tf.nn.max_pool3d` over `pool_size` windows every `strides`."""

    _POOL = (pool3d_ops.max_pool3d, "MaxPool3D")


class AveragePooling3D(_Pooling3D):
    """`tf.layers.AveragePooling3D`: `tf.nn.avg_pool3d` over `pool_size` windows every `strides`."""

    _POOL = (pool3d_ops.avg_pool3d, "AvgPool3D")


def max_pooling3d(inputs, pool_size, strides, padding="valid", data_format="channels_last", name=None):
    """`tf.layers.max_pooling3d`: `MaxPooling3D` applied once."""
    return MaxPooling3D(pool_size, strides, padding=padding, data_format=data_format, name=name)(inputs)


def average_pooling3d(inputs, pool_size, strides, padding="valid", data_format="channels_last", name=None):
    """`tf.layers.average_pooling3d`: `AveragePooling3D` applied once."""
    return AveragePooling3D(pool_size, strides, padding=padding, data_format=data_format, name=name)(inputs)
