"""`tf.nn.bias_add` in both data formats: `BiasAdd` and its gradient `BiasAddGrad` (TF's op types).

NHWC (or ``"N...C"``) adds the bias along the last dimension; NCHW (or ``"NC..."``) along
dimension 1 of a value of rank >= 3, as TF. `BiasAddGrad` sums the output's gradient over every
other dimension, and its own gradient spreads a gradient back with a `BiasAdd` onto zeros.
"""

import numpy as np

from nbdist.graph.tensor_shape import TensorShape
from nbdist.ops import math_ops, registry
from nbdist.ops._shapes import invalid_argument
from nbdist.ops.constant_op import convert_n

__all__ = ["bias_add"]


def _channel_name(data_format):
    return "dimension 1 (NCHW)" if data_format == "NCHW" else "last dimension"


def _channel_axis(data_format, ndims):
    return 1 if data_format == "NCHW" else ndims - 1


@registry.shape("BiasAdd")
def _bias_add_shape(inputs, attrs):
    value, bias = inputs
    fmt = attrs.get("data_format", "NHWC")
    if value.dtype != bias.dtype:
        raise TypeError(f"tf.nn.bias_add: value is {value.dtype.name} but bias is {bias.dtype.name}")
    least = 3 if fmt == "NCHW" else 2
    if value.shape.ndims is not None and value.shape.ndims < least:
        raise ValueError(f"tf.nn.bias_add: value must have rank >= {least}, got shape {value.shape} ({fmt})")
    if bias.shape.ndims not in (None, 1):
        raise ValueError(f"tf.nn.bias_add: bias must be 1-D, got shape {bias.shape}")
    channels = value.shape[_channel_axis(fmt, value.shape.ndims)] if value.shape.ndims else None
    if None not in (channels, bias.shape[0]) and channels != bias.shape[0]:
        raise ValueError(
            f"tf.nn.bias_add: bias has {bias.shape[0]} values for a {_channel_name(fmt)} of {channels}"
        )
    return [(value.dtype, value.shape)]


def _bias_shape(fmt, ndims):
    """The shape a 1-D bias broadcasts from: ``(C,)`` (NHWC) or ``(C, 1, ..., 1)`` (NCHW)."""
    return (-1,) if fmt != "NCHW" else (-1,) + (1,) * (ndims - 2)


@registry.kernel("BiasAdd")
def _bias_add_kernel(ctx, node, value, bias):
    fmt = node.attr.get("data_format", "NHWC")
    axis = _channel_axis(fmt, value.ndim)
    if bias.ndim != 1 or value.ndim <= axis or value.shape[axis] != bias.shape[0]:
        raise invalid_argument(
            node,
            f"BiasAdd: bias of shape {list(np.shape(bias))} must match the {_channel_name(fmt)} "
            f"of value {list(np.shape(value))}",
        )
    return value + bias.reshape(_bias_shape(fmt, value.ndim))


@registry.gradient("BiasAdd")
def _bias_add_grad(op, grad):
    fmt = op.get_attr("data_format")
    return [grad, registry.make_op("BiasAddGrad", [grad], {"data_format": fmt}).outputs[0]]


@registry.shape("BiasAddGrad")
def _bias_add_grad_shape(inputs, attrs):
    (dy,) = inputs
    if dy.shape.ndims is None:
        return [(dy.dtype, TensorShape([None]))]
    return [
        (dy.dtype, TensorShape([dy.shape[_channel_axis(attrs.get("data_format", "NHWC"), dy.shape.ndims)]]))
    ]


@registry.kernel("BiasAddGrad")
def _bias_add_grad_kernel(ctx, node, dy):
    axis = _channel_axis(node.attr.get("data_format", "NHWC"), dy.ndim)
    return np.add.reduce(dy, axis=tuple(a for a in range(dy.ndim) if a != axis))


@registry.gradient("BiasAddGrad")
def _bias_add_grad_grad(op, grad):
    """The gradient spread back over the channel: a `BiasAdd` of it onto zeros."""
    dy = op.inputs[0]
    attrs = {"data_format": op.get_attr("data_format")}
    return [registry.make_op("BiasAdd", [math_ops.zeros_like(dy), grad], attrs).outputs[0]]


def bias_add(value, bias, data_format=None, name=None):
    """`tf.nn.bias_add`: adds the 1-D `bias` along the channel dimension of `value`.

    Args:
        data_format: ``"NHWC"`` (or None, ``"N...C"``): the last dimension; ``"NCHW"`` (or
            ``"NC..."``): dimension 1 of a value of rank >= 3.

    Raises:
        ValueError: another format, or a bias whose length is not the channel dimension's.
    """
    aliases = {None: "NHWC", "NHWC": "NHWC", "N...C": "NHWC", "NCHW": "NCHW", "NC...": "NCHW"}
    if data_format not in aliases:
        raise ValueError(
            f"tf.nn.bias_add: data_format {data_format!r} is not supported; use 'NHWC' or 'NCHW'"
        )
    value, bias = convert_n([value, bias])
    return registry.make_op(
        "BiasAdd", [value, bias], {"data_format": aliases[data_format]}, name=name
    ).outputs[0]
