"""String ops (`tf.strings.*` and TF 1.x's top-level names): elementwise ops over string
tensors (numpy object arrays of `bytes`), `reduce_join`, `as_string` / `to_number`, regular
expressions and `string_split` to a `SparseTensor`, each with TF's op type and none
differentiable.

Regular expressions are TF's RE2 patterns run by Python's `re`: the common subset (classes,
groups, ``|``, ``*?``, anchors, ``(?i)``) means the same; RE2 has no backreferences or
lookaround (Python accepts them, TF rejects them), and Python's ``\\Z`` / ``\\z``, named groups
(``(?P<n>...)`` both) and Unicode classes differ in corner cases. `regex_replace`'s rewrite is
RE2's: ``\\0`` the whole match, ``\\1``..``\\9`` groups, ``\\\\`` a backslash.
"""

import re

import numpy as np

from nbdist.graph import dtypes as _dtypes
from nbdist.graph.tensor_shape import TensorShape
from nbdist.ops import registry
from nbdist.ops._shapes import broadcast_shape, invalid_argument, unknown_dims
from nbdist.ops.constant_op import convert_to_tensor
from nbdist.ops.sparse_tensor import SparseTensor
from nbdist.ops.tensor_format import format_element

__all__ = [
    "as_string",
    "reduce_join",
    "regex_replace",
    "string_join",
    "string_split",
    "string_strip",
    "string_to_number",
    "substr",
]

_UNITS = ("BYTE", "UTF8_CHAR")


def _strings(value, what):
    t = convert_to_tensor(value, dtype=None if hasattr(value, "dtype") else _dtypes.string)
    if t.dtype is not _dtypes.string:
        raise TypeError(f"{what} must be a string tensor, got {t.dtype.name} ({t.name})")
    return t


def _objects(shape, items):
    out = np.empty(shape, dtype=object)
    out.reshape(-1)[:] = items if isinstance(items, list) else list(items)
    return out


def _map(fn, *arrays, dtype=object):
    """`fn` over the broadcast elements of `arrays` (numpy object arrays or numbers)."""
    arrays = np.broadcast_arrays(*[np.asarray(a, dtype=object) for a in arrays])
    shape = arrays[0].shape if arrays else ()
    items = [fn(*xs) for xs in zip(*[a.reshape(-1) for a in arrays])]
    if dtype is object:
        return _objects(shape, items)
    return np.array(items, dtype=dtype).reshape(shape)


def _check_unit(unit):
    if unit not in _UNITS:
        raise ValueError(f"unit must be one of {list(_UNITS)}, got {unit!r}")
    return unit


# -- elementwise: one input, one output of its shape ---------------------------------------------
_ELEMENTWISE = {
    "StringLower": (_dtypes.string, lambda s, attrs: s.lower()),
    "StringUpper": (_dtypes.string, lambda s, attrs: s.upper()),
    "StringStrip": (_dtypes.string, lambda s, attrs: s.strip()),
    "StringLength": (
        _dtypes.int32,
        lambda s, attrs: len(s) if attrs["unit"] == "BYTE" else len(s.decode("utf-8", "replace")),
    ),
    "RegexFullMatch": (_dtypes.bool, lambda s, attrs: _regex(attrs["pattern"]).fullmatch(s) is not None),
}


def _elementwise_kernel(ctx, node, x):
    out_dtype, fn = _ELEMENTWISE[node.op]
    return _map(lambda s: fn(s, node.attr), x, dtype=out_dtype.np)


for _op_type in _ELEMENTWISE:
    registry.shape(_op_type)(lambda inputs, attrs, _t=_op_type: [(_ELEMENTWISE[_t][0], inputs[0].shape)])
    registry.kernel(_op_type)(_elementwise_kernel)
    registry.no_gradient(_op_type)


def _elementwise(op_type, value, name, **attrs):
    return registry.make_op(op_type, [_strings(value, "input")], attrs, name=name).outputs[0]


def lower(input, encoding="", name=None):  # noqa: A002 - TF's argument name
    """`tf.strings.lower`: ASCII letters to lower case (TF's default, empty `encoding`)."""
    return _elementwise("StringLower", input, name, encoding=encoding)


def upper(input, encoding="", name=None):  # noqa: A002
    """`tf.strings.upper`: ASCII letters to upper case."""
    return _elementwise("StringUpper", input, name, encoding=encoding)


def string_strip(input, name=None):  # noqa: A002
    """`tf.string_strip` / `tf.strings.strip`: without leading and trailing ASCII whitespace."""
    return _elementwise("StringStrip", input, name)


def length(input, name=None, unit="BYTE"):  # noqa: A002
    """`tf.strings.length`: int32 lengths in bytes (``unit="BYTE"``) or UTF-8 characters."""
    return _elementwise("StringLength", input, name, unit=_check_unit(unit))


def _regex(pattern):
    try:
        return re.compile(pattern if isinstance(pattern, bytes) else pattern.encode())
    except re.error as e:
        raise ValueError(f"invalid regular expression {pattern!r}: {e}") from None


def regex_full_match(input, pattern, name=None):  # noqa: A002
    """`tf.strings.regex_full_match`: whether each string matches `pattern` as a whole.

    `pattern` is a Python string (RE2 syntax; the module docstring says which subset)."""
    if not isinstance(pattern, (str, bytes)):
        raise TypeError(f"nbdist's regex_full_match takes the pattern as a Python string, got {pattern!r}")
    _regex(pattern)
    return _elementwise("RegexFullMatch", input, name, pattern=pattern)


# -- regex_replace ---------------------------------------------------------------------------------
_REWRITE = re.compile(rb"\\(.)", re.DOTALL)


def _expand(rewrite, match):
    def one(m):
        c = m.group(1)
        if c.isdigit():
            return match.group(int(c)) or b""
        return c

    return _REWRITE.sub(one, rewrite)


@registry.shape("RegexReplace")
def _regex_replace_shape(inputs, attrs):
    return [(_dtypes.string, inputs[0].shape)]


@registry.kernel("RegexReplace")
def _regex_replace_kernel(ctx, node, x, pattern, rewrite):
    regex = _regex(bytes(np.asarray(pattern).item()))
    rewrite = bytes(np.asarray(rewrite).item())
    count = 0 if node.attr["replace_global"] else 1
    return _map(lambda s: regex.sub(lambda m: _expand(rewrite, m), s, count=count), x)


registry.no_gradient("RegexReplace")


def regex_replace(input, pattern, rewrite, replace_global=True, name=None):  # noqa: A002
    """`tf.regex_replace` / `tf.strings.regex_replace`: matches of `pattern` replaced by
    `rewrite` (``\\1`` a group, ``\\0`` the match), all of them or (``replace_global=False``)
    the first."""
    inputs = [_strings(input, "input"), _strings(pattern, "pattern"), _strings(rewrite, "rewrite")]
    attrs = {"replace_global": bool(replace_global)}
    return registry.make_op("RegexReplace", inputs, attrs, name=name).outputs[0]


# -- string_join / reduce_join ---------------------------------------------------------------------
@registry.shape("StringJoin")
def _string_join_shape(inputs, attrs):
    out = TensorShape([])
    for t in inputs:
        out = broadcast_shape(out, t.shape)
    return [(_dtypes.string, out)]


@registry.kernel("StringJoin")
def _string_join_kernel(ctx, node, *xs):
    shapes = {np.shape(x) for x in xs if np.ndim(x)}
    if len(shapes) > 1:
        raise invalid_argument(node, f"Input shapes do not match: {[list(s) for s in shapes]}")
    sep = node.attr["separator"].encode()
    return _map(lambda *parts: sep.join(parts), *xs)


registry.no_gradient("StringJoin")


def string_join(inputs, separator="", name=None):
    """`tf.string_join` / `tf.strings.join`: the inputs joined elementwise (scalars broadcast)."""
    tensors = [_strings(x, f"inputs[{i}]") for i, x in enumerate(inputs)]
    return registry.make_op("StringJoin", tensors, {"separator": separator}, name=name).outputs[0]


def _axes(axis, ndims):
    if axis is None:
        return list(range(ndims))
    axes = [axis] if np.ndim(axis) == 0 else list(axis)
    return sorted({int(a) % ndims for a in axes})


@registry.shape("ReduceJoin")
def _reduce_join_shape(inputs, attrs):
    x = inputs[0].shape
    if x.ndims is None or (attrs["axis"] is None and attrs["keep_dims"]):
        return unknown_dims(_dtypes.string, x.ndims)
    axes = _axes(attrs["axis"], x.ndims)
    dims = [1 if i in axes else d for i, d in enumerate(x.as_list()) if attrs["keep_dims"] or i not in axes]
    return [(_dtypes.string, TensorShape(dims))]


@registry.kernel("ReduceJoin")
def _reduce_join_kernel(ctx, node, x):
    x = np.asarray(x, dtype=object)
    axes = _axes(node.attr["axis"], x.ndim)
    sep = node.attr["separator"].encode()
    kept = [i for i in range(x.ndim) if i not in axes]
    moved = np.transpose(x, kept + axes).reshape([x.shape[i] for i in kept] + [-1])
    out = _objects(moved.shape[:-1], [sep.join(row) for row in moved.reshape(-1, moved.shape[-1])])
    if node.attr["keep_dims"]:
        out = out.reshape([1 if i in axes else d for i, d in enumerate(x.shape)])
    return out


registry.no_gradient("ReduceJoin")


def reduce_join(
    inputs, axis=None, keep_dims=None, separator="", name=None, reduction_indices=None, keepdims=None
):
    """`tf.reduce_join` / `tf.strings.reduce_join`: the strings along `axis` (all when None)
    joined with `separator`, in row-major order."""
    axis = reduction_indices if axis is None else axis
    keep = bool(keepdims if keepdims is not None else keep_dims)
    if axis is not None:
        axis = int(axis) if np.ndim(axis) == 0 else [int(a) for a in axis]
    attrs = {"axis": axis, "keep_dims": keep, "separator": separator}
    return registry.make_op("ReduceJoin", [_strings(inputs, "inputs")], attrs, name=name).outputs[0]


# -- substr ----------------------------------------------------------------------------------------
@registry.shape("Substr")
def _substr_shape(inputs, attrs):
    return [
        (_dtypes.string, broadcast_shape(inputs[0].shape, broadcast_shape(inputs[1].shape, inputs[2].shape)))
    ]


@registry.kernel("Substr")
def _substr_kernel(ctx, node, x, pos, size):
    utf8 = node.attr["unit"] == "UTF8_CHAR"

    def one(s, p, n):
        text = s.decode("utf-8") if utf8 else s
        p, n = int(p), int(n)
        if not -len(text) <= p <= len(text):
            raise invalid_argument(node, f"pos {p} out of range for string {s!r} at index 0")
        p += len(text) if p < 0 else 0
        piece = text[p : p + max(n, 0)]
        return piece.encode("utf-8") if utf8 else piece

    return _map(one, x, pos, size)


registry.no_gradient("Substr")


def substr(input, pos, len, name=None, unit="BYTE"):  # noqa: A002 - TF's argument names
    """`tf.substr` / `tf.strings.substr`: ``len`` bytes (or UTF-8 characters) from ``pos``
    (negative counts from the end); `pos` and `len` broadcast against `input`.

    Raises:
        InvalidArgumentError: at run time, for a `pos` beyond a string's end.
    """
    inputs = [_strings(input, "input"), convert_to_tensor(pos), convert_to_tensor(len)]
    return registry.make_op("Substr", inputs, {"unit": _check_unit(unit)}, name=name).outputs[0]


# -- string_to_number / as_string ------------------------------------------------------------------
_NUMBER_TYPES = (_dtypes.float32, _dtypes.float64, _dtypes.int32, _dtypes.int64)


@registry.shape("StringToNumber")
def _to_number_shape(inputs, attrs):
    return [(attrs["out_type"], inputs[0].shape)]


@registry.kernel("StringToNumber")
def _to_number_kernel(ctx, node, x):
    out_type = node.attr["out_type"]

    def one(s):
        try:
            text = s.decode()
            value = float(text) if out_type.is_floating else int(text)
            np.array(value, dtype=out_type.np)  # raises OverflowError out of range
            return value
        except (ValueError, OverflowError, UnicodeDecodeError):
            text = s.decode(errors="replace")
            raise invalid_argument(
                node, f"StringToNumberOp could not correctly convert string: {text}"
            ) from None

    return _map(one, x, dtype=out_type.np)


registry.no_gradient("StringToNumber")


def string_to_number(string_tensor=None, out_type=_dtypes.float32, name=None, input=None):  # noqa: A002
    """`tf.string_to_number` / `tf.strings.to_number`: each string parsed as `out_type`.

    Raises:
        InvalidArgumentError: at run time, for a string that is no such number.
    """
    out_type = _dtypes.as_dtype(out_type)
    if out_type not in _NUMBER_TYPES:
        raise TypeError(f"out_type must be one of {[d.name for d in _NUMBER_TYPES]}, got {out_type.name}")
    x = _strings(input if string_tensor is None else string_tensor, "string_tensor")
    return registry.make_op("StringToNumber", [x], {"out_type": out_type}, name=name).outputs[0]


@registry.shape("AsString")
def _as_string_shape(inputs, attrs):
    return [(_dtypes.string, inputs[0].shape)]


@registry.kernel("AsString")
def _as_string_kernel(ctx, node, x):
    x = np.asarray(x)
    if x.dtype == np.bool_:
        return _map(lambda v: b"true" if v else b"false", x)
    fmt = node.attr["format"]
    return _map(lambda v: (fmt % v).encode(), x)


registry.no_gradient("AsString")


def as_string(input, precision=-1, scientific=False, shortest=False, width=-1, fill="", name=None):  # noqa: A002
    """`tf.as_string` / `tf.strings.as_string`: numbers (or booleans) formatted as TF's
    kernel does, with C's ``printf``: ``%{fill}{width}.{precision}{f|e|g|d}``.

    Raises:
        ValueError: `fill` not one of ``" +-0#"``, both `scientific` and `shortest`, or a
            `precision` for integers.
    """
    x = convert_to_tensor(input)
    if fill and fill[0] not in " +-0#":
        raise ValueError(f'Fill argument not supported: "{fill}"')
    if scientific and shortest:
        raise ValueError("Cannot select both scientific and shortest notation")
    if x.dtype.is_integer and precision > -1:
        raise ValueError(f"precision not supported for datatype {x.dtype.name}")
    fmt = "%" + fill + (str(width) if width > -1 else "") + (f".{precision}" if precision > -1 else "")
    fmt += "d" if x.dtype.is_integer else "g" if shortest else "e" if scientific else "f"
    return registry.make_op("AsString", [x], {"format": fmt}, name=name).outputs[0]


# -- string_split (v1, character delimiters) and strings.split (v2's separator) --------------------
@registry.shape("StringSplit")
def _string_split_shape(inputs, attrs):
    return [
        (_dtypes.int64, TensorShape([None, 2])),
        (_dtypes.string, TensorShape([None])),
        (_dtypes.int64, TensorShape([2])),
    ]


registry.shape("StringSplitV2")(_string_split_shape)


def _to_sparse(rows):
    """Rows of tokens as the (indices, values, dense_shape) of a 2-D SparseTensor."""
    indices = [(i, j) for i, row in enumerate(rows) for j in range(len(row))]
    values = _objects((len(indices),), [t for row in rows for t in row])
    width = max((len(r) for r in rows), default=0)
    return np.array(indices, np.int64).reshape(-1, 2), values, np.array([len(rows), width], np.int64)


@registry.kernel("StringSplit")
def _string_split_kernel(ctx, node, x, delimiter):
    if np.ndim(x) != 1:
        raise invalid_argument(node, f"input must be a vector, got shape: {list(np.shape(x))}")
    delimiter = bytes(np.asarray(delimiter).item())
    if delimiter:
        splitter = re.compile(b"[" + re.escape(delimiter) + b"]")
        rows = [splitter.split(s) if s else [] for s in x]
    else:
        rows = [[s[i : i + 1] for i in range(len(s))] for s in x]
    if node.attr["skip_empty"]:
        rows = [[t for t in row if t] for row in rows]
    return _to_sparse(rows)


@registry.kernel("StringSplitV2")
def _string_split_v2_kernel(ctx, node, x, sep):
    sep = bytes(np.asarray(sep).item()) or None
    maxsplit = node.attr["maxsplit"]
    return _to_sparse([s.split(sep, maxsplit) for s in np.asarray(x, dtype=object).reshape(-1)])


registry.no_gradient("StringSplit")
registry.no_gradient("StringSplitV2")


def string_split(source, sep=None, skip_empty=True, delimiter=None, result_type="SparseTensor", name=None):
    """`tf.string_split`: each string of the vector `source` split at any of the characters of
    `sep` (``" "`` by default; ``""`` splits into bytes) into a 2-D `SparseTensor` of tokens
    (``[i, j]`` the j-th token of string i), empty tokens dropped unless `skip_empty` is False.

    Raises:
        ValueError: a `result_type` other than ``"SparseTensor"`` (nbdist has no RaggedTensor).
    """
    if result_type != "SparseTensor":
        raise ValueError(f"nbdist's string_split returns a SparseTensor, got result_type={result_type!r}")
    sep = delimiter if sep is None else sep
    inputs = [_strings(source, "source"), _strings(" " if sep is None else sep, "delimiter")]
    op = registry.make_op("StringSplit", inputs, {"skip_empty": bool(skip_empty)}, name=name)
    return SparseTensor(*op.outputs)


def split(input=None, sep=None, maxsplit=-1, result_type="SparseTensor", source=None, name=None):  # noqa: A002
    """`tf.strings.split` (TF 1.x's, a `SparseTensor`): each string split at `sep` as Python's
    ``bytes.split`` does (None: runs of whitespace), at most `maxsplit` times."""
    if result_type != "SparseTensor":
        raise ValueError(f"nbdist's strings.split returns a SparseTensor, got result_type={result_type!r}")
    x = _strings(source if input is None else input, "input")
    inputs = [x, _strings("" if sep is None else sep, "sep")]
    op = registry.make_op("StringSplitV2", inputs, {"maxsplit": int(maxsplit)}, name=name)
    return SparseTensor(*op.outputs)


# -- format ----------------------------------------------------------------------------------------
def _format_item(v):
    if isinstance(v, bytes):
        return '"' + v.decode("utf-8", "replace") + '"'
    return format_element(v)  # as TF: 1/0 for bools, a float32 with the digits it needs


def _format_tensor(x, summarize, indent=1):
    """A tensor as TF prints it: ``[[1 2 ... 4 5]\n [6 7 ... 9 10]]`` (`summarize` per end)."""
    if np.ndim(x) == 0:  # (an element of an object array is bytes; a float32 keeps its digits)
        return _format_item(x[()] if isinstance(x, np.ndarray) else x)
    rows = list(range(len(x)))
    if summarize >= 0 and len(x) > 2 * summarize:
        rows = [*rows[:summarize], None, *rows[-summarize:]]
    parts = ["..." if i is None else _format_tensor(x[i], summarize, indent + 1) for i in rows]
    sep = " " if x.ndim == 1 else "\n" * (x.ndim - 1) + " " * indent
    return "[" + sep.join(parts) + "]"


@registry.shape("StringFormat")
def _string_format_shape(inputs, attrs):
    return [(_dtypes.string, TensorShape([]))]


@registry.kernel("StringFormat")
def _string_format_kernel(ctx, node, *xs):
    pieces = node.attr["template"].split(node.attr["placeholder"])
    values = [_format_tensor(np.asarray(x), node.attr["summarize"]) for x in xs]
    out = pieces[0] + "".join(v + p for v, p in zip(values, pieces[1:]))
    return np.array(out.encode(), dtype=object)


registry.no_gradient("StringFormat")


def format(template, inputs, placeholder="{}", summarize=3, name=None):  # noqa: A001 - TF's name
    """`tf.strings.format`: `template` with each `placeholder` replaced by one of `inputs`
    printed as TF prints tensors (at most `summarize` entries at each end of a dimension).

    Raises:
        ValueError: the number of placeholders is not the number of inputs.
    """
    inputs = [inputs] if not isinstance(inputs, (list, tuple)) else list(inputs)
    if template.count(placeholder) != len(inputs):
        raise ValueError(
            f"{template.count(placeholder)} placeholder(s) in template {template!r} do not match "
            f"the {len(inputs)} input(s)"
        )
    tensors = [convert_to_tensor(x) for x in inputs]
    attrs = {"template": template, "placeholder": placeholder, "summarize": int(summarize)}
    return registry.make_op("StringFormat", tensors, attrs, name=name).outputs[0]


# -- unsorted_segment_join -------------------------------------------------------------------------
@registry.shape("UnsortedSegmentJoin")
def _segment_join_shape(inputs, attrs):
    return unknown_dims(_dtypes.string, None)


@registry.kernel("UnsortedSegmentJoin")
def _segment_join_kernel(ctx, node, x, ids, num):
    x, ids, num = np.asarray(x, dtype=object), np.asarray(ids), int(num)
    if x.shape[: ids.ndim] != ids.shape:
        raise invalid_argument(node, f"segment_ids {list(ids.shape)} is not a prefix of {list(x.shape)}")
    rest = x.shape[ids.ndim :]
    groups = [[] for _ in range(num)]
    for i, row in zip(ids.reshape(-1), x.reshape(-1, *rest)):
        if not 0 <= i < num:
            raise invalid_argument(node, f"segment_ids {int(i)} is out of range [0, {num})")
        groups[i].append(row)
    sep = node.attr["separator"].encode()
    out = np.empty((num, *rest), dtype=object)
    for k, group in enumerate(groups):
        out[k] = _map(lambda *parts: sep.join(parts), *group) if group else b""
    return out


registry.no_gradient("UnsortedSegmentJoin")


def unsorted_segment_join(inputs, segment_ids, num_segments, separator="", name=None):
    """`tf.strings.unsorted_segment_join`: the strings of each segment joined, in order."""
    tensors = [_strings(inputs, "inputs"), convert_to_tensor(segment_ids), convert_to_tensor(num_segments)]
    op = registry.make_op("UnsortedSegmentJoin", tensors, {"separator": separator}, name=name)
    return op.outputs[0]
