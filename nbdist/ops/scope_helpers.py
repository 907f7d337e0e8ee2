"""TF 1.x's smaller program scaffolding around scopes, collections and variables.

`tf.init_scope` (lifts ops out of control dependencies and function graphs), the deprecated
argument orders `tf.op_scope` / `tf.variable_op_scope`, `tf.all_variables`,
`tf.model_variables`, `tf.add_to_collections`, `tf.no_regularizer` and the legacy
`tf.create_partitioned_variables`.
"""

import contextlib
import logging

from nbdist.graph import dtypes as _dtypes
from nbdist.graph.func_graph import FuncGraph
from nbdist.graph.graph import GraphKeys, get_default_graph, name_scope
from nbdist.ops.state_ops import global_variables
from nbdist.ops.variable_scope import get_variable, get_variable_scope, variable_scope

__all__ = [
    "add_to_collections",
    "all_variables",
    "create_partitioned_variables",
    "init_scope",
    "model_variables",
    "no_regularizer",
    "op_scope",
    "variable_op_scope",
]

_log = logging.getLogger("nbdist")


@contextlib.contextmanager
def init_scope():
    """`tf.init_scope`: ops made inside have no control dependencies, belong to no `tf.cond`
    branch and live in the outermost graph (not a `tf.while_loop` body's), under the same name
    scope (TF's)."""
    graph = get_default_graph()
    scope = graph.get_name_scope()
    outer = graph
    while isinstance(outer, FuncGraph):
        outer = outer.outer
    with outer.as_default(), outer.name_scope(scope + "/" if scope else ""), outer.control_dependencies(None):
        context = outer.get_control_flow_context()
        outer.set_control_flow_context(None)
        try:
            yield
        finally:
            outer.set_control_flow_context(context)


@contextlib.contextmanager
def op_scope(values, name, default_name=None):
    """Deprecated: `tf.name_scope(name, default_name, values)` with the arguments reordered."""
    _log.warning(
        "tf.op_scope(values, name, default_name) is deprecated, use tf.name_scope(name, default_name, values)"
    )
    with name_scope(name, default_name=default_name, values=values) as scope:
        yield scope


@contextlib.contextmanager
def variable_op_scope(
    values,
    name_or_scope,
    default_name=None,
    initializer=None,
    regularizer=None,
    caching_device=None,
    partitioner=None,
    custom_getter=None,
    reuse=None,
    dtype=None,
    use_resource=None,
    constraint=None,
):
    """Deprecated: `tf.variable_scope(name_or_scope, default_name, values, ...)` reordered."""
    _log.warning(
        "tf.variable_op_scope(values, name, default_name) is deprecated, use "
        "tf.variable_scope(name, default_name, values)"
    )
    with variable_scope(
        name_or_scope,
        default_name=default_name,
        values=values,
        initializer=initializer,
        regularizer=regularizer,
        caching_device=caching_device,
        partitioner=partitioner,
        custom_getter=custom_getter,
        reuse=reuse,
        dtype=dtype,
        use_resource=use_resource,
        constraint=constraint,
    ) as scope:
        yield scope


def all_variables():
    """Deprecated name of `tf.global_variables()`."""
    return global_variables()


def model_variables(scope=None):
    """The variables of ``GraphKeys.MODEL_VARIABLES`` (those whose name matches `scope`)."""
    return get_default_graph().get_collection(GraphKeys.MODEL_VARIABLES, scope)


def add_to_collections(names, value):
    """Adds `value` to each collection of `names` (a name or a list of names)."""
    get_default_graph().add_to_collections(names, value)


def no_regularizer(_):
    """The regularizer that regularizes nothing: a variable scope's default turned off."""
    return None


def create_partitioned_variables(
    shape,
    slicing,
    initializer,
    dtype=_dtypes.float32,
    trainable=True,
    collections=None,
    name=None,
    reuse=None,
):
    """Legacy: one variable of `shape` made as shards cut as `slicing` says.

    Args:
        shape: the full variable's shape.
        slicing: the number of shards per axis (at most one of them above 1).
        initializer: an initializer (or a value) for the full variable.
        name: the variable's name (default ``PartitionedVariable``, made unique); the shards
            are ``name/part_0``, ``name/part_1``, ...
        reuse: True to share the shards made earlier under `name`.

    Returns:
        The list of shard variables.

    Raises:
        ValueError: `shape` and `slicing` of different lengths, or a scalar `shape`.
    """
    if len(shape) != len(slicing):
        raise ValueError(
            "The 'shape' and 'slicing' of a partitioned Variable "
            f"must have the length: shape: {shape}, slicing: {slicing}"
        )
    if len(shape) < 1:
        raise ValueError(f"A partitioned Variable must have rank at least 1: shape: {shape}")
    outer = get_variable_scope()
    with variable_scope(name, "PartitionedVariable", reuse=reuse) as scope:
        # TF names the variable after the scope itself: get it from the enclosing scope.
        return _get_in(outer, scope, shape, slicing, initializer, dtype, trainable, collections)


def _get_in(outer, scope, shape, slicing, initializer, dtype, trainable, collections):
    with variable_scope(outer, reuse=scope.reuse or None, auxiliary_name_scope=False):
        partitioned = get_variable(
            scope.name.split("/")[-1],
            shape=shape,
            dtype=dtype,
            initializer=initializer,
            trainable=trainable,
            collections=collections,
            partitioner=lambda **unused: list(slicing),
        )
    return list(partitioned)
