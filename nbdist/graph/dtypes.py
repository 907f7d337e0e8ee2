"""TF's `DType`s over numpy dtypes: `tf.float32`, `tf.int64`, `tf.string`, ...

`as_dtype` normalises every accepted form (a `DType`, a numpy dtype or type, a
name such as ``"float32"``) once, so the rest of nbdist only sees `DType`s.
"""

import numpy as np


class DType:
    """A tensor element type: a name plus the numpy dtype that holds its values."""

    __slots__ = ("name", "as_numpy_dtype", "_np")

    def __init__(self, name, np_dtype):
        self.name = name
        self._np = np.dtype(np_dtype)
        self.as_numpy_dtype = self._np.type

    @property
    def np(self):
        """The numpy dtype (``object`` for strings, which hold `bytes`)."""
        return self._np

    @property
    def is_floating(self):
        return self._np.kind == "f" or self.name == "bfloat16"

    @property
    def is_integer(self):
        return self._np.kind in "iu" and not self.is_quantized

    @property
    def is_quantized(self):
        """True for TF's quantized types (qint8, quint8, qint16, quint16, qint32)."""
        return self.name in _QUANTIZED_NAMES

    @property
    def is_complex(self):
        return self._np.kind == "c"

    @property
    def is_unsigned(self):
        return self._np.kind == "u" and not self.is_quantized  # not bool nor quint8, as TF's

    @property
    def real_dtype(self):
        """float32 for complex64, float64 for complex128, itself otherwise (TF's)."""
        return {"complex64": float32, "complex128": float64}.get(self.name, self)

    @property
    def is_bool(self):
        return self._np.kind == "b"

    @property
    def base_dtype(self):
        return self

    @property
    def size(self):
        return 0 if self._np.kind == "O" else self._np.itemsize  # string, resource, variant: 0 (TF's)

    @property
    def min(self):
        """The smallest value of the type (TF's; a TypeError for bool, string and complex)."""
        return self._limit(0)

    @property
    def max(self):
        """The largest value of the type (TF's; a TypeError for bool, string and complex)."""
        return self._limit(1)

    def _limit(self, index):  # (bfloat16's limits come from ml_dtypes: numpy cannot tell them)
        if self.is_quantized:
            what = ("minimum", "maximum")[index]
            raise TypeError(f"Cannot find {what} value of {self!r} with quantized type {self!r}.")
        if self._np.kind == "f" or self.name == "bfloat16":
            info = np.finfo(self._np) if self._np.kind == "f" else _bfloat16_finfo()
            return (-info.max, info.max)[index]
        if self._np.kind in "iu":
            info = np.iinfo(self._np)
            return (info.min, info.max)[index]
        raise TypeError(f"Cannot find {('minimum', 'maximum')[index]} value of {self!r}.")

    @property
    def as_datatype_enum(self):
        """TF's `DataType` enum number of the type (DT_FLOAT is 1)."""
        return _ENUMS[self.name]

    def is_compatible_with(self, other):
        """Whether a value of dtype `other` can be used where this one is expected (the same type)."""
        return self == other

    def __eq__(self, other):
        try:
            return self is as_dtype(other)
        except TypeError:
            return False

    def __hash__(self):
        return hash(self.name)

    def __repr__(self):
        return f"tf.{self.name}"


float16 = DType("float16", np.float16)
float32 = DType("float32", np.float32)
float64 = DType("float64", np.float64)
int8 = DType("int8", np.int8)
int16 = DType("int16", np.int16)
int32 = DType("int32", np.int32)
int64 = DType("int64", np.int64)
uint8 = DType("uint8", np.uint8)
uint16 = DType("uint16", np.uint16)
uint32 = DType("uint32", np.uint32)
uint64 = DType("uint64", np.uint64)
complex64 = DType("complex64", np.complex64)
complex128 = DType("complex128", np.complex128)
bool = DType("bool", np.bool_)  # noqa: A001 - TF's public name tf.bool
string = DType("string", object)
half = float16
double = float64
# A value the runtime keeps whole, never sent or fed: a while loop's per-iteration history
# (nbdist.ops.while_ops), as TF's variant tensors hold lists.
variant = DType("variant", object)
# TF's handle to a resource: placeholders may have it (nbdist's variables are ref variables).
resource = DType("resource", object)
# TF's quantized integers: held as integers of their width, carried by placeholders and
# identities; nbdist has no quantized kernels to read them.
qint8 = DType("qint8", np.int8)
quint8 = DType("quint8", np.uint8)
qint16 = DType("qint16", np.int16)
quint16 = DType("quint16", np.uint16)
qint32 = DType("qint32", np.int32)
QUANTIZED_DTYPES = frozenset({qint8, quint8, qint16, quint16, qint32})
_QUANTIZED_NAMES = frozenset(d.name for d in QUANTIZED_DTYPES)

_ALL = (
    float16,
    float32,
    float64,
    int8,
    int16,
    int32,
    int64,
    uint8,
    uint16,
    uint32,
    uint64,
    complex64,
    complex128,
    bool,
    string,
)
# TF's DataType enum (types.proto)
_ENUMS = {
    "float32": 1, "float64": 2, "int32": 3, "uint8": 4, "int16": 5, "int8": 6, "string": 7,
    "complex64": 8, "int64": 9, "bool": 10, "uint16": 17, "complex128": 18, "float16": 19,
    "variant": 21, "uint32": 22, "uint64": 23,
}  # fmt: skip
# TF's other spellings: tf.placeholder("float", ...) is float32.
_BY_NAME = {d.name: d for d in _ALL} | {
    "half": float16,
    "float": float32,
    "double": float64,
    "variant": variant,
}
_BY_NUMPY = {d.np: d for d in _ALL if d is not string}
_ENUMS |= {
    "qint8": 11,
    "quint8": 12,
    "qint32": 13,
    "bfloat16": 14,
    "qint16": 15,
    "quint16": 16,
    "resource": 20,
}
_BY_NAME |= {d.name: d for d in (resource, *QUANTIZED_DTYPES)}
_BFLOAT16 = []  # [the DType] once made, [None] when the ml_dtypes package is missing


def _bfloat16():
    """`bfloat16`, made on first use: it needs the ml_dtypes package (numpy has no bfloat16;
    TensorFlow installs it), whose import costs ~0.7 s that every nbdist process would pay."""
    if not _BFLOAT16:
        try:
            import ml_dtypes  # noqa: PLC0415
        except ImportError:
            _BFLOAT16.append(None)
        else:
            dtype = DType("bfloat16", ml_dtypes.bfloat16)
            _BY_NAME["bfloat16"] = _BY_NUMPY[dtype.np] = dtype
            _BFLOAT16.append(dtype)
    return _BFLOAT16[0]


def __getattr__(name):
    if name == "bfloat16" and _bfloat16() is not None:
        return _bfloat16()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# TF's numpy spelling of a quantized type: a one-field structured dtype ([("qint8", "i1")]).
_QUANTIZED_NUMPY = {np.dtype([(d.name, d.np)]): d for d in QUANTIZED_DTYPES}


def as_dtype(value):
    """Returns the `DType` for a `DType`, numpy dtype/type or name.

    Raises:
        TypeError: if `value` names no supported type.
    """
    if isinstance(value, DType):
        return value
    if isinstance(value, str):
        if value in _BY_NAME or (value == "bfloat16" and _bfloat16() is not None):
            return _BY_NAME[value]
        raise TypeError(f"unknown dtype name {value!r}; expected one of {sorted(_BY_NAME)}")
    if value in (bytes, str):
        return string
    if value is float:  # TF reads a Python float as float32 (numpy would say float64)
        return float32
    try:
        np_dtype = np.dtype(value)
    except TypeError:
        raise TypeError(
            f"cannot convert {value!r} to a dtype; pass a tf dtype such as tf.float32, "
            "a numpy dtype or a dtype name"
        ) from None
    if np_dtype.kind in "OSU":
        return string
    if np_dtype in _QUANTIZED_NUMPY:
        return _QUANTIZED_NUMPY[np_dtype]
    if np_dtype in _BY_NUMPY or (np_dtype.name == "bfloat16" and _bfloat16() is not None):
        return _BY_NUMPY[np_dtype]
    raise TypeError(f"dtype {np_dtype} is not supported; supported: {sorted(_BY_NAME)}")


def _bfloat16_finfo():
    import ml_dtypes  # noqa: PLC0415 - loaded already: a bfloat16 DType exists

    return ml_dtypes.finfo(ml_dtypes.bfloat16)


def dtype_of_value(array):
    """The `DType` of a numpy array (bytes and str arrays are `string`)."""
    return as_dtype(array.dtype)
