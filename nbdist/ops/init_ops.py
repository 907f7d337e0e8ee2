"""Initializers: ``tf.zeros_initializer()``, ``tf.glorot_uniform_initializer()``, ...

An initializer is a callable ``init(shape, dtype=None, partition_info=None) -> Tensor``
that `tf.get_variable` calls inside the variable's ``Initializer`` name scope, so the ops
it builds are colocated with the variable (on its ps). As in TF 1.x, the variance-scaling
family computes its fans from the *full* variable's shape when it initializes one shard of
a partitioned variable (`partition_info.full_shape`), so sharding does not change the
distribution. Random initializers draw from nbdist's own generators: seeded runs repeat,
but the numbers are not TF's.
"""

import math

import numpy as np

from nbdist.graph import dtypes as _dtypes
from nbdist.ops import array_ops, random_ops
from nbdist.ops.constant_op import constant

__all__ = [
    "constant_initializer",
    "glorot_normal_initializer",
    "glorot_uniform_initializer",
    "initialize_all_tables",
    "ones_initializer",
    "orthogonal_initializer",
    "random_normal_initializer",
    "random_uniform_initializer",
    "tables_initializer",
    "truncated_normal_initializer",
    "uniform_unit_scaling_initializer",
    "variance_scaling_initializer",
    "zeros_initializer",
]


class Initializer:
    """Base class: holds the dtype; subclasses build the value in `__call__`."""

    def __init__(self, dtype=_dtypes.float32):
        self.dtype = _dtypes.as_dtype(dtype)

    def _dtype(self, dtype):
        return self.dtype if dtype is None else _dtypes.as_dtype(dtype)

    def get_config(self):
        return {"dtype": self.dtype.name}

    def __repr__(self):
        return f"<{type(self).__name__} {self.get_config()}>"


class zeros_initializer(Initializer):  # noqa: N801 - TF's public name
    """All zeros."""

    def __call__(self, shape, dtype=None, partition_info=None):
        return array_ops.zeros(shape, self._dtype(dtype))


class ones_initializer(Initializer):  # noqa: N801 - TF's public name
    """All ones."""

    def __call__(self, shape, dtype=None, partition_info=None):
        return array_ops.ones(shape, self._dtype(dtype))


class constant_initializer(Initializer):  # noqa: N801 - TF's public name
    """A constant: a scalar fills the shape; a list or array must have the shape's size.

    Raises (at call):
        TypeError: if `value` has more elements than the variable (TF's rule); fewer are
            padded with the last value, as TF does.
    """

    def __init__(self, value=0, dtype=_dtypes.float32, verify_shape=False):
        super().__init__(dtype)
        self.value = value
        self.verify_shape = verify_shape

    def __call__(self, shape, dtype=None, partition_info=None, verify_shape=None):
        dtype = self._dtype(dtype)
        dims = [int(d) for d in shape]
        values = np.asarray(self.value, dtype=dtype.np)
        verify = self.verify_shape if verify_shape is None else verify_shape
        if verify and values.shape != tuple(dims):
            raise TypeError(f"constant_initializer: expected value of shape {dims}, got {list(values.shape)}")
        if values.ndim == 0:
            full = np.full(dims, values, dtype=dtype.np)
        else:
            flat = values.ravel()
            size = math.prod(dims)
            if flat.size > size:
                raise TypeError(
                    f"constant_initializer: too many elements provided: needed at most {size}, "
                    f"got {flat.size} (value {self.value!r} for shape {dims})"
                )
            full = np.concatenate([flat, np.repeat(flat[-1:], size - flat.size)]).reshape(dims)
        return constant(full, dtype=dtype)

    def get_config(self):
        return {"value": self.value, "dtype": self.dtype.name, "verify_shape": self.verify_shape}


class random_normal_initializer(Initializer):  # noqa: N801 - TF's public name
    """Normal samples, ``mean + stddev * N(0, 1)``."""

    def __init__(self, mean=0.0, stddev=1.0, seed=None, dtype=_dtypes.float32):
        super().__init__(dtype)
        self.mean, self.stddev, self.seed = mean, stddev, seed

    def __call__(self, shape, dtype=None, partition_info=None):
        return random_ops.random_normal(shape, self.mean, self.stddev, self._dtype(dtype), seed=self.seed)


class truncated_normal_initializer(Initializer):  # noqa: N801 - TF's public name
    """Normal samples, redrawn beyond two standard deviations."""

    def __init__(self, mean=0.0, stddev=1.0, seed=None, dtype=_dtypes.float32):
        super().__init__(dtype)
        self.mean, self.stddev, self.seed = mean, stddev, seed

    def __call__(self, shape, dtype=None, partition_info=None):
        return random_ops.truncated_normal(shape, self.mean, self.stddev, self._dtype(dtype), seed=self.seed)


class random_uniform_initializer(Initializer):  # noqa: N801 - TF's public name
    """Uniform samples in ``[minval, maxval)`` (floats default to ``maxval=1``)."""

    def __init__(self, minval=0, maxval=None, seed=None, dtype=_dtypes.float32):
        super().__init__(dtype)
        self.minval, self.maxval, self.seed = minval, maxval, seed

    def __call__(self, shape, dtype=None, partition_info=None):
        return random_ops.random_uniform(shape, self.minval, self.maxval, self._dtype(dtype), seed=self.seed)


def _compute_fans(shape):
    """``(fan_in, fan_out)`` of a weight shape (TF's rule: conv kernels count the receptive field)."""
    if len(shape) < 1:
        return 1, 1
    if len(shape) == 1:
        return shape[0], shape[0]
    if len(shape) == 2:
        return shape[0], shape[1]
    receptive = math.prod(shape[:-2])
    return shape[-2] * receptive, shape[-1] * receptive


class variance_scaling_initializer(Initializer):  # noqa: N801 - TF's public name
    """Samples scaled to the layer's fan: ``stddev = sqrt(scale / n)``.

    Args:
        scale: positive float.
        mode: ``"fan_in"``, ``"fan_out"`` or ``"fan_avg"`` (what ``n`` is).
        distribution: ``"truncated_normal"`` (``"normal"`` is TF 1.x's alias),
            ``"untruncated_normal"`` or ``"uniform"``.

    Raises:
        ValueError: for a non-positive scale or an unknown mode or distribution.
    """

    _MODES = ("fan_in", "fan_out", "fan_avg")
    _DISTRIBUTIONS = ("normal", "uniform", "truncated_normal", "untruncated_normal")

    def __init__(
        self, scale=1.0, mode="fan_in", distribution="truncated_normal", seed=None, dtype=_dtypes.float32
    ):
        if scale <= 0.0:
            raise ValueError(f"`scale` must be a positive float, got {scale!r}")
        if mode not in self._MODES:
            raise ValueError(f"Invalid `mode` argument {mode!r}; expected one of {self._MODES}")
        distribution = distribution.lower()
        if distribution not in self._DISTRIBUTIONS:
            raise ValueError(
                f"Invalid `distribution` argument {distribution!r}; expected one of {self._DISTRIBUTIONS}"
            )
        super().__init__(dtype)
        self.scale, self.mode, self.distribution, self.seed = scale, mode, distribution, seed

    def __call__(self, shape, dtype=None, partition_info=None):
        dtype = self._dtype(dtype)
        full = [int(d) for d in (partition_info.full_shape if partition_info is not None else shape)]
        fan_in, fan_out = _compute_fans(full)
        n = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2.0}[self.mode]
        scale = self.scale / max(1.0, n)
        if self.distribution in ("normal", "truncated_normal"):
            stddev = math.sqrt(scale) / 0.87962566103423978  # the stddev of N(0,1) truncated to [-2, 2]
            return random_ops.truncated_normal(shape, 0.0, stddev, dtype, seed=self.seed)
        if self.distribution == "untruncated_normal":
            return random_ops.random_normal(shape, 0.0, math.sqrt(scale), dtype, seed=self.seed)
        limit = math.sqrt(3.0 * scale)
        return random_ops.random_uniform(shape, -limit, limit, dtype, seed=self.seed)

    def get_config(self):
        return {"scale": self.scale, "mode": self.mode, "distribution": self.distribution, "seed": self.seed}


class glorot_uniform_initializer(variance_scaling_initializer):  # noqa: N801 - TF's public name
    """Xavier uniform: ``U(-limit, limit)``, ``limit = sqrt(6 / (fan_in + fan_out))``."""

    def __init__(self, seed=None, dtype=_dtypes.float32):
        super().__init__(1.0, "fan_avg", "uniform", seed, dtype)


class glorot_normal_initializer(variance_scaling_initializer):  # noqa: N801 - TF's public name
    """Xavier normal: truncated normal with ``stddev = sqrt(2 / (fan_in + fan_out))``."""

    def __init__(self, seed=None, dtype=_dtypes.float32):
        super().__init__(1.0, "fan_avg", "truncated_normal", seed, dtype)


def he_normal(seed=None):
    """`tf.initializers.he_normal`: truncated normal, ``stddev = sqrt(2 / fan_in)``."""
    return variance_scaling_initializer(2.0, "fan_in", "truncated_normal", seed)


def he_uniform(seed=None):
    """`tf.initializers.he_uniform`: ``U(-limit, limit)``, ``limit = sqrt(6 / fan_in)``."""
    return variance_scaling_initializer(2.0, "fan_in", "uniform", seed)


def lecun_normal(seed=None):
    """`tf.initializers.lecun_normal`: truncated normal, ``stddev = sqrt(1 / fan_in)``."""
    return variance_scaling_initializer(1.0, "fan_in", "truncated_normal", seed)


def lecun_uniform(seed=None):
    """`tf.initializers.lecun_uniform`: ``U(-limit, limit)``, ``limit = sqrt(3 / fan_in)``."""
    return variance_scaling_initializer(1.0, "fan_in", "uniform", seed)


class uniform_unit_scaling_initializer(Initializer):  # noqa: N801 - TF's public name
    """``U(-m, m)``, ``m = factor * sqrt(3 / input_size)`` (the product of all dims but the last,
    the full variable's when partitioned), keeping a linear layer's output scale."""

    def __init__(self, factor=1.0, seed=None, dtype=_dtypes.float32):
        super().__init__(dtype)
        self.factor, self.seed = factor, seed

    def __call__(self, shape, dtype=None, partition_info=None):
        full = [int(d) for d in (partition_info.full_shape if partition_info is not None else shape)]
        input_size = max(1, math.prod(full[:-1]))
        limit = math.sqrt(3.0 / input_size) * self.factor
        return random_ops.random_uniform(shape, -limit, limit, self._dtype(dtype), seed=self.seed)

    def get_config(self):
        return {"factor": self.factor, "seed": self.seed, "dtype": self.dtype.name}


class orthogonal_initializer(Initializer):  # noqa: N801 - TF's public name
    """An orthogonal matrix (the shape flattened to ``[prod(shape[:-1]), shape[-1]]``) times
    `gain`: the Q of a normal matrix's QR, its signs fixed by R's diagonal, as TF's.

    Raises (at call):
        ValueError: a shape of rank below 2.
    """

    def __init__(self, gain=1.0, seed=None, dtype=_dtypes.float32):
        super().__init__(dtype)
        self.gain, self.seed = gain, seed

    def __call__(self, shape, dtype=None, partition_info=None):
        from nbdist.ops.linalg_decomp_ops import qr  # noqa: PLC0415
        from nbdist.ops.linalg_ops import matrix_diag_part, matrix_transpose  # noqa: PLC0415
        from nbdist.ops.reshape_ops import reshape  # noqa: PLC0415
        from nbdist.ops.unary_ops import sign  # noqa: PLC0415

        dims = [int(d) for d in shape]
        if len(dims) < 2:
            raise ValueError(f"The tensor to initialize must be at least two-dimensional, got shape {dims}")
        rows, cols = math.prod(dims[:-1]), dims[-1]
        dtype = self._dtype(dtype)
        a = random_ops.random_normal([max(rows, cols), min(rows, cols)], dtype=dtype, seed=self.seed)
        q, r = qr(a)
        q = q * sign(matrix_diag_part(r))
        if rows < cols:
            q = matrix_transpose(q)
        return self.gain * reshape(q, dims)

    def get_config(self):
        return {"gain": self.gain, "seed": self.seed, "dtype": self.dtype.name}


class identity_initializer(Initializer):  # noqa: N801 - TF's class (tf.initializers.identity)
    """`gain` times the identity matrix (2-D shapes only; a rectangle: ones on the diagonal)."""

    def __init__(self, gain=1.0, dtype=_dtypes.float32):
        super().__init__(dtype)
        self.gain = gain

    def __call__(self, shape, dtype=None, partition_info=None):
        dims = [int(d) for d in (partition_info.full_shape if partition_info is not None else shape)]
        if len(dims) < 2:  # TF's message
            raise ValueError(
                "The tensor to initialize, specified by argument `shape` must be at least "
                f"two-dimensional. Received shape={dims}"
            )
        if len(dims) != 2:
            raise ValueError(f"Identity matrix initializer can only be used for 2D matrices, got {dims}")
        dtype = self._dtype(dtype)
        return constant(self.gain * np.eye(*dims), dtype=dtype)

    def get_config(self):
        return {"gain": self.gain, "dtype": self.dtype.name}


def tables_initializer(name="init_all_tables"):
    """`tf.tables_initializer`: one op running the graph's table initializers
    (`GraphKeys.TABLE_INITIALIZERS`), a no-op when there are none."""
    from nbdist.graph.graph import get_default_graph  # noqa: PLC0415
    from nbdist.ops.control_flow_ops import group, no_op  # noqa: PLC0415

    ops = get_default_graph().get_collection("table_initializer")
    return group(*ops, name=name) if ops else no_op(name=name)


def initialize_all_tables(name="init_all_tables"):
    """`tf.initialize_all_tables` (TF's deprecated spelling of `tables_initializer`)."""
    return tables_initializer(name=name)
