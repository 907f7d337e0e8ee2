"""Persistent tensors: TF's session handles (`tf.get_session_handle`, `tf.get_session_tensor`,
`tf.delete_session_tensor`).

``GetSessionHandle`` keeps its input's value in the session's tensor store on the task that
runs it and outputs a handle string, ``"<node>;<id>;<device>"`` as TF's; `Session.run` turns a
fetched handle into a `TensorHandle`. ``GetSessionTensor`` reads a stored value back in any
later step of the same session, ``DeleteSessionTensor`` drops it. A store belongs to one
session: a local session's resources end with it; on a server the store is a per-session
resource, dropped when the session closes. A `TensorHandle` no longer referenced is deleted
by a later `Session.run`, as TF's (a handle kept alive lives until `delete()` or the session's
end).
"""

import contextlib
import threading
import weakref

import numpy as np

from nbdist import errors
from nbdist.graph import dtypes as _dtypes
from nbdist.graph.graph import Tensor, get_default_graph
from nbdist.graph.tensor_shape import TensorShape
from nbdist.ops import registry
from nbdist.ops.array_ops import placeholder

__all__ = ["delete_session_tensor", "get_session_handle", "get_session_tensor"]

_DEAD_HANDLES_THRESHOLD = 10  # TF's: dead handles are deleted in batches of this many


class _TensorStore:
    """One session's persistent tensors on one task: handle -> value."""

    def __init__(self):
        self.lock = threading.Lock()
        self.tensors = {}
        self.next_id = 0


def _store(ctx):
    # Keyed as a per-session resource (`ResourceManager.clear_session` drops it with the session).
    return ctx.resources.get_or_create(("", "session_tensors", f"store@session:{ctx.session}"), _TensorStore)


def _handle_of(value):
    value = value.item() if isinstance(value, np.ndarray) else value
    return value.decode() if isinstance(value, bytes) else str(value)


_TF_TYPE_NAMES = {"float32": "float", "float64": "double", "float16": "half"}  # TF's DataTypeString


# -- GetSessionHandle ------------------------------------------------------------------------------
registry.declare("GetSessionHandle", stateful=True)
registry.shape("GetSessionHandle")(lambda inputs, attrs: [(_dtypes.string, TensorShape(()))])
registry.no_gradient("GetSessionHandle")


@registry.kernel("GetSessionHandle")
def _get_session_handle_kernel(ctx, node, value):
    store = _store(ctx)
    with store.lock:
        handle = f"{node.name};{store.next_id};{ctx.device}"
        store.next_id += 1
        store.tensors[handle] = np.array(value, copy=True)
    return np.array(handle.encode(), dtype=object)


# -- GetSessionTensor ------------------------------------------------------------------------------
registry.declare("GetSessionTensor", stateful=True)
registry.shape("GetSessionTensor")(lambda inputs, attrs: [(attrs["dtype"], TensorShape(None))])
registry.no_gradient("GetSessionTensor")


@registry.kernel("GetSessionTensor")
def _get_session_tensor_kernel(ctx, node, handle):
    handle = _handle_of(handle)
    store = _store(ctx)
    with store.lock:
        value = store.tensors.get(handle)
    if value is None:
        raise errors.InvalidArgumentError(
            node.name, None, f"The tensor with handle '{handle}' is not in the session store."
        )
    declared = node.attr["dtype"]
    held = _dtypes.dtype_of_value(value)
    if held != declared:
        raise errors.InternalError(
            node.name,
            None,
            f"Output 0 of type {_TF_TYPE_NAMES.get(held.name, held.name)} does not match declared output "
            f"type {_TF_TYPE_NAMES.get(declared.name, declared.name)} for node {{{{node {node.name}}}}}",
        )
    return value


# -- DeleteSessionTensor ---------------------------------------------------------------------------
registry.declare("DeleteSessionTensor", stateful=True)
registry.shape("DeleteSessionTensor")(lambda inputs, attrs: [])
registry.no_gradient("DeleteSessionTensor")


@registry.kernel("DeleteSessionTensor")
def _delete_session_tensor_kernel(ctx, node, handle):
    handle = _handle_of(handle)
    store = _store(ctx)
    with store.lock:
        if store.tensors.pop(handle, None) is None:
            raise errors.InvalidArgumentError(
                node.name, None, f"Failed to delete a tensor with handle '{handle}' in the session store."
            )


# -- the functions ---------------------------------------------------------------------------------
def get_session_handle(data, name=None):
    """`tf.get_session_handle`: keeps `data`'s value in the session when the op runs.

    Fetching the result gives a `TensorHandle`: ``handle.eval()`` reads the value back,
    ``tf.get_session_tensor(handle.handle, dtype)`` uses it in a later step.

    Raises:
        TypeError: `data` is not a Tensor.
    """
    if not isinstance(data, Tensor):
        raise TypeError("`data` must be of type Tensor.")
    with data.graph.colocate_with(data.op):
        return registry.make_op("GetSessionHandle", [data], name=name).outputs[0]


def _device_of(handle):
    return _handle_of(handle).split(";")[-1]


def get_session_tensor(handle, dtype, name=None):
    """`tf.get_session_tensor`: ``(holder, tensor)``; feed `holder` the handle string and
    `tensor` is the value kept under it, placed on the device that holds it."""
    graph = get_default_graph()
    with graph.device(_device_of(handle)):
        holder = placeholder(_dtypes.string)
        dtype = _dtypes.as_dtype(dtype)
        tensor = registry.make_op("GetSessionTensor", [holder], {"dtype": dtype}, name=name).outputs[0]
    return holder, tensor


def delete_session_tensor(handle, name=None):
    """`tf.delete_session_tensor`: ``(holder, deleter)``; running `deleter` with `holder` fed
    the handle string drops the value kept under it."""
    graph = get_default_graph()
    with graph.device(_device_of(handle)):
        holder = placeholder(_dtypes.string)
        deleter = registry.make_op("DeleteSessionTensor", [holder], name=name)
    return holder, deleter


class TensorHandle:
    """A value kept in a session (what `Session.run` returns for a `get_session_handle` tensor)."""

    def __init__(self, handle, dtype, session):
        self._handle = _handle_of(handle)
        self._dtype = dtype
        self._session = session
        self._auto_gc_enabled = True

    def __del__(self):
        if self._auto_gc_enabled:
            with contextlib.suppress(Exception):  # at interpreter exit the module may be gone
                _dead_handles.setdefault(self._session, []).append(self._handle)

    def __str__(self):
        return self._handle

    @property
    def handle(self):
        """The handle string (``"<node>;<id>;<device>"``)."""
        return self._handle

    def get_raw_handle(self):
        return self._handle

    def to_numpy_array(self):
        """The handle as a numpy string scalar (for feeding)."""
        return np.asarray(self._handle)

    def eval(self):
        """The kept value.

        Raises:
            TypeError: the handle was deleted.
        """
        self._check_alive()
        holder, reader = _cached(self._session.graph, "reader", _device_of(self._handle), self._dtype)
        return self._session.run(reader, feed_dict={holder: self._handle})

    def delete(self):
        """Drops the kept value.

        Raises:
            TypeError: the handle was deleted already.
        """
        self._check_alive()
        self._auto_gc_enabled = False
        holder, deleter = _cached(self._session.graph, "deleter", _device_of(self._handle))
        self._session.run(deleter, feed_dict={holder: self._handle})

    def _check_alive(self):
        if not self._auto_gc_enabled:
            raise TypeError(f"Persistent tensor {self._handle} may have already been deleted.")


# TensorHandles dropped unreferenced, per session, until a run deletes them (TF's dead handles).
_dead_handles = weakref.WeakKeyDictionary()
_CACHE_KEY = ("__session_handle_ops",)


def _cached(graph, kind, device, dtype=None):
    """The (holder, op) that reads or deletes handles of `device` (and `dtype`), made once per graph."""
    cache = graph.get_collection_ref(_CACHE_KEY)
    if not cache:
        cache.append({})
    key = (kind, device, dtype)
    if key not in cache[0]:
        with graph.as_default():
            made = (
                get_session_tensor(f";;{device}", dtype)
                if kind == "reader"
                else delete_session_tensor(f";;{device}")
            )
        cache[0][key] = made
    return cache[0][key]


def wrap_fetched_handle(value, tensor, session):
    """`Session.run`'s result for a fetched ``GetSessionHandle`` tensor: a `TensorHandle`."""
    return TensorHandle(value, tensor.op.inputs[0].dtype, session)


def delete_dead_handles(session):
    """Deletes the values of `session`'s unreferenced `TensorHandle`s once there are enough of
    them (TF's threshold), before `session` runs a step."""
    if not _dead_handles:  # (every run asks: no weak reference made when nothing was dropped)
        return
    dead = _dead_handles.get(session)
    if not dead or len(dead) < _DEAD_HANDLES_THRESHOLD:
        return
    del _dead_handles[session]
    for handle in dead:
        holder, deleter = _cached(session.graph, "deleter", _device_of(handle))
        session.run(deleter, feed_dict={holder: handle})
