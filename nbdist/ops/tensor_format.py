"""A tensor's value as TF's kernels print it (``Tensor::SummarizeValue``): what `Assert`'s and
`Print`'s messages show, e.g. ``[[1 2][3...]...]`` for the first 3 entries of a 2x2 matrix.

Numbers print as TF's C++ prints them: a float with 6 significant digits when that reads back
as the same float32 (else 9), a double with 15 (else 17); ``1``/``0`` for bools; ``(re,im)``
for complex numbers; strings C-escaped as TF's ``CEscape`` does.
"""

import math

import numpy as np

__all__ = ["format_element", "summarize_value"]


def _shortest(value, digits, extra, cast):
    if math.isnan(value):
        return "-nan" if math.copysign(1.0, value) < 0 else "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    text = f"{value:.{digits}g}"
    return text if cast(float(text)) == cast(value) else f"{value:.{digits + extra}g}"


_ESCAPES = {
    ord("\n"): r"\n",
    ord("\r"): r"\r",
    ord("\t"): r"\t",
    ord('"'): r"\"",
    ord("'"): r"\'",
    ord("\\"): "\\\\",
}


def _c_escape(data):
    """TF's ``absl::CEscape``: quotes, backslashes and controls escaped, other bytes outside
    printable ASCII as 3-digit octal."""
    return "".join(_ESCAPES.get(b) or (chr(b) if 32 <= b < 127 else f"\\{b:03o}") for b in data)


def format_element(value):
    """One element as TF prints it (``strings::StrCat`` of the C++ value)."""
    if isinstance(value, str):
        value = value.encode()
    if isinstance(value, (bytes, np.bytes_)):
        return _c_escape(bytes(value))
    if isinstance(value, (bool, np.bool_)):
        return "1" if value else "0"
    if isinstance(value, (np.complexfloating, complex)):
        return f"({format_element(value.real)},{format_element(value.imag)})"
    if isinstance(value, np.float64) or (isinstance(value, float) and not isinstance(value, np.floating)):
        return _shortest(float(value), 15, 2, float)
    if isinstance(value, np.floating):  # float32, and float16 printed as the float it converts to
        return _shortest(float(value), 6, 3, np.float32)
    return str(value)


def summarize_value(value, max_entries=3):
    """`value` (an array) as TF's ``SummarizeValue(max_entries)``: at most `max_entries` entries
    (all when negative), nested in brackets per dimension, ``...`` where entries were left out.
    """
    value = np.asarray(value)
    flat = value.ravel()
    limit = flat.size if max_entries < 0 else min(max_entries, flat.size)
    if value.ndim == 0:
        text = " ".join(format_element(v) for v in flat[:limit])
    else:
        parts, index = [], [0]
        _print_dim(0, value.shape, limit, flat, index, parts)
        text = "".join(parts)
    return text + ("..." if flat.size > limit else "")


def _print_dim(dim, shape, limit, flat, index, out):
    """TF's ``PrintOneDim``: one dimension's entries, recursing into the inner ones."""
    if index[0] >= limit:
        return
    if dim == len(shape) - 1:
        for i in range(shape[dim]):
            if index[0] >= limit:
                if dim != 0:
                    out.append("...")
                return
            if i > 0:
                out.append(" ")
            out.append(format_element(flat[index[0]]))
            index[0] += 1
        return
    for _ in range(shape[dim]):
        opened = index[0] < limit
        if opened:
            out.append("[")
        _print_dim(dim + 1, shape, limit, flat, index, out)
        if index[0] < limit or opened:
            out.append("]")
