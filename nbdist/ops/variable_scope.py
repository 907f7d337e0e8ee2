"""`tf.variable_scope` and `tf.get_variable`: variables by name, shared or created once.

A graph keeps one *variable store* (full name -> variable) and one *scope store* (the
current `VariableScope` and how often each scope name was opened). `get_variable(name)`
looks up ``scope/name``: with ``reuse=False`` it must not exist yet, with ``reuse=True`` it
must, with ``tf.AUTO_REUSE`` either. Variable names depend only on the variable scope, not
on name scopes (TF's rule), which is why re-entering a scope object shares its variables.

This module holds the scopes; creating or sharing the variable itself, whole or as the
shards of a ``partitioner``, is `nbdist.ops.variable_store`'s.
"""

import enum

from nbdist.graph import dtypes as _dtypes
from nbdist.graph.graph import GraphKeys, Tensor, get_default_graph
from nbdist.ops.partitioned_variables import (
    fixed_size_partitioner,
    min_max_variable_partitioner,
    variable_axis_size_partitioner,
)
from nbdist.ops.variable_creation import validate_synchronization_aggregation_trainable
from nbdist.ops.variable_store import VariableStore, true_getter

__all__ = [
    "AUTO_REUSE",
    "VariableScope",
    "fixed_size_partitioner",
    "get_local_variable",
    "get_variable",
    "get_variable_scope",
    "min_max_variable_partitioner",
    "variable_axis_size_partitioner",
    "variable_scope",
]


class _ReuseMode(enum.Enum):
    AUTO_REUSE = 1


AUTO_REUSE = _ReuseMode.AUTO_REUSE
_STORE_KEY = ("__variable_store",)
_SCOPE_KEY = ("__varscope",)


class _ScopeStore:
    def __init__(self):
        self.current = VariableScope(False)
        self.counts = {}  # scope name -> times opened

    def open(self, name):
        self.counts[name] = self.counts.get(name, 0) + 1

    def close_subscopes(self, name):
        for k in self.counts:
            if not name or k.startswith(name + "/"):
                self.counts[k] = 0


def _singleton(graph, key, factory):
    ref = graph.get_collection_ref(key)
    if not ref:
        ref.append(factory())
    return ref[0]


def _var_store(graph=None):
    return _singleton(graph or get_default_graph(), _STORE_KEY, VariableStore)


def variable_store(graph=None):
    """The `get_variable` store of `graph` (the default graph's): its variables by full name."""
    return _var_store(graph)


def _scope_store(graph=None):
    return _singleton(graph or get_default_graph(), _SCOPE_KEY, _ScopeStore)


class VariableScope:
    """A scope's defaults for `get_variable`: reuse, initializer, partitioner, dtype, ...

    Obtained from ``with tf.variable_scope(...) as scope`` or `tf.get_variable_scope()`;
    passing it back to `tf.variable_scope` re-enters it (same variable names, same name
    scope).
    """

    def __init__(
        self,
        reuse,
        name="",
        initializer=None,
        regularizer=None,
        caching_device=None,
        partitioner=None,
        custom_getter=None,
        name_scope="",
        dtype=_dtypes.float32,
        use_resource=None,
        constraint=None,
    ):
        self._reuse = reuse
        self._name = name
        self._initializer = initializer
        self._regularizer = regularizer
        self._caching_device = caching_device
        self._partitioner = partitioner
        self._custom_getter = custom_getter
        self._name_scope = name_scope
        self._dtype = dtype
        self._use_resource = use_resource
        self._constraint = constraint

    name = property(lambda self: self._name)
    original_name_scope = property(lambda self: self._name_scope)
    reuse = property(lambda self: self._reuse)
    initializer = property(lambda self: self._initializer)
    regularizer = property(lambda self: self._regularizer)
    caching_device = property(lambda self: self._caching_device)
    partitioner = property(lambda self: self._partitioner)
    custom_getter = property(lambda self: self._custom_getter)
    dtype = property(lambda self: self._dtype)
    use_resource = property(lambda self: self._use_resource)
    constraint = property(lambda self: self._constraint)

    def reuse_variables(self):
        """From now on `get_variable` in this scope returns existing variables."""
        self._reuse = True

    def set_initializer(self, initializer):
        self._initializer = initializer

    def set_regularizer(self, regularizer):
        self._regularizer = regularizer

    def set_partitioner(self, partitioner):
        self._partitioner = partitioner

    def set_dtype(self, dtype):
        self._dtype = dtype

    def set_caching_device(self, caching_device):
        self._caching_device = caching_device

    def set_custom_getter(self, custom_getter):
        self._custom_getter = custom_getter

    def global_variables(self):
        return get_default_graph().get_collection(GraphKeys.GLOBAL_VARIABLES, self._scope_regex())

    def trainable_variables(self):
        return get_default_graph().get_collection(GraphKeys.TRAINABLE_VARIABLES, self._scope_regex())

    def local_variables(self):
        return get_default_graph().get_collection(GraphKeys.LOCAL_VARIABLES, self._scope_regex())

    def _scope_regex(self):
        return self._name + "/" if self._name else None

    def get_variable(self, var_store, name, **kwargs):
        """`get_variable` under this scope (the scope's defaults fill what is not given)."""
        full_name = f"{self._name}/{name}" if self._name else name
        for field in ("initializer", "regularizer", "partitioner", "caching_device", "constraint"):
            if kwargs.get(field) is None:
                kwargs[field] = getattr(self, field)
        if kwargs.get("dtype") is None:
            kwargs["dtype"] = self._dtype
        reuse = self._reuse if kwargs.pop("reuse", None) is None else True
        # TF's defaults (trainable unless ON_READ), settled before a custom getter sees them.
        kwargs["synchronization"], kwargs["aggregation"], kwargs["trainable"] = (
            validate_synchronization_aggregation_trainable(
                kwargs.get("synchronization"), kwargs.get("aggregation"), kwargs.get("trainable"), full_name
            )
        )
        custom_getter = kwargs.pop("custom_getter", None)
        if self._custom_getter is not None:
            custom_getter = (
                self._custom_getter
                if custom_getter is None
                else _compose_getters(custom_getter, self._custom_getter)
            )
        graph = get_default_graph()
        with graph.name_scope(None):  # variable names follow the variable scope only (TF)
            if custom_getter is not None:
                return custom_getter(
                    lambda name, *a, **kw: true_getter(var_store, name, *a, **kw),
                    full_name,
                    reuse=reuse,
                    **kwargs,
                )
            return true_getter(var_store, full_name, reuse=reuse, **kwargs)

    def __repr__(self):
        return f"<VariableScope name={self._name!r} reuse={self._reuse}>"


def _compose_getters(outer, inner):
    def composed(getter, *args, **kwargs):
        return outer(lambda *a, **kw: inner(getter, *a, **kw), *args, **kwargs)

    return composed


def get_variable_scope():
    """The current `VariableScope` of the default graph."""
    return _scope_store().current


class variable_scope:  # noqa: N801 - TF's public name
    """`tf.variable_scope`: a variable scope (and a name scope of the same name).

    Args:
        name_or_scope: a name (nested under the current variable scope) or a
            `VariableScope` to re-enter.
        default_name: used, made unique (``dense``, ``dense_1``...), when
            `name_or_scope` is None.
        values: tensors the ops inside use (picks their graph).
        initializer, regularizer, partitioner, dtype, caching_device, custom_getter,
            constraint: defaults for `get_variable` inside (inherited by sub-scopes).
        reuse: ``True`` (share existing variables), ``tf.AUTO_REUSE`` (create or share),
            or None/False (inherit the enclosing scope's: reuse cannot be turned off in a
            sub-scope, as in TF 1.x).
        auxiliary_name_scope: also open a name scope (default True).

    Raises:
        TypeError: if neither `name_or_scope` nor `default_name` is given.
        ValueError: for ``reuse=True`` with only a `default_name`.
    """

    def __init__(
        self,
        name_or_scope,
        default_name=None,
        values=None,
        initializer=None,
        regularizer=None,
        caching_device=None,
        partitioner=None,
        custom_getter=None,
        reuse=None,
        dtype=None,
        use_resource=None,
        constraint=None,
        auxiliary_name_scope=True,
    ):
        if name_or_scope is None and default_name is None:
            raise TypeError("If default_name is None then name_or_scope is required")
        if not (name_or_scope is None or isinstance(name_or_scope, (str, VariableScope))):
            raise TypeError(
                f"VariableScope: name_or_scope must be a string or VariableScope, got {name_or_scope!r}"
            )
        if name_or_scope is None and reuse is True:
            raise ValueError("reuse=True cannot be used without a name_or_scope")
        self._name_or_scope = name_or_scope
        self._default_name = default_name
        self._values = values
        self._overrides = {
            "initializer": initializer,
            "regularizer": regularizer,
            "caching_device": caching_device,
            "partitioner": partitioner,
            "custom_getter": custom_getter,
            "dtype": dtype,
            "use_resource": use_resource,
            "constraint": constraint,
        }
        self._reuse = None if reuse is False else reuse
        self._auxiliary_name_scope = auxiliary_name_scope
        self._graph = None
        self._name_scope_cm = None
        self._old = None

    def __enter__(self):
        graph = get_default_graph()
        for v in self._values or ():
            if isinstance(v, Tensor):
                graph = v.graph
                break
        self._graph_cm = graph.as_default()
        self._graph_cm.__enter__()
        self._graph = graph
        store = _scope_store(graph)
        old = self._old = store.current
        nos = self._name_or_scope
        if isinstance(nos, VariableScope):
            new_name = nos.name
            name_scope = nos.original_name_scope
            base = nos
            reuse = nos.reuse if not self._reuse else self._reuse
        else:
            name_scope = nos
            if nos is None:
                # The name scope is the default name made unique by the graph, apart from the
                # variable scope's (TF's: a second template "dense" is dense_1/w in dense_2/).
                name_scope = self._default_name
                nos = _unique_scope_name(store, old, self._default_name)
            new_name = f"{old.name}/{nos}" if old.name else nos
            base = old
            reuse = self._reuse or old.reuse
            store.close_subscopes(new_name)
        if self._auxiliary_name_scope:
            # A re-entered scope opens a new name scope of its last component, made unique
            # (``a_1``, ``outer/a``); the scope keeps its original name scope (TF's).
            if isinstance(nos, VariableScope):
                if nos.name:
                    self._name_scope_cm = graph.name_scope(nos.name.split("/")[-1])
                    self._name_scope_cm.__enter__()
                opened = name_scope
            else:
                self._name_scope_cm = graph.name_scope(name_scope)
                opened = self._name_scope_cm.__enter__()
        elif isinstance(nos, VariableScope):
            opened = name_scope  # TF keeps a re-entered scope's name scope (tf.layers' ops use it)
        else:
            opened = graph.get_name_scope() + "/" if graph.get_name_scope() else ""
        fields = {f: getattr(base, f) for f in self._overrides}
        fields.update({k: v for k, v in self._overrides.items() if v is not None})
        scope = VariableScope(reuse, name=new_name, name_scope=opened, **fields)
        store.open(new_name)
        store.current = scope
        return scope

    def __exit__(self, *exc):
        _scope_store(self._graph).current = self._old
        if self._name_scope_cm is not None:
            self._name_scope_cm.__exit__(*exc)
        self._graph_cm.__exit__(*exc)
        return False


def _unique_scope_name(store, current, prefix):
    name = f"{current.name}/{prefix}" if current.name else prefix
    if store.counts.get(name, 0) == 0:
        return prefix
    idx = 1
    while store.counts.get(f"{name}_{idx}", 0) > 0:
        idx += 1
    return f"{prefix}_{idx}"


def get_variable(
    name,
    shape=None,
    dtype=None,
    initializer=None,
    regularizer=None,
    trainable=None,
    collections=None,
    caching_device=None,
    partitioner=None,
    validate_shape=True,
    use_resource=None,
    custom_getter=None,
    constraint=None,
    synchronization=None,
    aggregation=None,
):
    """`tf.get_variable`: the variable ``<scope>/name``, created or shared per the scope's reuse.

    Args:
        name: the name under the current variable scope.
        shape: the full shape (may be omitted when `initializer` is a tensor or array).
        dtype: default the scope's (float32).
        initializer: an initializer (``tf.zeros_initializer()``), a callable
            ``(shape, dtype, partition_info) -> Tensor``, or a tensor/array value. Default:
            the scope's, else Glorot uniform for floats and zeros for integers and bools.
        regularizer: ``variable -> Tensor``; its result joins ``REGULARIZATION_LOSSES``.
        trainable: join ``TRAINABLE_VARIABLES`` (default True).
        collections: default ``[GLOBAL_VARIABLES]``.
        partitioner: ``(shape=, dtype=) -> list of partitions per axis``; the result is a
            `PartitionedVariable` of shards ``name/part_i``.

    Raises:
        ValueError: when ``reuse`` is off and the variable exists (naming where it was
            defined), when ``reuse=True`` and it does not exist, or when the shape or
            dtype differs from the existing variable's.
    """
    return get_variable_scope().get_variable(
        _var_store(),
        name,
        shape=shape,
        dtype=dtype,
        initializer=initializer,
        regularizer=regularizer,
        trainable=trainable,
        collections=collections,
        caching_device=caching_device,
        partitioner=partitioner,
        validate_shape=validate_shape,
        custom_getter=custom_getter,
        constraint=constraint,
        synchronization=synchronization,
        aggregation=aggregation,
    )


def get_local_variable(name, shape=None, dtype=None, initializer=None, collections=None, **kwargs):
    """`tf.get_local_variable`: a non-trainable variable in ``LOCAL_VARIABLES``."""
    collections = [*(collections or []), GraphKeys.LOCAL_VARIABLES]
    return get_variable(name, shape, dtype, initializer, trainable=False, collections=collections, **kwargs)
