"""`tf.strings.ngrams` of a dense tensor, TF's ``StringNGrams`` op: the n-grams of each row
(the last axis) joined by `separator`, optionally padded at both ends, for one or several
widths; a vector gives a vector, a matrix a matrix (every row has as many n-grams). TF's
ragged inputs (and rank 3 or more, whose result TF gives as a `RaggedTensor`) are left out:
nbdist has no `RaggedTensor`. No gradient.
"""

import numpy as np

from nbdist.graph import dtypes as _dtypes
from nbdist.graph.tensor_shape import TensorShape
from nbdist.ops import registry
from nbdist.ops.math_ops import range  # noqa: A004 - tf.range
from nbdist.ops.reshape_ops import reshape
from nbdist.ops.shape_ops import shape as _shape
from nbdist.ops.string_codec_ops import typed_input

__all__ = ["ngrams"]  # at tf.strings only (ns/strings.py)


def _pad_width(attrs, width):
    pad = attrs["pad_width"]
    return min(width - 1 if pad < 0 else pad, width - 1)


def _ngrams(tokens, count, width, attrs):
    """TF's ``CreateNgrams``: `count` n-grams of `width` over `tokens`, padded at the ends."""
    sep, left, right = attrs["separator"], attrs["left_pad"], attrs["right_pad"]
    pad = _pad_width(attrs, width)
    out = []
    for i in np.arange(count):
        left_n = max(0, pad - i)
        right_n = max(0, pad - (count - (i + 1)))
        n_tokens = width - (left_n + right_n)
        start = 0 if left_n > 0 else i - pad
        parts = [left] * left_n + list(tokens[start : start + n_tokens]) + [right] * right_n
        out.append(sep.join(parts))
    return out


@registry.kernel("StringNGrams")
def _string_ngrams_kernel(ctx, node, data, splits):
    attrs = {k: node.attr[k] for k in ("separator", "left_pad", "right_pad", "pad_width")}
    attrs.update({k: attrs[k].encode() for k in ("separator", "left_pad", "right_pad")})
    values, out_splits = [], [0]
    for row in np.arange(len(splits) - 1):
        tokens = [bytes(t) for t in data[splits[row] : splits[row + 1]]]
        before = len(values)
        for width in node.attr["ngram_widths"]:
            count = max(0, len(tokens) + 2 * _pad_width(attrs, width) - width + 1)
            values += _ngrams(tokens, count, width, attrs)
        if node.attr["preserve_short_sequences"] and len(values) == before and tokens:
            width = len(tokens) + 2 * max(attrs["pad_width"], 0)
            values += _ngrams(tokens, 1, width, attrs)
        out_splits.append(len(values))
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out, np.array(out_splits, np.int64)


registry.shape("StringNGrams")(
    lambda inputs, attrs: [(_dtypes.string, TensorShape([None])), (_dtypes.int64, inputs[1].shape)]
)
registry.no_gradient("StringNGrams")


def ngrams(data, ngram_width, separator=" ", pad_values=None, padding_width=None,
           preserve_short_sequences=False, name=None):  # fmt: skip
    """`tf.strings.ngrams` of a vector or matrix of strings (see the module's doc).

    Raises:
        ValueError: `padding_width` below 1 or without `pad_values`, a width below 1, or
            `data` of rank 0 or above 2.
    """
    widths = list(ngram_width) if isinstance(ngram_width, (list, tuple)) else [ngram_width]
    if any(int(w) < 1 for w in widths):
        raise ValueError(f"ngram_width must be positive, got {widths}")
    if padding_width is not None and padding_width < 1:
        raise ValueError("padding_width must be greater than 0.")
    if padding_width is not None and pad_values is None:
        raise ValueError("pad_values must be provided if padding_width is set.")
    if pad_values is None:
        padding_width, pad_values = 0, ("", "")
    elif not isinstance(pad_values, (list, tuple)):
        pad_values = (pad_values, pad_values)
    data = typed_input(data, _dtypes.string, "data", "StringNGrams")
    rank = data.shape.ndims
    if rank not in (1, 2):
        raise ValueError(
            f"tf.strings.ngrams: nbdist takes a vector or matrix of strings, got rank {rank} (TF gives "
            "a RaggedTensor for higher ranks, which nbdist does not have)"
        )
    dims = _shape(data, out_type=_dtypes.int64)
    rows = 1 if rank == 1 else dims[0]
    splits = range(rows + 1, dtype=_dtypes.int64) * dims[rank - 1]
    attrs = {
        "separator": str(separator),
        "ngram_widths": [int(w) for w in widths],
        "left_pad": str(pad_values[0]),
        "right_pad": str(pad_values[1]),
        "pad_width": -1 if padding_width is None else int(padding_width),
        "preserve_short_sequences": bool(preserve_short_sequences),
    }
    values = registry.make_op(
        "StringNGrams", [reshape(data, [-1]), splits], attrs, name=name or "StringNGrams"
    )
    if rank == 1:
        return values.outputs[0]
    out = reshape(values.outputs[0], [_shape(data)[0], -1])
    out.set_shape(data.shape[:1].concatenate([None]))
    return out
