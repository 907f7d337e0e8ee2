"""How a variable is made: TF's `VariableSynchronization` / `VariableAggregation` and the
variable creators of `tf.variable_creator_scope`.

`tf.Variable` (and so `tf.get_variable`, which makes one) goes through the creators in scope,
innermost first, as TF's ``VariableMetaclass``: each is ``creator(next_creator, **kwargs)``
and may change the keyword arguments, call `next_creator`, or return a variable of its own.
The last `next_creator` builds the variable. The creators are the graph's (as TF keeps them).

Synchronization and aggregation are what a distribution strategy reads; nbdist's variables
record them (``v.synchronization``, ``v.aggregation``) and, as TF, a variable synchronized
``ON_READ`` is not trainable unless `trainable` says so.
"""

import contextlib
import enum
import inspect

from nbdist.graph.graph import get_default_graph

__all__ = ["VariableAggregation", "VariableSynchronization", "variable_creator_scope"]

CREATORS_KEY = ("__variable_creators",)  # the graph's creator stack (a collection nobody exports)
# tf.Variable arguments TF hands every creator that nbdist's Variable does not take: a creator
# may read them; the variable can only be built while they are unset.
_TF_ONLY_ARGS = (
    "variable_def",
    "import_scope",
    "constraint",
    "shape",
    "experimental_enable_variable_lifting",
)


class VariableSynchronization(enum.Enum):
    """When a distributed variable's copies are synchronized (TF's enum, same values)."""

    AUTO = 0
    NONE = 1
    ON_WRITE = 2
    ON_READ = 3


class VariableAggregation(enum.Enum):
    """How a distributed variable's updates are combined (TF 1.x's enum, same values)."""

    NONE = 0
    SUM = 1
    MEAN = 2
    ONLY_FIRST_REPLICA = 3
    ONLY_FIRST_TOWER = 3  # TF 1.x's older name (an alias)


def validate_synchronization_aggregation_trainable(synchronization, aggregation, trainable, name):
    """TF's defaults and checks: ``(synchronization, aggregation, trainable)`` as enums and a bool.

    Raises:
        ValueError: a value that names no mode (TF's message).
    """
    if aggregation is None:
        aggregation = VariableAggregation.NONE
    elif not isinstance(aggregation, VariableAggregation):
        try:
            aggregation = VariableAggregation(aggregation)
        except ValueError:
            raise ValueError(
                f"Invalid variable aggregation mode: {aggregation} for variable: {name}"
            ) from None
    if synchronization is None:
        synchronization = VariableSynchronization.AUTO
    else:
        try:
            synchronization = VariableSynchronization(synchronization)
        except ValueError:
            raise ValueError(
                f"Invalid variable synchronization mode: {synchronization} for variable: {name}"
            ) from None
    if trainable is None:
        trainable = synchronization != VariableSynchronization.ON_READ
    return synchronization, aggregation, trainable


@contextlib.contextmanager
def variable_creator_scope(variable_creator):
    """`tf.variable_creator_scope`: `variable_creator` sees every variable made inside.

    ``variable_creator(next_creator, **kwargs)`` gets TF's keyword arguments of `tf.Variable`
    (``initial_value``, ``trainable``, ``collections``, ``validate_shape``, ``caching_device``,
    ``name``, ``variable_def``, ``dtype``, ``expected_shape``, ``import_scope``,
    ``constraint``, ``use_resource``, ``synchronization``, ``aggregation``, ``shape``, ...)
    and returns a variable, usually ``next_creator(**kwargs)``. Scopes nest: the innermost
    creator runs first.
    """
    stack = get_default_graph().get_collection_ref(CREATORS_KEY)
    stack.append(variable_creator)
    try:
        yield
    finally:
        stack.remove(variable_creator)


class VariableMetaclass(type):
    """`tf.Variable(...)` through the creators in scope (TF's ``VariableMetaclass``)."""

    def __call__(cls, *args, **kwargs):
        creators = list(get_default_graph().get_collection(CREATORS_KEY))
        if not creators:
            return super().__call__(*args, **kwargs)
        bound = inspect.signature(cls.__init__).bind(None, *args, **kwargs)
        bound.apply_defaults()
        arguments = dict(bound.arguments)
        arguments.pop(next(iter(arguments)))  # self
        arguments.update(dict.fromkeys(_TF_ONLY_ARGS))

        def build(**kw):
            given = [k for k in _TF_ONLY_ARGS if kw.pop(k, None) is not None]
            if given:
                raise ValueError(
                    f"tf.Variable: {', '.join(given)} cannot be set in nbdist (its variables take their "
                    "shape from the initial value and have no constraint or VariableDef); leave them None "
                    "in the variable creator"
                )
            return super(VariableMetaclass, cls).__call__(**kw)

        getter = build
        for creator in creators:
            getter = _chained(creator, getter)
        return getter(**arguments)


def _chained(creator, next_creator):
    return lambda **kwargs: creator(next_creator, **kwargs)
