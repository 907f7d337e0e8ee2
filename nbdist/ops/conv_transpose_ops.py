"""`tf.nn`'s other transposed convolutions, built from the backprop ops as TF builds them:
`conv1d_transpose` (a `Conv2DBackpropInput` on a height of one), `conv_transpose` (1-, 2- or
3-D by the length of `output_shape`) and `atrous_conv2d_transpose` (a dilated
`Conv2DBackpropInput`, the same values as TF's space-to-batch formulation). Their gradients are
those of the ops they are made of."""

import numpy as np

from nbdist.graph.graph import name_scope
from nbdist.graph.tensor_shape import TensorShape
from nbdist.ops.concat_slice_ops import concat
from nbdist.ops.constant_op import convert_n, convert_to_tensor
from nbdist.ops.conv3d_ops import conv3d_transpose
from nbdist.ops.conv_ops import conv2d_backprop_input, conv2d_transpose
from nbdist.ops.reshape_ops import expand_dims, squeeze

__all__ = ["atrous_conv2d_transpose", "conv1d_transpose", "conv_transpose"]


def _sequence_1d(value, what, channel_index):
    """TF's ``_get_sequence(value, 1, channel_index, what)``: 3 entries in NWC / NCW order."""
    values = [1] if value is None else [value] if isinstance(value, (int, np.integer)) else list(value)
    if len(values) == 1:
        out = [1, 1, 1]
        out[3 - channel_index] = int(values[0])
        return out
    if len(values) == 3:
        return [int(v) for v in values]
    raise ValueError(f"{what} should be of length 1 or 3. Received: {what}={value} of length {len(values)}")


def conv1d_transpose(
    input,  # noqa: A002 - TF's argument name
    filters,
    output_shape,
    strides,
    padding="SAME",
    data_format="NWC",
    dilations=None,
    name=None,
):
    """`tf.nn.conv1d_transpose`: the transpose (gradient) of `conv1d`.

    Args:
        input: ``[batch, width, in_channels]`` (NWC) or ``[batch, in_channels, width]`` (NCW).
        filters: ``[width, output_channels, in_channels]``.
        output_shape: the output's 3-element shape (a list or an int tensor).
        strides, dilations: an int or a list of 1 or 3 ints.

    Raises:
        ValueError: a data_format other than NWC / NCW.
    """
    with name_scope(name, "conv1d_transpose"):
        if data_format is None or data_format == "NWC":
            fmt, spatial_start, channel_index = "NHWC", 1, 2
        elif data_format == "NCW":
            fmt, spatial_start, channel_index = "NCHW", 2, 1
        else:
            raise ValueError(f"`data_format` must be 'NWC' or 'NCW'. Received: data_format={data_format}")
        strides = [1, *_sequence_1d(strides, "stride", channel_index)]
        dilations = [1, *_sequence_1d(dilations, "dilations", channel_index)]
        x, w = convert_n([input, filters])
        x, w = expand_dims(x, spatial_start), expand_dims(w, 0)
        if not hasattr(output_shape, "op"):
            output_shape = [int(v) for v in output_shape]
            sizes = [*output_shape[:spatial_start], 1, *output_shape[spatial_start:]]
        else:
            sizes = concat([output_shape[:spatial_start], [1], output_shape[spatial_start:]], 0)
        result = conv2d_backprop_input(
            sizes, w, x, strides=strides, padding=padding, data_format=fmt, dilations=dilations
        )
        return squeeze(result, [spatial_start])


def conv_transpose(
    input,  # noqa: A002 - TF's argument name
    filters,
    output_shape,
    strides,
    padding="SAME",
    data_format=None,
    dilations=None,
    name=None,
):
    """`tf.nn.conv_transpose`: `conv1d_transpose`, `conv2d_transpose` or `conv3d_transpose` by
    the length (3, 4 or 5) of `output_shape`.

    Raises:
        ValueError: `output_shape` of another length.
    """
    with name_scope(name, "conv_transpose") as scope:
        if hasattr(output_shape, "op"):
            n = output_shape.shape[0] - 2 if output_shape.shape.ndims == 1 and output_shape.shape[0] else None
        elif hasattr(output_shape, "__len__"):
            n = len(output_shape) - 2
        else:
            raise ValueError("`output_shape` must be a tensor or sized collection")
        if n not in (1, 2, 3):
            raise ValueError(
                "`output_shape` must be of length 3, 4 or 5. "
                f"Received: output_shape={output_shape} of length {None if n is None else n + 2}."
            )
        kwargs = {"padding": padding, "dilations": dilations, "name": scope.rstrip("/")}
        if n == 1:
            return conv1d_transpose(
                input, filters, output_shape, strides, data_format=data_format or "NWC", **kwargs
            )
        op = conv2d_transpose if n == 2 else conv3d_transpose
        fmt = data_format or ("NHWC" if n == 2 else "NDHWC")
        return op(input, filters, output_shape, strides, data_format=fmt, **kwargs)


def atrous_conv2d_transpose(value, filters, output_shape, rate, padding, name=None):
    """`tf.nn.atrous_conv2d_transpose`: the transpose of `atrous_conv2d` (its filter taps `rate`
    apart), stride 1, NHWC.

    Args:
        value: ``[batch, height, width, in_channels]``.
        filters: ``[height, width, out_channels, in_channels]``.
        output_shape: ``[batch, height, width, out_channels]``.

    Raises:
        ValueError: a rate below 1, an `output_shape` not of 4 elements, out_channels differing
            from the filter's, or a bad padding.
    """
    with name_scope(name, "atrous_conv2d_transpose") as scope:
        value, filters = convert_n([value, filters])
        if not value.shape.is_compatible_with(TensorShape([None] * 4)):
            raise ValueError(f"`value` must be a 4-D tensor. Received: value.shape={value.shape}")
        if not filters.shape.is_compatible_with(TensorShape([None] * 4)):
            raise ValueError(f"`filters` must be a 4-D tensor. Received: filters.shape={filters.shape}")
        if (
            value.shape.ndims == 4
            and filters.shape.ndims == 4
            and not (value.shape[3] is None or filters.shape[3] is None or value.shape[3] == filters.shape[3])
        ):
            raise ValueError(
                f"`value` channel count must be compatible with `filters` input channel count. Received: "
                f"value.shape={value.shape} with channel count {value.shape[3]} and "
                f"filters.shape={filters.shape} with input channel count {filters.shape[3]}."
            )
        if rate < 1:
            raise ValueError(f"`rate` cannot be less than one. Received: rate={rate}")
        sizes = convert_to_tensor(output_shape, name="output_shape")
        if sizes.shape.ndims is not None and sizes.shape.as_list() not in ([4], [None]):
            raise ValueError(f"`output_shape` must have shape (4,). Received: output_shape={sizes.shape}")
        known = isinstance(output_shape, (list, tuple, np.ndarray)) and filters.shape.ndims == 4
        if known and filters.shape[2] is not None and filters.shape[2] != output_shape[3]:
            raise ValueError(
                "`output_shape` channel count must be compatible with `filters` output channel count. "
                f"Received: output_shape={output_shape} with channel count {output_shape[3]} and "
                f"filters.shape={filters.shape} with output channel count {filters.shape[2]}."
            )
        if padding not in ("SAME", "VALID"):
            raise ValueError(f"`padding` must be either 'VALID' or 'SAME'. Received: padding={padding}")
        return conv2d_backprop_input(
            sizes, filters, value, [1, 1, 1, 1], padding, dilations=[1, rate, rate, 1], name=scope.rstrip("/")
        )
