"""`tf.train.Optimizer`: gradients as graph ops, updates as `Apply*` ops on the variables' tasks.

`minimize(loss)` is `compute_gradients` (adds the backward pass to the graph) then
`apply_gradients` (creates the slot variables, then one update op per variable,
colocated with it, and an op that groups them). With a ``global_step`` the returned
op is the step's increment, which runs after every update (a control dependency).

A gradient that is an `IndexedSlices` (from `tf.gather` / `tf.nn.embedding_lookup`) is
applied sparsely, as TF does: `_apply_sparse_duplicate_indices` sums repeated rows
(``Unique`` + ``UnsortedSegmentSum``) and `_apply_sparse` updates only those rows
(``ScatterSub``, ``SparseApplyMomentum``, ...). Those ops are colocated with the variable
too, so only the touched rows' indices and values cross the wire to the ps.

Slot variables (``w/Momentum``, ``w/Adam``, ...) and other optimizer state are
created with ``colocate_with(var)``, so the distributed runtime keeps a variable,
its slots and its update op on one task: the gradient crosses the wire once and the
update runs where the state lives.
"""

import abc
import numbers

from nbdist.graph import dtypes as _dtypes
from nbdist.graph.graph import GraphKeys, Tensor, get_default_graph
from nbdist.ops import array_ops, control_flow_ops, index_ops, math_ops, reduction_ops, state_ops
from nbdist.ops.constant_op import constant, convert_to_tensor
from nbdist.ops.gradients import gradients
from nbdist.ops.indexed_slices import IndexedSlices
from nbdist.train import staleness

_VALID_DTYPES = (_dtypes.float16, _dtypes.float32, _dtypes.float64)


def _var_key(var):
    return (var.op.graph, var.op.name)


def create_zeros_slot(primary, name):
    """A non-trainable variable of zeros shaped like `primary`, named ``<primary>/<name>``.

    It is created at the root name scope, outside any control dependencies, and
    colocated with `primary` (TF's ``slot_creator.create_zeros_slot``). A second slot
    with the same `name` gets ``_1`` appended (``w/Adam``, ``w/Adam_1``).
    """
    graph = primary.graph
    validate = primary.shape.is_fully_defined()

    def zeros():
        # Without a static shape, zeros shaped like the primary's initial value when it runs.
        shape = primary.shape if validate else array_ops.shape(primary.initial_value)
        return array_ops.zeros(shape, primary.dtype)

    with graph.name_scope(None), graph.control_dependencies(None), graph.colocate_with(primary):
        return state_ops.Variable(
            zeros,
            trainable=False,
            name=f"{primary.op.name}/{name}",
            validate_shape=validate,
        )


class Optimizer(abc.ABC):
    """Base class of the optimizers (TF 1.x's `tf.train.Optimizer`).

    Subclasses define `_apply_dense(grad, var)`, `_apply_sparse(grad, var)` (an
    `IndexedSlices` without repeated indices) and, as needed, `_create_slots(var_list)`,
    `_prepare()` and `_finish(update_ops, name_scope)`.

    Args:
        use_locking: passed to the update ops (nbdist always locks; see `training_ops`).
        name: the name scope of the update ops (e.g. ``"GradientDescent"``).

    Raises:
        ValueError: if `name` is empty.
    """

    GATE_NONE = 0
    GATE_OP = 1
    GATE_GRAPH = 2

    def __init__(self, use_locking, name):
        if not name:
            raise ValueError("Must specify the optimizer name")
        self._use_locking = use_locking
        self._name = name
        self._hyper = {}  # hyper-parameter name -> value as given (number, tensor or callable)
        self._prepared = {}  # set by _prepare(): name -> number or Tensor
        self._slots = {}  # slot name -> {var key: slot Variable}
        self._non_slot_dict = {}  # (name, graph) -> Variable

    def get_name(self):
        return self._name

    # -- the public API ------------------------------------------------------------------------
    def minimize(
        self,
        loss,
        global_step=None,
        var_list=None,
        gate_gradients=GATE_OP,
        aggregation_method=None,
        colocate_gradients_with_ops=False,
        name=None,
        grad_loss=None,
    ):
        """Adds ops that update `var_list` to reduce `loss`: `compute_gradients` + `apply_gradients`.

        Args:
            loss: a scalar float Tensor.
            global_step: optional integer variable incremented once the updates are applied.
            var_list: variables to update (default: the graph's trainable variables).
            colocate_gradients_with_ops: place each gradient op with its forward op.
            name: name of the returned op (default: the optimizer's name).

        Returns:
            The training op.

        Raises:
            ValueError: if no variable of `var_list` gets a gradient from `loss`.
        """
        grads_and_vars = self.compute_gradients(
            loss,
            var_list=var_list,
            gate_gradients=gate_gradients,
            aggregation_method=aggregation_method,
            colocate_gradients_with_ops=colocate_gradients_with_ops,
            grad_loss=grad_loss,
        )
        if not [v for g, v in grads_and_vars if g is not None]:
            raise ValueError(
                "No gradients provided for any variable, check your graph for ops that do not "
                f"support gradients, between variables {[str(v) for _, v in grads_and_vars]} "
                f"and loss {loss}."
            )
        return self.apply_gradients(grads_and_vars, global_step=global_step, name=name)

    def compute_gradients(
        self,
        loss,
        var_list=None,
        gate_gradients=GATE_OP,
        aggregation_method=None,
        colocate_gradients_with_ops=False,
        grad_loss=None,
    ):
        """Adds the gradient ops of `loss` with respect to each variable of `var_list`.

        Args:
            loss: a scalar float Tensor.
            var_list: variables (default: the graph's trainable variables).
            gate_gradients: `GATE_NONE`, `GATE_OP` or `GATE_GRAPH` (all gradients are
                computed before any is used).
            colocate_gradients_with_ops: place each gradient op with its forward op.
            grad_loss: optional gradient to start from instead of ones.

        Returns:
            A list of ``(gradient, variable)``; the gradient is None when the variable
            does not affect `loss`, an `IndexedSlices` when `loss` reads rows of it (`tf.gather`).

        Raises:
            ValueError: if there is no variable to optimize, or `loss` is not a float tensor.
            TypeError: if `var_list` holds something that is not a `tf.Variable`.
        """
        if gate_gradients not in (self.GATE_NONE, self.GATE_OP, self.GATE_GRAPH):
            raise ValueError(
                f"gate_gradients must be GATE_NONE, GATE_OP or GATE_GRAPH, got {gate_gradients!r}"
            )
        loss = convert_to_tensor(loss)
        _assert_valid_dtypes([loss])
        if var_list is None:
            var_list = state_ops.trainable_variables()
        else:
            var_list = list(var_list)
        if not var_list:
            raise ValueError("No variables to optimize.")
        for v in var_list:
            if not isinstance(v, state_ops.Variable):
                raise TypeError(f"Trying to optimize unsupported type {v!r}: var_list must hold tf.Variables")
        grads = gradients(
            loss,
            var_list,
            grad_ys=grad_loss,
            gate_gradients=gate_gradients == self.GATE_OP,
            aggregation_method=aggregation_method,
            colocate_gradients_with_ops=colocate_gradients_with_ops,
        )
        if gate_gradients == self.GATE_GRAPH:
            grads = control_flow_ops.tuple(grads)
        grads_and_vars = list(zip(grads, var_list))
        _assert_valid_dtypes([v for g, v in grads_and_vars if g is not None])
        return grads_and_vars

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        """Adds the ops that apply ``(gradient, variable)`` pairs; pairs with a None gradient are skipped.

        Each update op is named ``<name>/update_<var>/Apply...`` and colocated with its
        variable; the slots are created first (colocated too).

        Args:
            grads_and_vars: pairs as returned by `compute_gradients`.
            global_step: optional integer variable, incremented (``AssignAdd``) after
                all updates have run.
            name: name of the returned op (default: the optimizer's name).

        Returns:
            The op that applies the updates (the increment of `global_step` if given).

        Raises:
            ValueError: if `grads_and_vars` is empty or no pair has a gradient.
            TypeError: if a gradient is not a Tensor or a variable not a `tf.Variable`.
        """
        pairs = _convert_pairs(grads_and_vars)
        var_list = [v for g, v in pairs if g is not None]
        if not var_list:
            raise ValueError(f"No gradients provided for any variable: {[str(v) for _, v in pairs]}.")
        graph = var_list[0].graph
        self._create_slots(var_list)
        update_ops = []
        with graph.name_scope(name or self._name) as scope:
            self._prepare()
            for grad, var in pairs:
                if grad is None:
                    continue
                with graph.name_scope(f"update_{var.op.name}"), graph.colocate_with(var):
                    if isinstance(grad, IndexedSlices):
                        update_ops.append(self._apply_sparse_duplicate_indices(grad, var))
                    else:
                        update_ops.append(self._apply_dense(grad, var))
            if global_step is None:
                apply_updates = self._finish(update_ops, scope)
            else:
                # The increment's constant too lives with the global step (as TF): no tensor
                # crosses from the worker to the ps for it on every step. The step is read
                # before the increment so that its staleness can be fetched (train/staleness.py).
                with graph.colocate_with(global_step):
                    step_at_start = math_ops.identity(global_step, name="step_at_start")
                with (
                    graph.control_dependencies([self._finish(update_ops, "update"), step_at_start.op]),
                    graph.colocate_with(global_step),
                ):
                    new_step = state_ops.assign_add(global_step, 1, name=scope)
                apply_updates = new_step.op
                with graph.name_scope(scope):
                    staleness.record(apply_updates, new_step, step_at_start)
        train_ops = graph.get_collection_ref(GraphKeys.TRAIN_OP)
        if apply_updates not in train_ops:
            train_ops.append(apply_updates)
        return apply_updates

    # -- slots and other state ------------------------------------------------------------------
    def get_slot(self, var, name):
        """The slot variable `name` (e.g. ``"momentum"``, ``"m"``) created for `var`, or None."""
        named_slots = self._slots.get(name)
        if not named_slots:
            return None
        return named_slots.get(_var_key(var))

    def get_slot_names(self):
        """The names of the slots this optimizer creates, sorted."""
        return sorted(self._slots)

    def variables(self):
        """The optimizer's variables in the default graph (slots and e.g. Adam's beta powers), by name."""
        graph = get_default_graph()
        found = [v for (_, g), v in self._non_slot_dict.items() if g is graph]
        for slots in self._slots.values():
            found.extend(v for v in slots.values() if v.graph is graph)
        return sorted(found, key=lambda v: v.name)

    def _zeros_slot(self, var, slot_name, op_name):
        """Gets or creates `var`'s slot `slot_name`, a variable ``<var>/<op_name>`` of zeros."""
        named_slots = self._slots.setdefault(slot_name, {})
        key = _var_key(var)
        if key not in named_slots:
            named_slots[key] = create_zeros_slot(var, op_name)
        return named_slots[key]

    def _create_non_slot_variable(self, initial_value, name, colocate_with):
        """Gets or creates a non-trainable variable `name`, colocated with `colocate_with`."""
        graph = colocate_with.graph
        key = (name, graph)
        v = self._non_slot_dict.get(key)
        if v is None:
            with graph.control_dependencies(None), graph.colocate_with(colocate_with):
                v = state_ops.Variable(initial_value, name=name, trainable=False)
            self._non_slot_dict[key] = v
        return v

    def _get_non_slot_variable(self, name, graph=None):
        return self._non_slot_dict.get((name, graph or get_default_graph()))

    # -- hyper-parameters -----------------------------------------------------------------------
    def _prepare(self):
        """Evaluates callable hyper-parameters and converts tensor-like ones, once per `apply_gradients`."""
        self._prepared = {}
        for name, value in self._hyper.items():
            value = value() if callable(value) else value
            if not isinstance(value, numbers.Real) or isinstance(value, bool):
                value = convert_to_tensor(value, name=name)
            self._prepared[name] = value

    def _hyper_tensor(self, name, dtype):
        """Hyper-parameter `name` as a tensor of `dtype`, created in the current (update) scope.

        A Python number becomes a constant of `dtype` directly (TF 1.x first makes a
        float32 tensor and casts it, which rounds e.g. 0.1 for float64 variables); a
        tensor is cast to `dtype`.
        """
        value = self._prepared[name]
        if isinstance(value, Tensor):
            return math_ops.cast(value, dtype)
        return constant(value, dtype=dtype, name=name)

    # -- what subclasses define -----------------------------------------------------------------
    def _create_slots(self, var_list):  # noqa: B027 - an optional hook; GradientDescent needs no slots
        """Creates the slots the updates of `var_list` need (none by default)."""

    @abc.abstractmethod
    def _apply_dense(self, grad, var):
        """Adds the op that applies `grad` to `var` and returns it (an Operation)."""

    def _apply_sparse_duplicate_indices(self, grad, var):
        """Sums the rows of `grad` that share an index, then `_apply_sparse` (TF's default)."""
        values, indices = _deduplicate_indexed_slices(grad.values, grad.indices)
        return self._apply_sparse(IndexedSlices(values, indices, grad.dense_shape), var)

    def _apply_sparse(self, grad, var):
        """Adds the op that applies an `IndexedSlices` (unique indices) to `var`; returns it."""
        raise NotImplementedError(
            f"{type(self).__name__} cannot apply a sparse (IndexedSlices) gradient to {var.op.name!r}: "
            "define _apply_sparse, or densify the gradient with tf.convert_to_tensor"
        )

    def _finish(self, update_ops, name_scope):
        """Returns the op that groups `update_ops`, named `name_scope`."""
        return control_flow_ops.group(*update_ops, name=name_scope)


def _deduplicate_indexed_slices(values, indices):
    """``(summed_values, unique_indices)``: one row per distinct index, rows of a repeated index added."""
    unique_indices, positions = index_ops.unique(indices)
    summed = reduction_ops.unsorted_segment_sum(values, positions, array_ops.size(unique_indices))
    return summed, unique_indices


def _convert_pairs(grads_and_vars):
    pairs = []
    for pair in grads_and_vars:
        try:
            g, v = pair
        except (TypeError, ValueError):
            raise TypeError(f"apply_gradients() takes (gradient, variable) pairs, got {pair!r}") from None
        if g is not None and not isinstance(g, IndexedSlices):
            try:
                g = convert_to_tensor(g)
            except (TypeError, ValueError) as e:
                raise TypeError(f"Gradient must be convertible to a Tensor or None: {g!r} ({e})") from None
        if not isinstance(v, state_ops.Variable):
            raise TypeError(f"apply_gradients() updates tf.Variables, got {v!r} (with gradient {g})")
        pairs.append((g, v))
    if not pairs:
        raise ValueError("No variables provided.")
    return pairs


def _assert_valid_dtypes(tensors):
    for t in tensors:
        if t.dtype not in _VALID_DTYPES:
            raise ValueError(
                f"Invalid type {t.dtype!r} for {t.name}, expected: {[d.name for d in _VALID_DTYPES]}."
            )
