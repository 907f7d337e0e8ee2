"""Recording a dataflow graph: `Graph`, `Operation`, scopes, collections, the default graph.

Nothing here runs anything. Building ops only appends `Operation`s to a `Graph`,
each with the device that was *requested* for it (``op.device``) by the enclosing
`tf.device` scopes and device functions; the master decides the final placement.
An op's outputs are `Tensor`s (`nbdist.graph.tensor`); this module imports no op.
"""

import contextlib
import os
import re
import sys
import threading

from nbdist.graph import device as pydev
from nbdist.graph.default_session import run_with_session
from nbdist.graph.tensor import Tensor

_VALID_OP_NAME = re.compile(r"^[A-Za-z0-9.][A-Za-z0-9_.\-/>]*$")
# nbdist's own directory, separator included (``.../nbdist_tools/`` is not in it); spelled as
# ``__file__`` is, as are the ``co_filename``s of nbdist's other modules.
_NBDIST_DIR = os.path.join(os.path.dirname(os.path.dirname(__file__)), "")


class GraphKeys:
    """Standard collection names (TF's `tf.GraphKeys`)."""

    GLOBAL_VARIABLES = "variables"
    LOCAL_VARIABLES = "local_variables"
    TRAINABLE_VARIABLES = "trainable_variables"
    MODEL_VARIABLES = "model_variables"
    GLOBAL_STEP = "global_step"
    TRAIN_OP = "train_op"
    LOSSES = "losses"
    SUMMARIES = "summaries"
    UPDATE_OPS = "update_ops"
    INIT_OP = "init_op"
    READY_OP = "ready_op"
    SAVERS = "savers"
    QUEUE_RUNNERS = "queue_runners"
    REGULARIZATION_LOSSES = "regularization_losses"
    MOVING_AVERAGE_VARIABLES = "moving_average_variables"
    METRIC_VARIABLES = "metric_variables"
    VARIABLES = GLOBAL_VARIABLES


class Operation:
    """A node of the graph: its type, inputs, attributes, outputs and requested device."""

    def __init__(self, graph, op_type, name, inputs, output_specs, attrs, control_inputs):
        self._graph = graph
        self._type = op_type
        self._name = name
        self._inputs = list(inputs)
        self._control_inputs = list(control_inputs)
        self._attrs = dict(attrs)
        self._device = ""
        self._id = len(graph._ops)
        self._outputs = [Tensor(self, i, dt, sh) for i, (dt, sh) in enumerate(output_specs)]
        self.traceback = _user_frames()
        self.control_flow_context = None  # the tf.cond branch it was made in (ops/cond_ops.py)

    @property
    def graph(self):
        return self._graph

    @property
    def type(self):
        return self._type

    @property
    def name(self):
        return self._name

    @property
    def inputs(self):
        return tuple(self._inputs)

    @property
    def control_inputs(self):
        return list(self._control_inputs)

    @property
    def outputs(self):
        return list(self._outputs)

    @property
    def device(self):
        """The device requested while recording (may be partial or empty)."""
        return self._device

    def _set_device(self, device):
        if isinstance(device, pydev.DeviceSpec):
            device = device.to_string()
        self._device = pydev.canonicalize(device) if device else ""

    @property
    def attrs(self):
        return dict(self._attrs)

    def get_attr(self, name):
        try:
            return self._attrs[name]
        except KeyError:
            raise ValueError(f"operation {self._name!r} ({self._type}) has no attr {name!r}") from None

    def _set_attr(self, name, value):
        self._attrs[name] = value

    def colocation_groups(self):
        """Names of the ops this op must be placed with (``loc:@name``), itself by default."""
        return list(self._attrs.get("_class", [f"loc:@{self._name}"]))

    def run(self, feed_dict=None, session=None):
        """Runs this op in `session` (default: the default session)."""
        run_with_session(session, self, feed_dict, "Operation.run()")

    def __repr__(self):
        dev = f" device={self._device}" if self._device else ""
        return f"<nbdist.Operation '{self._name}' type={self._type}{dev}>"


def graph_element(obj):
    """The Tensor or Operation behind a variable-like object (its ``_as_graph_element``);
    anything else as it is. The one place that unwraps variables for graph APIs."""
    unwrap = getattr(obj, "_as_graph_element", None)
    return unwrap() if unwrap is not None and not isinstance(obj, (Tensor, Operation)) else obj


def is_user_code(filename):
    """Whether `filename` (a frame's) is outside nbdist's own package directory: the user's
    code or another library's, even in a folder named ``nbdist`` (a clone of this repository).
    The one test of "is this frame nbdist's?" (op tracebacks, `get_variable`'s messages)."""
    return not filename.startswith(_NBDIST_DIR)


def _user_frames(limit=4):
    """The innermost frames outside nbdist: where the user created the op."""
    frames = []
    f = sys._getframe(2)
    while f is not None and len(frames) < limit:
        filename = f.f_code.co_filename
        if is_user_code(filename):
            frames.append(f'  File "{filename}", line {f.f_lineno}, in {f.f_code.co_name}\n')
        f = f.f_back
    return frames[::-1]


class Graph:
    """A TensorFlow 1.x graph: an append-only list of operations plus recording state."""

    def __init__(self):
        self._ops = []
        self._ops_by_name = {}
        self._names_in_use = {}
        self._lock = threading.RLock()
        self._finalized = False
        self._collections = {}
        self.seed = None
        self._local = threading.local()

    # -- thread-local recording state (scopes are per thread, as in TF) -----------------
    def _state(self, key, default):
        value = getattr(self._local, key, None)
        if value is None:
            value = default()
            setattr(self._local, key, value)
        return value

    @property
    def _name_stack(self):
        return getattr(self._local, "name_stack", "")

    @_name_stack.setter
    def _name_stack(self, value):
        self._local.name_stack = value

    @property
    def _device_stack(self):
        return self._state("device_stack", list)

    @property
    def _control_stack(self):
        return self._state("control_stack", list)

    @property
    def _attr_stack(self):
        return self._state("attr_stack", list)

    @property
    def _colocation_stack(self):
        return self._state("colocation_stack", list)

    def get_control_flow_context(self):
        """The `tf.cond` branch being recorded on this thread (a `CondContext`), or None."""
        return getattr(self._local, "control_flow_context", None)

    def set_control_flow_context(self, context):
        self._local.control_flow_context = context

    def device_functions(self):
        """The device scopes open on this thread, outermost first (a function's graph starts with them)."""
        return list(self._device_stack)

    # -- structure ------------------------------------------------------------------------
    @property
    def version(self):
        """Number of ops recorded so far; a GraphDef extension is ops[from_version:]."""
        return len(self._ops)

    @property
    def finalized(self):
        return self._finalized

    def finalize(self):
        self._finalized = True

    def get_operations(self):
        return list(self._ops)

    def operations_since(self, version):
        """The ops recorded after `version` (``graph.version`` then), in creation order:
        what a GraphDef extension or a session's node list adds."""
        return self._ops[version:]

    def add_imported_op(self, op_type, name, inputs, output_specs, attrs, control_inputs, device):
        """Appends an op exactly as described (an imported node): no scopes, device
        functions, colocation or shape function apply, and `name` is used as given.

        Raises:
            RuntimeError: if the graph is finalized.
            ValueError: if the graph already has an op named `name`.
        """
        if self._finalized:
            raise RuntimeError(f"graph is finalized and cannot be modified (importing {op_type} op {name!r})")
        with self._lock:
            if name in self._ops_by_name:
                raise ValueError(f"graph already has an op named {name!r}")
            op = Operation(self, op_type, name, inputs, output_specs, attrs, control_inputs)
            op._device = device
            self._ops.append(op)
            self._ops_by_name[name] = op
            self._names_in_use[name.lower()] = 1
        return op

    def get_operation_by_name(self, name):
        try:
            return self._ops_by_name[name]
        except KeyError:
            raise KeyError(f"the graph has no operation named {name!r}") from None

    def get_tensor_by_name(self, name):
        op_name, sep, index = name.rpartition(":")
        if not sep or not index.isdigit():
            raise ValueError(f"tensor names look like 'op_name:0', got {name!r}")
        op = self.get_operation_by_name(op_name)
        try:
            return op.outputs[int(index)]
        except IndexError:
            raise KeyError(f"operation {op_name!r} has only {len(op.outputs)} outputs") from None

    def as_graph_element(self, obj, allow_tensor=True, allow_operation=True):
        """Resolves a Tensor, Operation, variable-like or name to this graph's element."""
        obj = graph_element(obj)
        if isinstance(obj, str):
            obj = self.get_tensor_by_name(obj) if ":" in obj else self.get_operation_by_name(obj)
        if (isinstance(obj, Tensor) and allow_tensor) or (isinstance(obj, Operation) and allow_operation):
            if obj.graph is not self:
                raise ValueError(f"{obj!r} is not an element of this graph")
            return obj
        kinds = " or ".join(k for k, ok in (("Tensor", allow_tensor), ("Operation", allow_operation)) if ok)
        raise TypeError(f"cannot convert {obj!r} to a {kinds}")

    # -- names ----------------------------------------------------------------------------
    def unique_name(self, name, mark_as_used=True):
        """`name` under the current name scope, suffixed ``_1``, ``_2``... when taken."""
        if self._name_stack:
            name = f"{self._name_stack}/{name}"
        key = name.lower()
        count = self._names_in_use.get(key, 0)
        if mark_as_used:
            self._names_in_use[key] = count + 1
        if count > 0:
            base = key
            while f"{base}_{count}" in self._names_in_use:
                count += 1
            if mark_as_used:
                self._names_in_use[f"{base}_{count}"] = 1
            name = f"{name}_{count}"
        return name

    def get_name_scope(self):
        return self._name_stack

    @contextlib.contextmanager
    def name_scope(self, name):
        """Opens a name scope; yields its prefix (``"outer/inner/"``).

        ``None`` or ``""`` resets to the root; a name ending in ``/`` re-enters it exactly.
        """
        old = self._name_stack
        if not name:
            new = ""
        elif name.endswith("/"):
            new = name[:-1]
        else:
            new = self.unique_name(name)
        self._name_stack = new
        try:
            yield f"{new}/" if new else ""
        finally:
            self._name_stack = old

    # -- devices --------------------------------------------------------------------------
    @contextlib.contextmanager
    def device(self, device_name_or_function):
        """Requests a device for the ops created inside.

        Accepts a string (``"/job:ps/task:0"``), a `DeviceSpec`, ``None`` (clears the
        outer scopes) or a function ``op -> device string``.
        """
        d = device_name_or_function
        if d is None or (callable(d) and not isinstance(d, (str, pydev.DeviceSpec))):
            fn = d
        elif isinstance(d, (str, pydev.DeviceSpec)):
            fn = pydev.merge_device(d)
        else:
            raise TypeError(f"tf.device() takes a device string, DeviceSpec, None or a function, got {d!r}")
        self._device_stack.append(fn)
        try:
            yield
        finally:
            self._device_stack.pop()

    def _apply_device_functions(self, op):
        # Innermost first; outer string scopes merge *under* what inner scopes chose.
        for fn in reversed(self._device_stack):
            if fn is None:
                break
            op._set_device(fn(op))

    @contextlib.contextmanager
    def colocate_with(self, op, ignore_existing=False):
        """Ops created inside are placed with `op` (a Tensor, Operation or variable).

        Scopes nest as in TF: an op made inside several is colocated with all of them (its
        ``_class`` lists every group) and takes the innermost device. ``ignore_existing=True``
        drops the enclosing colocation scopes; ``op=None`` clears them.
        """
        if op is None:
            self._colocation_stack.append((None, True))
        else:
            op = graph_element(op)
            if isinstance(op, Tensor):
                op = op.op
            self._colocation_stack.append((op, bool(ignore_existing)))
        old_devices = None
        if op is not None:
            old_devices = list(self._device_stack)
            self._device_stack[:] = []  # colocation overrides device scopes (as TF)
        try:
            yield
        finally:
            if old_devices is not None:
                self._device_stack[:] = old_devices
            self._colocation_stack.pop()

    @contextlib.contextmanager
    def container(self, container_name):
        """Stateful ops created inside (variables) live in resource container `container_name`,
        which `tf.Session.reset(target, [container_name])` clears on every task."""
        old = self._state("container", lambda: [""])
        old.append(str(container_name or ""))
        try:
            yield container_name
        finally:
            old.pop()

    def current_container(self):
        """The resource container of the innermost `container` scope (``""``: the default)."""
        return self._state("container", lambda: [""])[-1]

    @contextlib.contextmanager
    def attr_scope(self, attrs):
        """Ops created inside get `attrs` (TF's ``_attr_scope``), e.g. ``{"_class": ["loc:@v"]}``
        to colocate an op with one that does not exist yet (a variable's initializer)."""
        self._attr_stack.append(dict(attrs))
        try:
            yield
        finally:
            self._attr_stack.pop()

    def _colocation_ops(self):
        """The ops of the active colocation scopes, innermost first (up to a reset)."""
        ops = []
        for op, ignore_existing in reversed(self._colocation_stack):
            if op is not None:
                ops.append(op)
            if ignore_existing:
                break
        return ops

    # -- control dependencies ----------------------------------------------------------------
    @contextlib.contextmanager
    def control_dependencies(self, control_inputs):
        """Ops created inside run only after `control_inputs` (``None`` clears)."""
        if control_inputs is None:
            saved = list(self._control_stack)
            self._control_stack[:] = []
            try:
                yield
            finally:
                self._control_stack[:] = saved
            return
        ops = []
        for c in control_inputs:
            c = graph_element(c)
            if isinstance(c, Tensor):
                c = c.op
            if not isinstance(c, Operation):
                raise TypeError(f"control_dependencies() takes ops or tensors, got {c!r}")
            ops.append(c)
        self._control_stack.append(ops)
        try:
            yield
        finally:
            self._control_stack.pop()

    # -- creating ops -------------------------------------------------------------------------
    def create_op(self, op_type, inputs, output_specs, name=None, attrs=None, control_inputs=()):
        """Appends an op. `output_specs` is a list of ``(dtype, shape)``, one per output.

        Raises:
            RuntimeError: if the graph is finalized.
            ValueError: if an input belongs to another graph.
        """
        if self._finalized:
            raise RuntimeError(f"graph is finalized and cannot be modified (adding {op_type} op {name!r})")
        context = self.get_control_flow_context()
        if context is not None:  # inside a tf.cond branch: outer tensors come in through Switches
            inputs, control_inputs = context.prepare_inputs(op_type, list(inputs), list(control_inputs))
        for t in inputs:
            if not isinstance(t, Tensor):
                raise TypeError(f"input of {op_type} must be a Tensor, got {t!r}")
            if t.graph is not self:
                raise ValueError(
                    f"tensor {t.name} is from a different graph than the {op_type} op being "
                    "created; build all ops of one computation in the same tf.Graph"
                )
        with self._lock:
            if name and name.endswith("/"):  # a scope name used as the op's exact name (TF)
                name = name[:-1]
                if name in self._ops_by_name:
                    raise ValueError(f"an op named {name!r} already exists")
            else:
                name = self.unique_name(name or op_type)
            if not _VALID_OP_NAME.match(name):
                raise ValueError(f"{name!r} is not a valid op name")
            attrs = dict(attrs or {})
            for scoped in self._attr_stack:
                attrs.update(scoped)
            override = getattr(self._local, "gradient_override_map", {}).get(op_type)
            if override:  # (set by Graph.gradient_override_map, nbdist.ops.custom_gradient_ops)
                attrs["_gradient_op_type"] = override
            deps = list(control_inputs)
            input_ops = {t.op for t in inputs}
            for level in self._control_stack:
                deps.extend(c for c in level if c not in input_ops and c not in deps)
            op = Operation(self, op_type, name, inputs, output_specs, attrs, deps)
            op.control_flow_context = context
            coloc = self._colocation_ops()
            if coloc:
                op._set_attr("_class", sorted({g for c in coloc for g in c.colocation_groups()}))
                op._set_device(next((c.device for c in coloc if c.device), coloc[0].device))
            else:
                self._apply_device_functions(op)
            self._ops.append(op)
            self._ops_by_name[name] = op
        return op

    # -- collections --------------------------------------------------------------------------
    def add_to_collection(self, name, value):
        self._collections.setdefault(name, []).append(value)

    def add_to_collections(self, names, value):
        for n in [names] if isinstance(names, str) else names:
            self.add_to_collection(n, value)

    def get_collection(self, name, scope=None):
        items = list(self._collections.get(name, []))
        if scope is None:
            return items
        pattern = re.compile(scope)
        return [i for i in items if pattern.match(getattr(i, "name", ""))]

    def get_collection_ref(self, name):
        return self._collections.setdefault(name, [])

    def get_all_collection_keys(self):
        return list(self._collections)

    def clear_collection(self, name):
        self._collections.pop(name, None)

    # -- default graph ------------------------------------------------------------------------
    @contextlib.contextmanager
    def as_default(self):
        """Makes this graph the default graph of the current thread inside the block."""
        _default_stack().append(self)
        try:
            yield self
        finally:
            _default_stack().pop()

    def __repr__(self):
        return f"<nbdist.Graph with {len(self._ops)} ops>"


_thread_state = threading.local()
_global_default = [Graph()]


def _default_stack():
    stack = getattr(_thread_state, "stack", None)
    if stack is None:
        stack = _thread_state.stack = []
    return stack


def get_default_graph():
    """The innermost graph of `Graph.as_default()` in this thread, else the global one."""
    stack = _default_stack()
    return stack[-1] if stack else _global_default[0]


def clear_default_graph_stack():
    """Leaves every ``graph.as_default()`` block this thread entered and did not leave (an
    `InteractiveSession` never closed): what TF's `tf.test.TestCase.setUp` does before
    `reset_default_graph`, so one test's leftovers never fail the next."""
    _default_stack().clear()


def reset_default_graph():
    """Replaces the global default graph with a new, empty one.

    Raises:
        AssertionError-like `RuntimeError` if called inside a `with g.as_default()` block.
    """
    if _default_stack():
        raise RuntimeError(
            "reset_default_graph() called inside a `with graph.as_default()` block; leave the block first"
        )
    _global_default[0] = Graph()


# -- module-level conveniences (TF's tf.name_scope, tf.device, ...) --------------------------
def name_scope(name, default_name=None, values=None):
    """`tf.name_scope`: a name scope on the default graph (or the graph of `values`)."""
    graph = get_default_graph()
    for v in values or ():
        if isinstance(v, Tensor):
            graph = v.graph
            break
    return graph.name_scope(name if name is not None else default_name)


def device(device_name_or_function):
    return get_default_graph().device(device_name_or_function)


def container(container_name):
    """`tf.container`: variables created inside go to resource container `container_name`."""
    return get_default_graph().container(container_name)


def control_dependencies(control_inputs):
    return get_default_graph().control_dependencies(control_inputs)


def colocate_with(op, ignore_existing=False):
    return get_default_graph().colocate_with(op, ignore_existing)


def add_to_collection(name, value):
    get_default_graph().add_to_collection(name, value)


def get_collection(name, scope=None):
    return get_default_graph().get_collection(name, scope)


def get_collection_ref(name):
    return get_default_graph().get_collection_ref(name)
