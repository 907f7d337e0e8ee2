"""`tf.layers`' other 1-D and 2-D convolution and pooling layers, over the 2-D ops as TF builds
them: `Conv1D` / `conv1d`, `Conv2DTranspose` / `conv2d_transpose`,
`SeparableConv2D` / `separable_conv2d`, `SeparableConv1D` / `separable_conv1d`.

Variables are TF's: ``kernel`` (``kernel_size + (in, filters)``; transposed:
``kernel_size + (filters, in)``), ``depthwise_kernel`` (``kernel_size + (in, depth_multiplier)``),
``pointwise_kernel`` (``(1,) * rank + (in * depth_multiplier, filters)``), ``bias``.
The 3-D layers are in layers_conv3d.
"""

from nbdist.graph.tensor_shape import TensorShape
from nbdist.ops import conv_ops
from nbdist.ops.bias_ops import bias_add
from nbdist.ops.concat_slice_ops import stack
from nbdist.ops.init_ops import zeros_initializer
from nbdist.ops.layers_base import Layer
from nbdist.ops.layers_conv import int_tuple, layer_data_format, layer_padding
from nbdist.ops.layers_core import get_activation
from nbdist.ops.reshape_ops import expand_dims, squeeze
from nbdist.ops.shape_ops import shape

__all__ = [
    "Conv1D",
    "Conv2DTranspose",
    "SeparableConv1D",
    "SeparableConv2D",
    "conv1d",
    "conv2d_transpose",
    "separable_conv1d",
    "separable_conv2d",
]


class _Conv(Layer):
    """What the convolutions share: sizes, padding, format, activation, the bias and its call."""

    _RANK = 2
    _KIND = "Conv"

    def __init__(
        self,
        filters,
        kernel_size,
        strides=1,
        padding="valid",
        data_format="channels_last",
        dilation_rate=1,
        activation=None,
        use_bias=True,
        bias_initializer=None,
        bias_regularizer=None,
        activity_regularizer=None,
        bias_constraint=None,
        trainable=True,
        name=None,
        **kwargs,
    ):
        super().__init__(trainable=trainable, name=name, **kwargs)
        rank = self._RANK
        self.filters = int(filters)
        self.kernel_size = int_tuple(kernel_size, rank, "kernel_size", self.name)
        self.strides = int_tuple(strides, rank, "strides", self.name)
        self.padding = layer_padding(padding, self.name)
        self.data_format = data_format
        self._nchw = layer_data_format(data_format, self.name) == "NCHW"
        self.dilation_rate = int_tuple(dilation_rate, rank, "dilation_rate", self.name)
        self.activation = get_activation(activation)
        self.use_bias = use_bias
        self.bias_initializer = bias_initializer or zeros_initializer()
        self.bias_regularizer = bias_regularizer
        self.activity_regularizer = activity_regularizer
        self.bias_constraint = bias_constraint

    @property
    def _format(self):
        return "NCHW" if self._nchw else "NHWC"

    def _channels(self, input_shape):
        input_shape = TensorShape(input_shape)
        if input_shape.ndims != self._RANK + 2:
            raise ValueError(
                f"{self.name}: {type(self).__name__} takes {self._RANK + 2}-D inputs, got shape {input_shape}"
            )
        channels = input_shape.dims[1 if self._nchw else -1]
        if channels is None:
            raise ValueError(
                f"{self.name}: the channel dimension of the inputs must be defined, got {input_shape}"
            )
        return channels

    def _weight(self, name, shape_, initializer, regularizer, constraint):
        return self.add_weight(
            name, shape_, initializer=initializer, regularizer=regularizer, constraint=constraint
        )

    def _add_bias(self):
        self.bias = None
        if self.use_bias:
            self.bias = self._weight(
                "bias", [self.filters], self.bias_initializer, self.bias_regularizer, self.bias_constraint
            )

    def _height_one(self, tensor):
        """A 1-D layer's ``[N, W, C]`` (``[N, C, W]``) as the 2-D ops' ``[N, 1, W, C]`` (``[N, C, 1, W]``)."""
        return expand_dims(tensor, 2 if self._nchw else 1)

    def _finish(self, outputs):
        """Bias and activation on the 2-D op's result; a 1-D layer's height squeezed out."""
        if self.use_bias:
            outputs = bias_add(outputs, self.bias, data_format=self._format)
        if self._RANK == 1:
            outputs = squeeze(outputs, [2 if self._nchw else 1])
        return self.activation(outputs) if self.activation is not None else outputs

    def _spatial(self, values):
        """1-D sizes as the 2-D ops' ``(1, w)``; 2-D ones as they are."""
        return (1, *values) if self._RANK == 1 else tuple(values)

    def _four(self, values):
        """Spatial sizes as a 4-element list in the layer's format."""
        return [1, 1, *values] if self._nchw else [1, *values, 1]


class Conv1D(_Conv):
    """`tf.layers.Conv1D`: ``activation(conv1d(inputs, kernel) + bias)`` on ``[batch, width, channels]``.

    Args:
        filters: the output channels.
        kernel_size, strides, dilation_rate: an int or a 1-tuple.
        padding: ``"valid"`` or ``"same"``; data_format ``"channels_last"`` or ``"channels_first"``.
        kernel_initializer: default the scope's, else glorot uniform; bias zeros.
    """

    _RANK = 1

    def __init__(
        self,
        filters,
        kernel_size,
        strides=1,
        padding="valid",
        data_format="channels_last",
        dilation_rate=1,
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
            bias_initializer,
            bias_regularizer,
            activity_regularizer,
            bias_constraint,
            trainable,
            name,
            **kwargs,
        )
        self.kernel_initializer = kernel_initializer
        self.kernel_regularizer = kernel_regularizer
        self.kernel_constraint = kernel_constraint

    def build(self, input_shape):
        channels = self._channels(input_shape)
        self.kernel = self._weight(
            "kernel",
            [*self.kernel_size, channels, self.filters],
            self.kernel_initializer,
            self.kernel_regularizer,
            self.kernel_constraint,
        )
        self._add_bias()
        self.built = True

    def call(self, inputs):
        outputs = conv_ops.conv2d(
            self._height_one(inputs),
            expand_dims(self.kernel, 0),
            strides=self._four(self._spatial(self.strides)),
            padding=self.padding,
            data_format=self._format,
            dilations=self._four(self._spatial(self.dilation_rate)),
            name="conv1d",
        )
        return self._finish(outputs)


def deconv_length(size, kernel, stride, padding):
    """Keras's `deconv_output_length` (no output padding): an int, or a tensor when `size` is."""
    if size is None:
        return None
    size = size * stride
    return size + max(kernel - stride, 0) if padding == "VALID" else size


class Conv2DTranspose(_Conv):
    """`tf.layers.Conv2DTranspose`: ``activation(conv2d_transpose(inputs, kernel) + bias)``.

    The kernel is ``kernel_size + (filters, in_channels)``; each spatial output size is
    ``size * stride`` (``"same"``) plus ``max(kernel - stride, 0)`` (``"valid"``), as TF's.
    """

    def __init__(
        self,
        filters,
        kernel_size,
        strides=(1, 1),
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
            bias_initializer,
            bias_regularizer,
            activity_regularizer,
            bias_constraint,
            trainable,
            name,
            **kwargs,
        )
        self.kernel_initializer = kernel_initializer
        self.kernel_regularizer = kernel_regularizer
        self.kernel_constraint = kernel_constraint

    def build(self, input_shape):
        channels = self._channels(input_shape)
        self.kernel = self._weight(
            "kernel",
            [*self.kernel_size, self.filters, channels],
            self.kernel_initializer,
            self.kernel_regularizer,
            self.kernel_constraint,
        )
        self._add_bias()
        self.built = True

    def call(self, inputs):
        dims = shape(inputs)
        axes = (2, 3) if self._nchw else (1, 2)
        static = inputs.shape.as_list()
        sizes = [
            deconv_length(static[a] if static[a] is not None else dims[a], k, s, self.padding)
            for a, k, s in zip(axes, self.kernel_size, self.strides, strict=True)
        ]
        out = [dims[0], self.filters, *sizes] if self._nchw else [dims[0], *sizes, self.filters]
        outputs = conv_ops.conv2d_transpose(
            inputs,
            self.kernel,
            stack(out),
            strides=self._four(self.strides),
            padding=self.padding,
            data_format=self._format,
            name="conv2d_transpose",
        )
        known = [d if isinstance(d, int) else None for d in out]
        outputs.set_shape([static[0], *known[1:]])
        return self._finish(outputs)


class SeparableConv2D(_Conv):
    """`tf.layers.SeparableConv2D`: a depthwise convolution (``depth_multiplier`` filters per
    input channel), then a 1x1 one to `filters` channels (`tf.nn.separable_conv2d`), bias,
    activation. Dilations above 1 need strides of 1, as in TF."""

    _RANK = 2

    def __init__(
        self,
        filters,
        kernel_size,
        strides=(1, 1),
        padding="valid",
        data_format="channels_last",
        dilation_rate=(1, 1),
        depth_multiplier=1,
        activation=None,
        use_bias=True,
        depthwise_initializer=None,
        pointwise_initializer=None,
        bias_initializer=None,
        depthwise_regularizer=None,
        pointwise_regularizer=None,
        bias_regularizer=None,
        activity_regularizer=None,
        depthwise_constraint=None,
        pointwise_constraint=None,
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
            bias_initializer,
            bias_regularizer,
            activity_regularizer,
            bias_constraint,
            trainable,
            name,
            **kwargs,
        )
        self.depth_multiplier = int(depth_multiplier)
        self.depthwise_initializer = depthwise_initializer
        self.pointwise_initializer = pointwise_initializer
        self.depthwise_regularizer = depthwise_regularizer
        self.pointwise_regularizer = pointwise_regularizer
        self.depthwise_constraint = depthwise_constraint
        self.pointwise_constraint = pointwise_constraint

    def build(self, input_shape):
        channels = self._channels(input_shape)
        self.depthwise_kernel = self._weight(
            "depthwise_kernel",
            [*self.kernel_size, channels, self.depth_multiplier],
            self.depthwise_initializer,
            self.depthwise_regularizer,
            self.depthwise_constraint,
        )
        self.pointwise_kernel = self._weight(
            "pointwise_kernel",
            [1] * self._RANK + [channels * self.depth_multiplier, self.filters],
            self.pointwise_initializer,
            self.pointwise_regularizer,
            self.pointwise_constraint,
        )
        self._add_bias()
        self.built = True

    def call(self, inputs):
        depthwise, pointwise = self.depthwise_kernel, self.pointwise_kernel
        if self._RANK == 1:
            inputs = self._height_one(inputs)
            depthwise, pointwise = expand_dims(depthwise, 0), expand_dims(pointwise, 0)
        outputs = conv_ops.separable_conv2d(
            inputs,
            depthwise,
            pointwise,
            strides=self._four(self._spatial(self.strides)),
            padding=self.padding,
            rate=self._spatial(self.dilation_rate),
            data_format=self._format,
            name="separable_conv2d",
        )
        return self._finish(outputs)


class SeparableConv1D(SeparableConv2D):
    """`tf.layers.SeparableConv1D`: `SeparableConv2D` on ``[batch, width, channels]`` (its
    kernels ``(k, in, depth_multiplier)`` and ``(1, in * depth_multiplier, filters)``)."""

    _RANK = 1

    def __init__(
        self,
        filters,
        kernel_size,
        strides=1,
        padding="valid",
        data_format="channels_last",
        dilation_rate=1,
        depth_multiplier=1,
        **kwargs,
    ):
        super().__init__(
            filters, kernel_size, strides, padding, data_format, dilation_rate, depth_multiplier, **kwargs
        )


def _apply(layer_class, arguments):
    """The function form's `arguments` (its ``locals()``): the layer applied once to ``inputs``,
    its variable scope ``name`` (unique if None), shared with ``reuse``."""
    kwargs = dict(arguments)
    inputs, name, reuse = kwargs.pop("inputs"), kwargs.pop("name"), kwargs.pop("reuse")
    return layer_class(name=name, _scope=name, _reuse=reuse, **kwargs)(inputs)


def conv1d(
    inputs,
    filters,
    kernel_size,
    strides=1,
    padding="valid",
    data_format="channels_last",
    dilation_rate=1,
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
    """`tf.layers.conv1d`: a `Conv1D` layer applied once."""
    return _apply(Conv1D, locals())


def conv2d_transpose(
    inputs,
    filters,
    kernel_size,
    strides=(1, 1),
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
    """`tf.layers.conv2d_transpose`: a `Conv2DTranspose` layer applied once."""
    return _apply(Conv2DTranspose, locals())


def separable_conv2d(
    inputs,
    filters,
    kernel_size,
    strides=(1, 1),
    padding="valid",
    data_format="channels_last",
    dilation_rate=(1, 1),
    depth_multiplier=1,
    activation=None,
    use_bias=True,
    depthwise_initializer=None,
    pointwise_initializer=None,
    bias_initializer=None,
    depthwise_regularizer=None,
    pointwise_regularizer=None,
    bias_regularizer=None,
    activity_regularizer=None,
    depthwise_constraint=None,
    pointwise_constraint=None,
    bias_constraint=None,
    trainable=True,
    name=None,
    reuse=None,
):
    """`tf.layers.separable_conv2d`: a `SeparableConv2D` layer applied once."""
    return _apply(SeparableConv2D, locals())


def separable_conv1d(
    inputs,
    filters,
    kernel_size,
    strides=1,
    padding="valid",
    data_format="channels_last",
    dilation_rate=1,
    depth_multiplier=1,
    activation=None,
    use_bias=True,
    depthwise_initializer=None,
    pointwise_initializer=None,
    bias_initializer=None,
    depthwise_regularizer=None,
    pointwise_regularizer=None,
    bias_regularizer=None,
    activity_regularizer=None,
    depthwise_constraint=None,
    pointwise_constraint=None,
    bias_constraint=None,
    trainable=True,
    name=None,
    reuse=None,
):
    """`tf.layers.separable_conv1d`: a `SeparableConv1D` layer applied once."""
    return _apply(SeparableConv1D, locals())
