"""Variables: `tf.Variable` and the ops that read and write them.

A variable is a `VariableV2` node; its storage is a `VariableResource` in the task's
resource manager (``ctx.resources``), so it outlives steps and sessions. Writers
(`Assign`, `AssignAdd`, `AssignSub`, optimizer `Apply*` ops) take the variable as a
*ref input*: they get the resource itself, not a value, and must be placed with it.
"""

import numpy as np

from nbdist import errors
from nbdist.graph import dtypes as _dtypes
from nbdist.graph.default_session import get_default_session
from nbdist.graph.graph import GraphKeys, Tensor, get_default_graph
from nbdist.graph.tensor_shape import TensorShape
from nbdist.ops import math_ops, registry
from nbdist.ops.constant_op import convert_to_tensor, register_tensor_conversion_function
from nbdist.ops.control_flow_ops import group
from nbdist.ops.variable_creation import (
    VariableAggregation,
    VariableMetaclass,
    VariableSynchronization,
    validate_synchronization_aggregation_trainable,
)

# -- VariableV2: reading ---------------------------------------------------------------------
registry.declare("VariableV2", creates="variable", stateful=True)
registry.shape("VariableV2")(lambda inputs, attrs: [(attrs["dtype"], attrs["shape"])])
registry.no_gradient("VariableV2")  # gradients stop at variables; optimizers apply them


@registry.kernel("VariableV2")
def _variable_kernel(ctx, node):
    return ctx.resources.variable(node).read()


# _ReadVariableNow: the variable's value when this op runs (a ref input), not when the step
# started. `VariableV2`'s own output is read as soon as a step begins; an op that must see the
# effect of an update in the same step (an average applied after the training op) reads this way.
registry.declare("_ReadVariableNow", ref_inputs=(0,), stateful=True)
registry.shape("_ReadVariableNow")(lambda inputs, attrs: [(inputs[0].dtype, inputs[0].shape)])
registry.kernel("_ReadVariableNow")(lambda ctx, node, ref: ref.read())
registry.no_gradient("_ReadVariableNow")


def read_variable_now(variable, name="read_now"):
    """The value of `variable` when the returned tensor is computed (after the control
    dependencies in effect), colocated with the variable. nbdist's, for copy-on-write reads."""
    ref = _ref_tensor(variable)
    with ref.graph.colocate_with(ref.op):
        return registry.make_op("_ReadVariableNow", [ref], name=name).outputs[0]


registry.declare("IsVariableInitialized", ref_inputs=(0,), stateful=True)
registry.shape("IsVariableInitialized")(lambda inputs, attrs: [(_dtypes.bool, TensorShape(()))])
registry.kernel("IsVariableInitialized")(lambda ctx, node, ref: np.bool_(ref.initialized))
registry.no_gradient("IsVariableInitialized")


# -- Assign family: writing ----------------------------------------------------------------------
def _assign_shape(inputs, attrs):
    return [(inputs[0].dtype, inputs[0].shape)]


def _check_value(ref, value, node):
    value = np.asarray(value)
    expected = node.output[0][1] if node.output else None
    checked = expected is not None and node.attr.get("validate_shape") is not False
    if checked and expected.ndims is not None and not expected.is_compatible_with(value.shape):
        raise errors.InvalidArgumentError(
            node.name,
            None,
            f"Assign to {ref.name}: value of shape {value.shape} does not match the "
            f"variable's shape {expected}",
        )
    return value


for _t in ("Assign", "AssignAdd", "AssignSub"):
    registry.declare(_t, ref_inputs=(0,), stateful=True)
    registry.shape(_t)(_assign_shape)
    registry.no_gradient(_t)


@registry.kernel("Assign")
def _assign_kernel(ctx, node, ref, value):
    value = _check_value(ref, value, node)
    dtype = node.output[0][0].np
    with ref.lock:
        ref.value = np.array(value, dtype=dtype, copy=True)
        return ref.value


def _update_kernel(fn):
    # A new array is swapped in under the lock; arrays handed out earlier (a fetched value,
    # a tensor queued on the wire, another step's read) never change underneath their holder.
    def kernel(ctx, node, ref, value):
        with ref.lock:
            current = ref.read()
            ref.value = fn(current, value).astype(current.dtype, copy=False)
            return ref.value

    return kernel


registry.kernel("AssignAdd")(_update_kernel(np.add))
registry.kernel("AssignSub")(_update_kernel(np.subtract))

registry.declare("CountUpTo", ref_inputs=(0,), stateful=True)
registry.shape("CountUpTo")(lambda inputs, attrs: [(inputs[0].dtype, TensorShape(()))])
registry.no_gradient("CountUpTo")


@registry.kernel("CountUpTo")
def _count_up_to_kernel(ctx, node, ref):
    # TF's rule: the value before the increment; OutOfRangeError once it reached the limit.
    with ref.lock:
        current = ref.read()
        if current >= node.attr["limit"]:
            raise errors.OutOfRangeError(node.name, None, f"Reached limit of {node.attr['limit']}")
        ref.value = np.array(current + 1, dtype=current.dtype)
        return np.array(current, copy=True)


# -- Scatter family: writing some rows -------------------------------------------------------------
def _scatter_shape(inputs, attrs):
    ref, indices, updates = inputs
    if ref.shape.ndims is not None and indices.shape.ndims is not None and updates.shape.ndims is not None:
        expected = indices.shape.concatenate(ref.shape[1:])
        if not updates.shape.is_compatible_with(expected):
            raise ValueError(
                f"scatter into {ref.op.name!r}: updates {updates.name} has shape {updates.shape}, "
                f"expected indices.shape + ref.shape[1:] = {expected}"
            )
    return [(ref.dtype, ref.shape)]


_SCATTER = {
    "ScatterAdd": np.add.at,
    "ScatterSub": np.subtract.at,
    "ScatterUpdate": lambda rows, idx, upd: rows.__setitem__(idx, upd),
}


def _scatter_kernel(update):
    def kernel(ctx, node, ref, indices, updates):
        indices = np.asarray(indices)
        with ref.lock:
            current = ref.read()
            bad = (indices < 0) | (indices >= len(current))
            if np.any(bad):
                pos = tuple(int(i) for i in np.argwhere(bad)[0])
                raise errors.InvalidArgumentError(
                    node.name,
                    None,
                    f"{node.op} on {ref.name}: indices{list(pos)} = {int(indices[pos])} is not in "
                    f"[0, {len(current)})",
                )
            updates = np.asarray(updates, dtype=current.dtype)
            if updates.shape != indices.shape + current.shape[1:]:
                raise errors.InvalidArgumentError(
                    node.name,
                    None,
                    f"{node.op} on {ref.name}: updates of shape {list(updates.shape)} for indices of shape "
                    f"{list(indices.shape)} and a variable of shape {list(current.shape)}",
                )
            new = current.copy()  # copy-on-write, as every writer (see VariableResource.value)
            flat = indices.reshape(-1)
            update(new, flat, updates.reshape((len(flat), *current.shape[1:])))
            ref.value = new
            return new

    return kernel


for _t, _update in _SCATTER.items():
    registry.declare(_t, ref_inputs=(0,), stateful=True)
    registry.shape(_t)(_scatter_shape)
    registry.kernel(_t)(_scatter_kernel(_update))
    registry.no_gradient(_t)


def _scatter(op_type, ref, indices, updates, use_locking, name):
    ref_t = _ref_tensor(ref)
    with ref_t.graph.colocate_with(ref_t.op):
        indices = convert_to_tensor(indices, preferred_dtype=_dtypes.int32)
        if not indices.dtype.is_integer:
            raise TypeError(f"tf.{op_type}: indices must be int32 or int64, got {indices.dtype.name}")
        updates = convert_to_tensor(updates, dtype=ref_t.dtype)
        attrs = {"use_locking": bool(use_locking)}
        return registry.make_op(op_type, [ref_t, indices, updates], attrs, name=name).outputs[0]


def scatter_add(ref, indices, updates, use_locking=False, name=None):
    """`tf.scatter_add`: ``ref[indices[i]] += updates[i]`` (duplicate indices add up).

    Runs where `ref` lives (colocated): only `indices` and `updates` travel to it.
    Returns the variable's new value.
    """
    return _scatter("ScatterAdd", ref, indices, updates, use_locking, name)


def scatter_sub(ref, indices, updates, use_locking=False, name=None):
    """`tf.scatter_sub`: ``ref[indices[i]] -= updates[i]`` (duplicate indices add up)."""
    return _scatter("ScatterSub", ref, indices, updates, use_locking, name)


def scatter_update(ref, indices, updates, use_locking=True, name=None):
    """`tf.scatter_update`: ``ref[indices[i]] = updates[i]`` (with a duplicate index, the last wins)."""
    return _scatter("ScatterUpdate", ref, indices, updates, use_locking, name)


def _ref_op(op_type, ref, value, name, attrs=None):
    ref_t = _ref_tensor(ref)
    value = convert_to_tensor(value, dtype=ref_t.dtype)
    graph = ref_t.graph
    with graph.colocate_with(ref_t.op):
        return registry.make_op(op_type, [ref_t, value], attrs, name=name).outputs[0]


def _ref_tensor(ref):
    if isinstance(ref, Variable):
        return ref._variable
    if isinstance(ref, Tensor) and ref.op.type == "VariableV2":
        return ref
    raise TypeError(f"expected a tf.Variable, got {ref!r}")


def assign(ref, value, validate_shape=True, use_locking=None, name=None):
    return _ref_op("Assign", ref, value, name, {"validate_shape": bool(validate_shape)})


def assign_add(ref, value, use_locking=None, name=None):
    return _ref_op("AssignAdd", ref, value, name)


def count_up_to(ref, limit, name=None):
    """`tf.count_up_to`: increments a scalar integer variable; returns its value before.

    Raises (when run): `OutOfRangeError` once the variable has reached `limit`.
    """
    ref_t = _ref_tensor(ref)
    with ref_t.graph.colocate_with(ref_t.op):
        return registry.make_op("CountUpTo", [ref_t], {"limit": int(limit)}, name=name).outputs[0]


def assign_sub(ref, value, use_locking=None, name=None):
    return _ref_op("AssignSub", ref, value, name)


# -- tf.Variable -------------------------------------------------------------------------------------
class Variable(metaclass=VariableMetaclass):  # made through tf.variable_creator_scope's creators
    """`tf.Variable`: a named, mutable tensor held by the task it is placed on.

    Args:
        initial_value: a Tensor or value (or a callable returning one).
        trainable: add it to `TRAINABLE_VARIABLES` (optimizers update those); default True,
            False when `synchronization` is ``ON_READ`` (TF's).
        synchronization, aggregation: a `tf.VariableSynchronization` / `tf.VariableAggregation`
            (or its value), recorded for distribution strategies as TF does.
        collections: collections to add it to (default `[GLOBAL_VARIABLES]`).
        name: op name (default ``"Variable"``, made unique).
        dtype: convert the initial value to this dtype.
        validate_shape: if False, the variable's shape is unknown.
    """

    def __init__(
        self,
        initial_value=None,
        trainable=None,
        collections=None,
        validate_shape=True,
        caching_device=None,
        name=None,
        dtype=None,
        expected_shape=None,
        use_resource=None,
        synchronization=VariableSynchronization.AUTO,
        aggregation=VariableAggregation.NONE,
    ):
        if initial_value is None:
            raise ValueError("tf.Variable needs an initial_value (a tensor, array or callable)")
        self._synchronization, self._aggregation, trainable = validate_synchronization_aggregation_trainable(
            synchronization, aggregation, trainable, name
        )
        graph = get_default_graph()
        with graph.name_scope(name or "Variable") as scope:
            op_name = scope[:-1]
            if callable(initial_value):
                # As TF: the initializer's ops are colocated with the variable that is about to
                # exist (so a device setter never sends them elsewhere) and named "Initializer".
                with (
                    graph.attr_scope({"_class": [f"loc:@{op_name}"]}),
                    graph.name_scope("Initializer"),
                    graph.device(None),
                ):
                    init = convert_to_tensor(initial_value(), dtype=dtype, name="initial_value")
            else:
                init = convert_to_tensor(initial_value, dtype=dtype, name="initial_value")
            shape = init.shape if validate_shape else TensorShape(None)
            if validate_shape and not shape.is_fully_defined():
                raise ValueError(
                    f"initial value of variable {op_name!r} must have a fully defined shape, "
                    f"got {shape}; pass validate_shape=False to allow it"
                )
            attrs = {
                "dtype": init.dtype,
                "shape": shape,
                "container": graph.current_container(),
                "shared_name": "",
            }
            op = graph.create_op("VariableV2", [], [(attrs["dtype"], shape)], name=scope, attrs=attrs)
            self._variable = op.outputs[0]
            with graph.colocate_with(op):
                self._initializer_op = assign(
                    self._variable, init, validate_shape=validate_shape, name="Assign"
                ).op
                self._snapshot = math_ops.identity(self._variable, name="read")
        self._initial_value = init
        self._trainable = trainable
        self._save_slice_info = None
        if collections is None:
            collections = [GraphKeys.GLOBAL_VARIABLES]
        if trainable and GraphKeys.TRAINABLE_VARIABLES not in collections:
            collections = [*collections, GraphKeys.TRAINABLE_VARIABLES]
        graph.add_to_collections(collections, self)

    # -- identity -------------------------------------------------------------------------------
    @property
    def name(self):
        return self._variable.name

    @property
    def op(self):
        return self._variable.op

    @property
    def graph(self):
        return self._variable.graph

    @property
    def device(self):
        return self._variable.device

    @property
    def dtype(self):
        return self._variable.dtype

    @property
    def shape(self):
        return self._variable.shape

    def get_shape(self):
        return self.shape

    @property
    def trainable(self):
        return self._trainable

    @property
    def synchronization(self):
        return self._synchronization

    @property
    def aggregation(self):
        return self._aggregation

    @property
    def initializer(self):
        return self._initializer_op

    @property
    def initial_value(self):
        return self._initial_value

    # -- reading and writing ----------------------------------------------------------------------
    def value(self):
        """The snapshot tensor (``<name>/read``) that reads use."""
        return self._snapshot

    def read_value(self):
        return math_ops.identity(self._variable, name="read")

    def assign(self, value, use_locking=False, name=None, read_value=True):
        return assign(self, value, name=name)

    def assign_add(self, delta, use_locking=False, name=None, read_value=True):
        return assign_add(self, delta, name=name)

    def assign_sub(self, delta, use_locking=False, name=None, read_value=True):
        return assign_sub(self, delta, name=name)

    def count_up_to(self, limit):
        return count_up_to(self, limit)

    def scatter_add(self, sparse_delta, use_locking=False, name=None):
        """Adds an `IndexedSlices` to the rows it names (``ScatterAdd``)."""
        return scatter_add(self, sparse_delta.indices, sparse_delta.values, use_locking, name)

    def scatter_sub(self, sparse_delta, use_locking=False, name=None):
        """Subtracts an `IndexedSlices` from the rows it names (``ScatterSub``)."""
        return scatter_sub(self, sparse_delta.indices, sparse_delta.values, use_locking, name)

    def scatter_update(self, sparse_delta, use_locking=False, name=None):
        """Assigns an `IndexedSlices`' values to the rows it names (``ScatterUpdate``)."""
        return scatter_update(self, sparse_delta.indices, sparse_delta.values, use_locking, name)

    def is_initialized(self):
        return is_variable_initialized(self)

    def eval(self, session=None):
        return self._snapshot.eval(session=session)

    def load(self, value, session=None):
        session = session or get_default_session()
        session.run(self._initializer_op, feed_dict={self._initializer_op.inputs[1]: value})

    def _as_graph_element(self):
        return self._variable

    def _ref(self):
        return self._variable

    # -- as data (TF's VariableDef, for meta graphs) ---------------------------------------------
    def to_proto(self, export_scope=None):
        """TF's ``VariableDef`` as a dict: the names of the variable's ops and tensors (with
        `export_scope` removed; None when the variable is outside it)."""
        scope = f"{export_scope.rstrip('/')}/" if export_scope else ""
        if scope and not self.name.startswith(scope):
            return None
        strip = lambda name: name[len(scope) :]  # noqa: E731
        return {
            "variable_name": strip(self._variable.name),
            "initial_value_name": strip(self._initial_value.name),
            "initializer_name": strip(self._initializer_op.name),
            "snapshot_name": strip(self._snapshot.name),
            "trainable": self._trainable,
        }

    @staticmethod
    def from_proto(variable_def, import_scope=None):
        """The `Variable` over the existing ops a ``VariableDef`` dict names (under `import_scope`)."""
        graph = get_default_graph()
        scope = f"{import_scope.rstrip('/')}/" if import_scope else ""
        var = Variable.__new__(Variable)
        var._variable = graph.as_graph_element(scope + variable_def["variable_name"])
        var._initializer_op = graph.as_graph_element(scope + variable_def["initializer_name"])
        var._snapshot = graph.as_graph_element(scope + variable_def["snapshot_name"])
        initial = variable_def.get("initial_value_name")
        var._initial_value = graph.as_graph_element(scope + initial) if initial else None
        var._trainable = bool(variable_def.get("trainable", True))
        var._save_slice_info = None
        return var

    def __repr__(self):
        return f"<tf.Variable '{self.name}' shape={self.shape} dtype={self.dtype.name}>"

    # Python operators delegate to the snapshot tensor.
    def __getattr__(self, name):
        if name.startswith("__") or name.startswith("_"):
            raise AttributeError(name)
        raise AttributeError(f"'Variable' object has no attribute {name!r}")


def _operator(name):
    def method(self, *args):
        return getattr(self._snapshot, name)(*args)

    return method


for _dunder in [
    "__add__",
    "__radd__",
    "__sub__",
    "__rsub__",
    "__mul__",
    "__rmul__",
    "__truediv__",
    "__rtruediv__",
    "__floordiv__",
    "__rfloordiv__",
    "__pow__",
    "__rpow__",
    "__matmul__",
    "__rmatmul__",
    "__neg__",
    "__abs__",
    "__lt__",
    "__le__",
    "__gt__",
    "__ge__",
    "__getitem__",
]:
    setattr(Variable, _dunder, _operator(_dunder))
Variable.__array_priority__ = 100

register_tensor_conversion_function(Variable, lambda v, dtype, name: v.value())


def is_variable_initialized(variable):
    ref = _ref_tensor(variable)
    with ref.graph.colocate_with(ref.op):
        return registry.make_op("IsVariableInitialized", [ref]).outputs[0]


# -- collections and initializers ------------------------------------------------------------------
def global_variables(scope=None):
    return get_default_graph().get_collection(GraphKeys.GLOBAL_VARIABLES, scope)


def local_variables(scope=None):
    return get_default_graph().get_collection(GraphKeys.LOCAL_VARIABLES, scope)


def trainable_variables(scope=None):
    return get_default_graph().get_collection(GraphKeys.TRAINABLE_VARIABLES, scope)


def moving_average_variables(scope=None):
    """The variables an `ExponentialMovingAverage` averages (TF's ``MOVING_AVERAGE_VARIABLES``)."""
    return get_default_graph().get_collection(GraphKeys.MOVING_AVERAGE_VARIABLES, scope)


def variables_initializer(var_list, name="init"):
    """One op that runs the initializers of `var_list`."""
    return group(*[v.initializer for v in var_list], name=name)


def global_variables_initializer():
    return variables_initializer(global_variables())


def local_variables_initializer():
    return variables_initializer(local_variables(), name="init_1")


initialize_all_variables = global_variables_initializer
initialize_local_variables = local_variables_initializer  # TF 1.x's deprecated names, still in tutorials
initialize_variables = variables_initializer


def report_uninitialized_variables(var_list=None, name="report_uninitialized_variables"):
    """A 1-D string tensor with the names of the variables not yet initialized."""
    from nbdist.ops import array_ops  # noqa: PLC0415

    var_list = global_variables() + local_variables() if var_list is None else list(var_list)
    graph = get_default_graph()
    with graph.name_scope(name):
        if not var_list:
            return array_ops.constant_strings([], name="NoVariables")
        flags = array_ops.stack([is_variable_initialized(v) for v in var_list])
        names = array_ops.constant_strings([v.op.name for v in var_list], name="VarNames")
        return registry.make_op("BooleanMaskNot", [names, flags], name="Report").outputs[0]


registry.shape("BooleanMaskNot")(lambda inputs, attrs: [(inputs[0].dtype, TensorShape([None]))])
registry.kernel("BooleanMaskNot")(lambda ctx, node, values, mask: values[~np.asarray(mask, bool)])
registry.no_gradient("BooleanMaskNot")
