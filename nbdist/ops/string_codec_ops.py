"""String codecs with TF's op types: web-safe base64 (``EncodeBase64`` / ``DecodeBase64``),
``DecodeCompressed`` (ZLIB, GZIP), and the dense forms of the Unicode ops: ``UnicodeEncode``
(code points to strings), ``UnicodeTranscode`` and ``UnicodeScript`` (ICU's script codes).

Python's codecs replace an invalid sequence as ICU does in TF (one replacement character per
maximal invalid subpart). `tf.strings.unicode_decode` / `unicode_split` (and
`unicode_encode` of a rank-3 or higher tensor) give `RaggedTensor`s in TF, which nbdist does
not have; they are left out. None of these ops has a gradient.
"""

import base64
import codecs
import gzip
import re
import zlib

import numpy as np

from nbdist import errors
from nbdist.graph import dtypes as _dtypes
from nbdist.graph.graph import Tensor
from nbdist.graph.tensor_shape import TensorShape
from nbdist.ops import registry
from nbdist.ops._shapes import invalid_argument
from nbdist.ops.constant_op import convert_to_tensor
from nbdist.ops.math_ops import range  # noqa: A004 - tf.range
from nbdist.ops.reshape_ops import reshape
from nbdist.ops.shape_ops import shape as _shape
from nbdist.ops.sparse_tensor import SparseTensor
from nbdist.ops.unicode_scripts import script_code

__all__ = ["decode_base64", "decode_compressed", "encode_base64"]


def typed_input(value, dtype, name, op_type):
    """`value` as a Tensor of `dtype`, or TF's TypeError (a Python value of other elements is
    not converted: ``[1, 2]`` is no string tensor, ``["a"]`` no int32 one)."""
    if not isinstance(value, (Tensor, SparseTensor)):
        items = np.asarray(value, dtype=object).reshape(-1)
        text = dtype == _dtypes.string
        if any(isinstance(v, (str, bytes, np.str_, np.bytes_)) != text for v in items):
            raise TypeError(
                f"Expected {dtype.name} passed to parameter '{name}' of op '{op_type}', got {value!r:.80} "
                f"of type '{type(value).__name__}' instead."
            )
    t = convert_to_tensor(value, dtype=dtype, name=name)
    if t.dtype != dtype:
        raise TypeError(
            f"Input '{name}' of '{op_type}' Op has type {t.dtype.name} that does not match expected type "
            f"of {dtype.name}."
        )
    return t


def _strings(value, name, op_type):
    return typed_input(value, _dtypes.string, name, op_type)


def _elementwise(op_type, fn, out_dtype=_dtypes.string):
    """Registers `op_type`: `fn(node, element)` over each element, the input's shape out."""
    registry.shape(op_type)(lambda inputs, attrs: [(out_dtype, inputs[0].shape)])
    registry.no_gradient(op_type)

    @registry.kernel(op_type)
    def kernel(ctx, node, x):
        x = np.asarray(x, dtype=object if x.__class__ is bytes or out_dtype == _dtypes.string else None)
        out = np.empty(x.shape, dtype=out_dtype.np)
        out.reshape(-1)[:] = [fn(node, v) for v in x.reshape(-1)]
        return out


# -- base64 ------------------------------------------------------------------------------------
_WEB_SAFE = re.compile(rb"[A-Za-z0-9_-]*")


def _decode_base64(node, s):
    if len(s) % 4 == 0 and s.endswith(b"="):  # padding, at most two
        s = s[:-2] if s.endswith(b"==") else s[:-1]
    if not _WEB_SAFE.fullmatch(s):
        raise invalid_argument(node, f"{node.op}: Invalid character found in base64.")
    if len(s) % 4 == 1:
        raise invalid_argument(node, f"{node.op}: Base64 string length cannot be 1 modulo 4.")
    return base64.urlsafe_b64decode(s + b"=" * (-len(s) % 4))


def _encode_base64(node, s):
    out = base64.urlsafe_b64encode(s)
    return out if node.attr["pad"] else out.rstrip(b"=")


_elementwise("DecodeBase64", _decode_base64)
_elementwise("EncodeBase64", _encode_base64)


def decode_base64(input, name=None):  # noqa: A002 - TF's argument name
    """`tf.io.decode_base64`: web-safe base64 (``-`` and ``_``, padding optional) to bytes.

    Raises (when run):
        InvalidArgumentError: a character outside the web-safe alphabet, or a length of 1
            modulo 4.
    """
    return registry.make_op(
        "DecodeBase64", [_strings(input, "input", "DecodeBase64")], name=name or "DecodeBase64"
    ).outputs[0]


def encode_base64(input, pad=False, name=None):  # noqa: A002
    """`tf.io.encode_base64`: bytes to web-safe base64 (``-`` and ``_``), ``=``-padded if `pad`."""
    attrs = {"pad": bool(pad)}
    return registry.make_op(
        "EncodeBase64", [_strings(input, "input", "EncodeBase64")], attrs, name=name or "EncodeBase64"
    ).outputs[0]


# -- DecodeCompressed --------------------------------------------------------------------------
_DECOMPRESS = {"": lambda b: b, "ZLIB": zlib.decompress, "GZIP": gzip.decompress}


def _decompress(node, s):
    kind = node.attr["compression_type"]
    if kind not in _DECOMPRESS:
        hint = " (nbdist has no ZSTD)" if kind == "ZSTD" else ""
        raise invalid_argument(
            node, f"Only ZLIB, GZIP or NONE are supported compressions, got {kind!r}{hint}"
        )
    try:
        return _DECOMPRESS[kind](s)
    except (zlib.error, OSError, EOFError) as e:
        raise errors.DataLossError(node.name, None, f"{node.op}: inflate() failed ({kind}): {e}") from None


_elementwise("DecodeCompressed", _decompress)


def decode_compressed(bytes, compression_type="", name=None):  # noqa: A002 - TF's argument name
    """`tf.io.decode_compressed`: each string decompressed (``"ZLIB"``, ``"GZIP"``, or ``""``:
    as is).

    Raises (when run):
        DataLossError: a string is not valid data of that compression.
        InvalidArgumentError: another compression type.
    """
    attrs = {"compression_type": str(compression_type)}
    return registry.make_op(
        "DecodeCompressed",
        [_strings(bytes, "bytes", "DecodeCompressed")],
        attrs,
        name=name or "DecodeCompressed",
    ).outputs[0]


# -- Unicode -----------------------------------------------------------------------------------
_OUTPUT_ENCODINGS = {"UTF-8": "utf-8", "UTF-16-BE": "utf-16-be", "UTF-32-BE": "utf-32-be"}
_INPUT_ENCODINGS = {**_OUTPUT_ENCODINGS, "US-ASCII": "ascii", "ISO-8859-1": "latin-1"}
_ERRORS = ("strict", "replace", "ignore")


def _check_attr(op_type, attr, value, allowed):
    if value not in allowed:
        quoted = ", ".join(f'"{a}"' for a in allowed)
        raise ValueError(f"Attr '{attr}' of '{op_type}' Op passed string '{value}' not in: {quoted}.")


def _valid_code_point(c):
    return 0 <= c <= 0x10FFFF and not 0xD800 <= c <= 0xDFFF


@registry.shape("UnicodeEncode")
def _unicode_encode_shape(inputs, attrs):
    n = inputs[1].shape.as_list()[0] if inputs[1].shape.ndims == 1 else None
    return [(_dtypes.string, TensorShape([None if n is None else n - 1]))]


@registry.kernel("UnicodeEncode")
def _unicode_encode_kernel(ctx, node, values, splits):
    how, replacement = node.attr["errors"], node.attr["replacement_char"]
    codec = _OUTPUT_ENCODINGS[node.attr["output_encoding"]]
    out = np.empty(max(len(splits) - 1, 0), dtype=object)
    for i in np.arange(len(out)):
        chars = []
        for c in values[splits[i] : splits[i + 1]].tolist():
            if not _valid_code_point(c):
                if how == "strict":
                    raise invalid_argument(node, "Code point is out of range for Unicode, or is a surrogate.")
                if how == "ignore":
                    continue
                c = replacement
            chars.append(chr(c))
        out[i] = "".join(chars).encode(codec)
    return out


registry.no_gradient("UnicodeEncode")


def unicode_encode(input, output_encoding, errors="replace", replacement_char=65533, name=None):  # noqa: A002
    """`tf.strings.unicode_encode` of a dense tensor: each row of code points (the last axis)
    encoded as one string; a vector gives a scalar, a matrix a vector.

    Raises:
        ValueError: `input` is a scalar, of unknown rank, or of rank 3 or more (TF gives a
            `RaggedTensor` there, which nbdist does not have); an unknown encoding or `errors`.
    """
    _check_attr("UnicodeEncode", "output_encoding", output_encoding, list(_OUTPUT_ENCODINGS))
    _check_attr("UnicodeEncode", "errors", errors, _ERRORS)
    x = typed_input(input, _dtypes.int32, "input", "UnicodeEncode")
    rank = x.shape.ndims
    if rank is None:
        raise ValueError("Rank of input_tensor must be statically known.")
    if rank == 0:
        raise ValueError("input_tensor's rank must be at least 1.")
    if rank > 2:
        raise ValueError(
            f"tf.strings.unicode_encode of a rank-{rank} tensor gives a RaggedTensor in TF, which nbdist "
            "does not support; encode a matrix at a time"
        )
    dims = _shape(x, out_type=_dtypes.int64)
    rows = 1 if rank == 1 else dims[0]
    splits = range(rows + 1, dtype=_dtypes.int64) * dims[rank - 1]
    attrs = {"output_encoding": output_encoding, "errors": errors, "replacement_char": int(replacement_char)}
    encoded = registry.make_op(
        "UnicodeEncode", [reshape(x, [-1]), splits], attrs, name=name or "UnicodeEncode"
    ).outputs[0]
    if rank == 1:
        return reshape(encoded, [])
    encoded.set_shape(x.shape[:1])
    return encoded


_C0 = re.compile("[\x00-\x1f]")


def _replacing(code_point):
    """The name of a codec error handler that puts `code_point` for each invalid subpart."""
    name = f"nbdist-replace-{code_point}"
    try:
        codecs.lookup_error(name)
    except LookupError:
        codecs.register_error(name, lambda e: (chr(code_point), e.end))
    return name


def _transcode(node, s):
    how, replacement = node.attr["errors"], node.attr["replacement_char"]
    handler = _replacing(replacement) if how == "replace" else how
    try:
        text = s.decode(_INPUT_ENCODINGS[node.attr["input_encoding"]], handler)
    except UnicodeDecodeError:
        raise invalid_argument(node, f"{node.op}: Invalid formatting on input string") from None
    if node.attr["replace_control_characters"]:
        text = _C0.sub(chr(replacement), text)
    return text.encode(_OUTPUT_ENCODINGS[node.attr["output_encoding"]])


_elementwise("UnicodeTranscode", _transcode)


def unicode_transcode(input, input_encoding, output_encoding, errors="replace", replacement_char=65533,  # noqa: A002
                      replace_control_characters=False, name=None):  # fmt: skip
    """`tf.strings.unicode_transcode`: each string decoded from `input_encoding` (UTF-8,
    UTF-16-BE, UTF-32-BE, US-ASCII, ISO-8859-1) and encoded as `output_encoding`; an invalid
    sequence becomes `replacement_char` (``errors="replace"``), is dropped (``"ignore"``) or
    fails the step (``"strict"``: `InvalidArgumentError`); C0 controls too, if
    `replace_control_characters`."""
    _check_attr("UnicodeTranscode", "output_encoding", output_encoding, list(_OUTPUT_ENCODINGS))
    _check_attr("UnicodeTranscode", "errors", errors, _ERRORS)
    if input_encoding not in _INPUT_ENCODINGS:
        raise ValueError(
            f"tf.strings.unicode_transcode: input_encoding {input_encoding!r} is not one nbdist "
            f"decodes; use one of {sorted(_INPUT_ENCODINGS)}"
        )
    attrs = {
        "input_encoding": input_encoding,
        "output_encoding": output_encoding,
        "errors": errors,
        "replacement_char": int(replacement_char),
        "replace_control_characters": bool(replace_control_characters),
    }
    return registry.make_op(
        "UnicodeTranscode",
        [_strings(input, "input", "UnicodeTranscode")],
        attrs,
        name=name or "UnicodeTranscode",
    ).outputs[0]


_elementwise("UnicodeScript", lambda node, c: script_code(int(c)), out_dtype=_dtypes.int32)


def unicode_script(input, name=None):  # noqa: A002
    """`tf.strings.unicode_script`: ICU's ``UScriptCode`` of each int32 code point (-1 for one
    out of Unicode's range)."""
    x = typed_input(input, _dtypes.int32, "input", "UnicodeScript")
    return registry.make_op("UnicodeScript", [x], name=name or "UnicodeScript").outputs[0]
