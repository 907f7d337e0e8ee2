"""Sliding windows shared by the convolution and pooling ops (`conv_ops`, `pool_ops`).

TF's attrs are normalised once here (`window_attrs`), its output-size and padding rule is
`output_size`, and the kernels see every input as NHWC: `patches` is a zero-copy strided
view ``(N, OH, OW, KH, KW, C)`` of the padded input (what im2col copies out, the copy made
by the one BLAS call that consumes it) and `col2im` its adjoint, which adds window
contributions back in one vectorised slice-add per kernel tap (KH*KW of them, never a loop
over pixels).
"""

import numpy as np
from numpy.lib.stride_tricks import as_strided

from nbdist.graph.tensor_shape import TensorShape
from nbdist.ops.shape_ops import get_static_value

FORMATS = ("NHWC", "NCHW")
PADDINGS = ("SAME", "VALID")


def spatial_sequence(value, what, data_format, op_name):
    """TF's ``_get_sequence``: an int or a list of 1, 2 or 4 ints as the 4 per-dimension values
    in `data_format` order (batch and channel 1).

    Raises:
        ValueError: another length, or a 4-list asking for a batch or channel value other than 1.
    """
    values = [value] if isinstance(value, (int, np.integer)) else list(value)
    if not all(isinstance(v, (int, np.integer)) for v in values) or len(values) not in (1, 2, 4):
        raise ValueError(f"{op_name}: {what} should be an int or a list of 1, 2 or 4 ints, got {value!r}")
    channel = 3 if data_format == "NHWC" else 1
    if len(values) == 4:
        if values[0] != 1 or values[channel] != 1:
            raise ValueError(
                f"{op_name}: {what} {value!r} asks for a value other than 1 in the batch or channel "
                f"dimension ({data_format}); nbdist, as TF's CPU kernels, supports only 1 there"
            )
        return [int(v) for v in values]
    h, w = (values * 2)[:2]
    return [1, int(h), int(w), 1] if data_format == "NHWC" else [1, 1, int(h), int(w)]


def check_format(data_format, op_name, formats=FORMATS):
    """`data_format` (None: NHWC) when it is one of `formats`; else ValueError naming them."""
    data_format = data_format or "NHWC"
    if data_format not in formats:
        raise ValueError(
            f"{op_name}: data_format {data_format!r} is not supported; use one of {list(formats)}"
        )
    return data_format


def check_padding(padding, op_name):
    if isinstance(padding, str) and padding.upper() in PADDINGS:
        return padding.upper()
    raise ValueError(
        f"{op_name}: padding {padding!r} is not supported; use 'SAME' or 'VALID' "
        "(nbdist has no explicit paddings: pad with tf.pad, then 'VALID')"
    )


def hw(values, data_format):
    """The (height, width) entries of a 4-list in `data_format` order."""
    return (values[1], values[2]) if data_format == "NHWC" else (values[2], values[3])


def output_size(size, k, stride, dilation, padding):
    """``(out, pad_before, pad_after)`` of one spatial dimension, TF's rule (None when unknown).

    Raises:
        ValueError: a VALID window larger than the (known) input.
    """
    if size is None:
        return None, None, None
    span = (k - 1) * dilation + 1
    if padding == "VALID":
        if size < span:
            raise ValueError(
                f"the window spans {span} elements (size {k}, dilation {dilation}) but the input "
                f"has {size}: the VALID output would be empty"
            )
        return (size - span) // stride + 1, 0, 0
    out = -(-size // stride)
    total = max((out - 1) * stride + span - size, 0)
    return out, total // 2, total - total // 2


def nhwc_dims(shape, data_format):
    """``[N, H, W, C]`` of a static shape (Nones where unknown)."""
    dims = shape.as_list() if shape.ndims is not None else [None] * 4
    return dims if data_format == "NHWC" else [dims[0], dims[2], dims[3], dims[1]]


def shape_of_nhwc(dims, data_format):
    n, h, w, c = dims
    return TensorShape([n, h, w, c] if data_format == "NHWC" else [n, c, h, w])


def sizes_shape(sizes_tensor):
    """The static shape a 1-D sizes input (a backprop op's ``input_sizes``) gives, rank 4 if unknown."""
    value = get_static_value(sizes_tensor)
    return TensorShape([int(v) for v in np.ravel(value)]) if value is not None else TensorShape([None] * 4)


def to_nhwc(x, data_format):
    return x if data_format == "NHWC" else np.transpose(x, (0, 2, 3, 1))


def from_nhwc(x, data_format):
    return x if data_format == "NHWC" else np.ascontiguousarray(np.transpose(x, (0, 3, 1, 2)))


class Window:
    """A node's window geometry in NHWC terms: kernel ``(kh, kw)``, strides, dilations, padding."""

    def __init__(self, attrs, ksize=None):
        fmt = attrs.get("data_format", "NHWC")
        self.data_format = fmt
        self.padding = attrs["padding"]
        self.strides = hw(attrs["strides"], fmt)
        self.dilations = hw(attrs.get("dilations", [1, 1, 1, 1]), fmt)
        self.ksize = tuple(ksize) if ksize is not None else hw(attrs["ksize"], fmt)

    def out_hw(self, h, w):
        """``((oh, top, bottom), (ow, left, right))`` for an input of `h` x `w`."""
        return tuple(
            output_size(size, k, s, d, self.padding)
            for size, k, s, d in zip((h, w), self.ksize, self.strides, self.dilations)
        )

    def pad(self, x, value=0.0):
        """`x` (NHWC) padded for this window; returns ``(padded, (oh, ow), (top, left))``."""
        (oh, top, bottom), (ow, left, right) = self.out_hw(x.shape[1], x.shape[2])
        if top or bottom or left or right:
            x = np.pad(x, ((0, 0), (top, bottom), (left, right), (0, 0)), constant_values=value)
        return x, (oh, ow), (top, left)

    def patches(self, xp, out_hw):
        """The strided view ``(N, OH, OW, KH, KW, C)`` of padded `xp`: no copy."""
        n, _, _, c = xp.shape
        s0, s1, s2, s3 = xp.strides
        (sh, sw), (dh, dw) = self.strides, self.dilations
        shape = (n, *out_hw, *self.ksize, c)
        return as_strided(xp, shape, (s0, s1 * sh, s2 * sw, s1 * dh, s2 * dw, s3), writeable=False)

    def col2im(self, cols, in_shape):
        """The adjoint of `patches`: adds ``cols (KH, KW, N, OH, OW, C)`` (tap-major, so that each
        tap's block is contiguous) into an input of `in_shape` (NHWC, unpadded), one slice-add
        per kernel tap."""
        n, h, w, c = in_shape
        (oh, top, bottom), (ow, left, right) = self.out_hw(h, w)
        out = np.zeros((n, h + top + bottom, w + left + right, c), cols.dtype)
        (sh, sw), (dh, dw) = self.strides, self.dilations
        for i in range(self.ksize[0]):
            for j in range(self.ksize[1]):
                rows = slice(i * dh, i * dh + (oh - 1) * sh + 1, sh)
                columns = slice(j * dw, j * dw + (ow - 1) * sw + 1, sw)
                out[:, rows, columns, :] += cols[i, j]
        return out[:, top : top + h, left : left + w, :]
