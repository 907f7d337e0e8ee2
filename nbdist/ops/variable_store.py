"""The variable store behind `tf.get_variable`: variables by full name, created or shared.

One `VariableStore` per graph (full name -> variable) is what a `VariableScope` looks names up
in. `true_getter` is the getter a scope calls (custom getters wrap it): with ``reuse=False`` the
variable must not exist yet, with ``reuse=True`` it must, with ``tf.AUTO_REUSE`` either; shapes
and dtypes of a shared variable must match. With a ``partitioner`` the variable is created as
shards ``name/part_0 ... part_k`` (one axis cut in near-equal slices) and returned as a
`PartitionedVariable`; each shard is its own ``VariableV2`` op, so `replica_device_setter`
spreads the shards over the ps tasks.
"""

import traceback

import numpy as np

from nbdist.graph import dtypes as _dtypes
from nbdist.graph.graph import GraphKeys, get_default_graph, is_user_code
from nbdist.graph.tensor_shape import TensorShape
from nbdist.ops import init_ops
from nbdist.ops.constant_op import convert_to_tensor
from nbdist.ops.partitioned_variables import PartitionedVariable, PartitionInfo
from nbdist.ops.state_ops import Variable
from nbdist.ops.variable_creation import validate_synchronization_aggregation_trainable


class VariableStore:
    """A graph's variables by full name (`tf.get_variable`'s), and where each was defined."""

    def __init__(self):
        self.vars = {}  # full name -> Variable
        self.partitioned = {}  # full name -> PartitionedVariable
        self.defined_at = {}  # full name -> the user's line that created it


def _defined_at():
    frames = [f for f in traceback.extract_stack() if is_user_code(f.filename)]
    return "".join(traceback.format_list(frames[-3:])) if frames else "  (unknown)\n"


def true_getter(
    var_store,
    name,
    shape=None,
    dtype=_dtypes.float32,
    initializer=None,
    regularizer=None,
    reuse=None,
    trainable=None,
    collections=None,
    caching_device=None,
    partitioner=None,
    validate_shape=True,
    constraint=None,
    synchronization=None,
    aggregation=None,
    **unused,
):
    """The variable `name` of `var_store`, created or shared per `reuse`: the getter that
    `VariableScope.get_variable` calls (a custom getter wraps it)."""
    dtype = _dtypes.as_dtype(dtype)
    shape = None if shape is None else TensorShape(shape)
    sync = validate_synchronization_aggregation_trainable(synchronization, aggregation, trainable, name)
    trainable = sync[2]
    if partitioner is not None:
        return _get_partitioned(
            var_store,
            name,
            shape,
            dtype,
            initializer,
            regularizer,
            reuse,
            trainable,
            collections,
            partitioner,
            validate_shape,
            sync[:2],
        )
    if name in var_store.partitioned:
        raise ValueError(
            f"Trying to get variable {name!r} without a partitioner, but a partitioned variable of that "
            "name exists: pass the same partitioner (or a scope with it) to get_variable"
        )
    return _get_single(
        var_store,
        name,
        shape,
        dtype,
        initializer,
        regularizer,
        reuse,
        trainable,
        collections,
        validate_shape,
        sync=sync[:2],
    )


def _check_reuse(var_store, name, reuse, existing):
    if existing is not None and not reuse:
        raise ValueError(
            f"Variable {name} already exists, disallowed. Did you mean to set reuse=True or "
            f"reuse=tf.AUTO_REUSE in VarScope? Originally defined at:\n{var_store.defined_at.get(name, '')}"
            "(In a notebook, re-running a model cell adds to the same graph: call "
            "tf.reset_default_graph() at the top of the cell, or build the model inside "
            "tf.variable_scope(..., reuse=tf.AUTO_REUSE).)"
        )
    if existing is None and reuse is True:
        raise ValueError(
            f"Variable {name} does not exist, or was not created with tf.get_variable(). "
            "Did you mean to set reuse=tf.AUTO_REUSE in VarScope?"
        )


def _get_single(
    var_store,
    name,
    shape,
    dtype,
    initializer,
    regularizer,
    reuse,
    trainable,
    collections,
    validate_shape,
    partition_info=None,
    sync=(None, None),
):
    existing = var_store.vars.get(name)
    _check_reuse(var_store, name, reuse, existing)
    if existing is not None:
        if shape is not None and not shape.is_compatible_with(existing.shape):
            raise ValueError(
                f"Trying to share variable {name}, but specified shape {shape} "
                f"and found shape {existing.shape}."
            )
        if dtype != existing.dtype:
            raise ValueError(
                f"Trying to share variable {name}, but specified dtype {dtype.name} and found dtype "
                f"{existing.dtype.name}."
            )
        return existing
    initial_value, variable_dtype = _initial_value(name, shape, dtype, initializer, partition_info)
    v = Variable(
        initial_value=initial_value,
        name=name,
        trainable=True if trainable is None else trainable,
        collections=collections,
        dtype=variable_dtype,
        validate_shape=validate_shape,
        synchronization=sync[0],
        aggregation=sync[1],
    )
    var_store.vars[name] = v
    var_store.defined_at[name] = _defined_at()
    if regularizer is not None:
        with get_default_graph().name_scope(f"{name}/Regularizer/"):
            loss = regularizer(v)
        if loss is not None:
            get_default_graph().add_to_collection(GraphKeys.REGULARIZATION_LOSSES, loss)
    return v


def _initial_value(name, shape, dtype, initializer, partition_info):
    if initializer is None:
        if dtype.is_floating:
            initializer = init_ops.glorot_uniform_initializer()
        elif dtype.is_integer or dtype == _dtypes.bool:
            initializer = init_ops.zeros_initializer()
        else:
            raise ValueError(f"An initializer for variable {name} of type {dtype.name} is required")
    if isinstance(initializer, type):
        initializer = initializer()
    if callable(initializer):
        if shape is None or not shape.is_fully_defined():
            raise ValueError(
                f"Shape of a new variable ({name}) must be fully defined, but instead was {shape}."
            )
        dims = shape.as_list()
        return (lambda: initializer(dims, dtype=dtype, partition_info=partition_info)), dtype
    # A value: its shape is the variable's (TF: do not pass a different shape with it).
    value = convert_to_tensor(initializer, dtype=dtype)
    if shape is not None and not shape.is_compatible_with(value.shape):
        raise ValueError(
            f"initializer of variable {name} has shape {value.shape}, but shape {shape} was given; "
            "if initializer is a constant, do not specify shape"
        )
    return value, None


def _get_partitioned(
    var_store,
    name,
    shape,
    dtype,
    initializer,
    regularizer,
    reuse,
    trainable,
    collections,
    partitioner,
    validate_shape,
    sync=(None, None),
):
    if name in var_store.vars:
        raise ValueError(
            f"A partitioner was provided, but an unpartitioned version of the variable was found: {name}. "
            "Perhaps a variable of the same name was already created without partitioning?"
        )
    if shape is None or not shape.is_fully_defined():
        if initializer is not None and not callable(initializer):
            shape = TensorShape(np.shape(initializer))
        else:
            raise ValueError(
                f"Shape of a new partitioned variable ({name}) must be fully defined, but was {shape}."
            )
    dims = shape.as_list()
    partitions = list(partitioner(shape=shape, dtype=dtype))
    if len(partitions) != len(dims) or any(not isinstance(p, (int, np.integer)) or p < 1 for p in partitions):
        raise ValueError(
            f"Partitioner for {name} returned {partitions!r}: expected one positive int per axis of {dims}"
        )
    if sum(p > 1 for p in partitions) > 1:
        raise ValueError(f"Can only slice a variable along one dimension: {name} partitions {partitions}")
    existing = var_store.partitioned.get(name)
    _check_reuse(var_store, name, reuse, existing)
    if existing is not None:
        if existing.get_shape() != shape:
            raise ValueError(
                f"Trying to reuse partitioned variable {name}, but specified shape {shape} and found shape "
                f"{existing.get_shape()}."
            )
        if existing.partitions != partitions:
            raise ValueError(
                f"Trying to reuse partitioned variable {name}, but specified partitions {partitions} and "
                f"found partitions {existing.partitions}."
            )
        return existing
    axis = next((i for i, p in enumerate(partitions) if p > 1), 0)
    n = partitions[axis]
    base, extra = divmod(dims[axis], n)
    shards = []
    for i in range(n):
        offset = [0] * len(dims)
        offset[axis] = i * base + min(i, extra)
        part_dims = list(dims)
        part_dims[axis] = base + (1 if i < extra else 0)
        part_init = initializer
        if initializer is not None and not callable(initializer):
            index = tuple(slice(o, o + s) for o, s in zip(offset, part_dims))
            part_init = np.asarray(initializer)[index]
        shards.append(
            _get_single(
                var_store,
                f"{name}/part_{i}",
                TensorShape(part_dims),
                dtype,
                part_init,
                regularizer,
                reuse,
                trainable,
                collections,
                validate_shape,
                PartitionInfo(dims, offset),
                sync,
            )
        )
    pv = PartitionedVariable(name, dims, dtype, shards, partitions)
    var_store.partitioned[name] = pv
    return pv
