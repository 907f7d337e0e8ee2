"""`tf.decode_csv`: CSV records (string tensors) to one typed tensor per column (TF's `DecodeCSV`).

The op takes the records and one default per column as inputs; output ``k`` has column
``k``'s default's dtype and the records' shape. Parsing follows TF's kernel (RFC 4180
quoting): with ``use_quote_delim`` a field may be enclosed in double quotes, inside which
the delimiter is literal and ``""`` is one quote; a quote in an unquoted field is an error.
Numbers may have surrounding spaces; an empty field (or one equal to `na_value`) takes the
column's default, and a column whose default is empty is required. Every parse error is an
`InvalidArgumentError` naming the field and record, as TF's are.
"""

import itertools
import re

import numpy as np

from nbdist import errors
from nbdist.graph import dtypes as _dtypes
from nbdist.ops import registry
from nbdist.ops.constant_op import convert_to_tensor

__all__ = ["decode_csv"]

_COLUMN_TYPES = (_dtypes.float32, _dtypes.float64, _dtypes.int32, _dtypes.int64, _dtypes.string)
_INT_RE = re.compile(r"\s*[+-]?\d+\s*")
_INT_RANGE = {_dtypes.int32: (-(2**31), 2**31 - 1), _dtypes.int64: (-(2**63), 2**63 - 1)}


@registry.shape("DecodeCSV")
def _decode_csv_shape(inputs, attrs):
    records = inputs[0]
    return [(dtype, records.shape) for dtype in attrs["OUT_TYPE"]]


registry.no_gradient("DecodeCSV")


def _invalid(node, message):
    return errors.InvalidArgumentError(node.name, None, message)


def _split_record(node, record, delim, use_quote_delim):
    """The fields of one record, in order (an empty record has none, as in TF)."""
    fields, i, n = [], 0, len(record)
    if n == 0:
        return fields
    while True:
        if use_quote_delim and i < n and record[i] == '"':
            i += 1
            chars = []
            while True:
                if i >= n:
                    raise _invalid(
                        node, f"Quoted field has to end with quote followed by delim or end: {record!r}"
                    )
                if record[i] == '"':
                    if i + 1 < n and record[i + 1] == '"':
                        chars.append('"')
                        i += 2
                        continue
                    i += 1
                    break
                chars.append(record[i])
                i += 1
            if i < n and record[i] != delim:
                raise _invalid(node, "Quote inside a string has to be escaped by another quote")
            fields.append("".join(chars))
        else:
            end = record.find(delim, i)
            end = n if end < 0 else end
            field = record[i:end]
            if use_quote_delim and any(c in field for c in '"\r\n'):
                raise _invalid(node, "Unquoted fields cannot have quotes/CRLFs inside")
            fields.append(field)
            i = end
        if i >= n:
            return fields
        i += 1  # past the delimiter
        if i == n:  # a trailing delimiter ends with one more, empty, field
            fields.append("")
            return fields


def _parse_field(node, text, dtype, column, record_index):
    def bad():
        return _invalid(node, f"Field {column} in record {record_index} is not a valid {dtype.name}: {text}")

    if dtype is _dtypes.string:
        return text.encode()
    if dtype in _INT_RANGE:
        if not _INT_RE.fullmatch(text):
            raise bad()
        value = int(text)
        low, high = _INT_RANGE[dtype]
        if not low <= value <= high:
            raise bad()
        return value
    if "_" in text:  # Python's float() accepts digit separators; TF's parser does not
        raise bad()
    try:
        return float(text)
    except ValueError:
        raise bad() from None


@registry.kernel("DecodeCSV")
def _decode_csv_kernel(ctx, node, records, *defaults):
    delim = node.attr["field_delim"]
    if len(delim) != 1:
        raise _invalid(node, "field_delim should be only 1 char")
    use_quote_delim, na_value = node.attr["use_quote_delim"], node.attr["na_value"]
    select_cols, out_types = node.attr["select_cols"], node.attr["OUT_TYPE"]
    for k, d in enumerate(defaults):
        if np.size(d) > 1:
            raise _invalid(
                node,
                "Shape of a default must be a length-0 or length-1 vector, or a scalar; "
                f"default {k} has {np.size(d)} elements",
            )
    records = np.asarray(records, dtype=object)
    outputs = [np.empty(records.shape, dtype=t.np) for t in out_types]
    for index, record in enumerate(records.reshape(-1)):
        text = record.decode() if isinstance(record, bytes) else str(record)
        fields = _split_record(node, text, delim, use_quote_delim)
        if select_cols:
            if len(fields) <= select_cols[-1]:
                expected = select_cols[-1] + 1
                raise _invalid(node, f"Expect {expected} fields but have {len(fields)} in record {index}")
            fields = [fields[c] for c in select_cols]
        elif len(fields) != len(out_types):
            raise _invalid(node, f"Expect {len(out_types)} fields but have {len(fields)} in record {index}")
        for k, (field, dtype) in enumerate(zip(fields, out_types)):
            if field in ("", na_value):
                if np.size(defaults[k]) == 0:
                    raise _invalid(node, f"Field {k} is required but missing in record {index}!")
                value = np.asarray(defaults[k]).reshape(-1)[0]
            else:
                value = _parse_field(node, field, dtype, k, index)
            outputs[k].reshape(-1)[index] = value
    return tuple(outputs)


def decode_csv(
    records, record_defaults, field_delim=",", use_quote_delim=True, name=None, na_value="", select_cols=None
):
    """`tf.decode_csv`: parses CSV `records` into one tensor per column.

    Args:
        records: a string Tensor of any shape; each element is one CSV line.
        record_defaults: one entry per (selected) column: a one-element list or tensor
            (``[0]``, ``[1.0]``, ``[""]``, ``tf.constant([0], tf.int64)``) giving its dtype and
            the value of an empty field, or an empty tensor (``tf.constant([], tf.float32)``)
            for a required column. Types: float32, float64, int32, int64, string.
        field_delim: the one-character delimiter.
        use_quote_delim: treat double-quoted fields as RFC 4180 does.
        na_value: a field equal to this string is missing (takes the default).
        select_cols: optional sorted column indices to keep (one default per index).
        name: the op's name (default ``DecodeCSV``).

    Returns:
        A list of Tensors, one per column, each of `records`' shape.

    Raises:
        TypeError: if a default has an unsupported dtype.
        ValueError: if `select_cols` is not sorted and non-negative, or its length differs
            from `record_defaults`'.
    """
    records = convert_to_tensor(records, dtype=_dtypes.string, name="records")
    defaults = []
    for k, d in enumerate(record_defaults):
        d = convert_to_tensor(d, name=f"record_defaults_{k}")
        if d.dtype not in _COLUMN_TYPES:
            raise TypeError(
                f"tf.decode_csv: record_defaults[{k}] has dtype {d.dtype.name}; use one of "
                f"{[t.name for t in _COLUMN_TYPES]}"
            )
        defaults.append(d)
    if select_cols is not None:
        select_cols = [int(c) for c in select_cols]
        if any(c < 0 for c in select_cols) or any(a >= b for a, b in itertools.pairwise(select_cols)):
            raise ValueError(
                f"tf.decode_csv: select_cols must be non-negative and strictly increasing, got {select_cols}"
            )
        if len(select_cols) != len(defaults):
            raise ValueError(
                f"Length of select_cols and record_defaults do not match: {len(select_cols)} columns "
                f"selected, {len(defaults)} defaults"
            )
    attrs = {
        "OUT_TYPE": [d.dtype for d in defaults],
        "field_delim": field_delim,
        "use_quote_delim": bool(use_quote_delim),
        "na_value": na_value,
        "select_cols": select_cols or [],
    }
    return registry.make_op("DecodeCSV", [records, *defaults], attrs, name=name).outputs
