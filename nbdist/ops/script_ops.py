"""`tf.py_func`, `tf.numpy_function` (ops ``PyFunc`` / ``PyFuncStateless``) and `tf.py_function`
(``EagerPyFunc``): a Python function as an op's kernel.

The function stays in the process that built the graph - it is registered there under the
op's ``token`` (``pyfunc_0``, as TF's) and is never sent over the network. A plan holding the
op compiles only in that process (`registry.runs_here`): a session's local run, or a task
of an in-process server (`tf.test.create_local_cluster`). Sent to a worker in another
process (its ``RegisterGraph``), the graph is refused with `InvalidArgumentError` naming the
op, its device and the process that has the function; pin the op to a task of that process
with ``tf.device``.

As in TF, an exception in the function fails the step naming the op: `ValueError` and
`TypeError` as `InvalidArgumentError`, `StopIteration` as `OutOfRangeError`,
`NotImplementedError` as `UnimplementedError`, `MemoryError` as `ResourceExhaustedError`,
others as `UnknownError`; a result of another dtype or count than `Tout` is an
`InvalidArgumentError`. These ops have no gradient (TF registers none for ``PyFunc``).
"""

import itertools
import os
import socket
import threading
import traceback
import uuid
import weakref

import numpy as np

from nbdist import errors
from nbdist.graph import dtypes as _dtypes
from nbdist.graph.graph import get_default_graph
from nbdist.graph.tensor_shape import TensorShape
from nbdist.ops import registry
from nbdist.ops.constant_op import convert_to_tensor

__all__ = ["numpy_function", "py_func", "py_function"]

_FUNCS = {}  # token -> the Python function, while the graph that holds it lives
_lock = threading.Lock()
_tokens = itertools.count()
_NONCE = uuid.uuid4().hex[:12]  # (with the pid: a fork is another process)
_TF_TYPE_NAMES = {"float32": "float", "float64": "double", "float16": "half"}


def _this_process():
    return f"{socket.gethostname()}:{os.getpid()}:{_NONCE}"


def _register(func, graph):
    """`func` under a new token, until the outermost graph holding it is collected (a loop's
    or branch's function graph is kept only while being built)."""
    while getattr(graph, "outer", None) is not None:
        graph = graph.outer
    with _lock:
        token = f"pyfunc_{next(_tokens)}"
        _FUNCS[token] = func
    weakref.finalize(graph, _FUNCS.pop, token, None)
    return token


def _runs_here(node):
    """Refuses `node` in a process other than the one whose registry holds its function."""
    owner = node.attr.get("_process", "")
    if owner == _this_process() and node.attr["token"] in _FUNCS:
        return
    host, _, rest = owner.partition(":")
    pid = rest.partition(":")[0]
    raise errors.InvalidArgumentError(
        node.name,
        None,
        f"{node.op} op {node.name!r} (Python function {node.attr['token']}) cannot run on "
        f"{node.device or 'this task'}: its function lives only in the process that built the graph "
        f"(pid {pid or '?'} on {host or '?'}), never sent to another task's process; pin the op to a "
        "task of that process with tf.device(...)",
    )


def _error(e, node):
    """TF's error class for an exception of a py_func (`py_func.cc`), naming the op."""
    if isinstance(e, errors.OpError):
        return type(e)(node.name, None, e.message)
    kind = (
        errors.InvalidArgumentError
        if isinstance(e, (ValueError, TypeError))
        else errors.OutOfRangeError
        if isinstance(e, StopIteration)
        else errors.UnimplementedError
        if isinstance(e, NotImplementedError)
        else errors.ResourceExhaustedError
        if isinstance(e, MemoryError)
        else errors.UnknownError
    )
    trace = "".join(traceback.format_exception(type(e), e, e.__traceback__))
    message = f"{type(e).__name__}: {e}\n{trace}"
    return kind(node.name, None, f"{message}\n in {node.op} op {node.name!r}")


def _convert(value):
    """A result as TF's ``FuncRegistry._convert``: strings as object arrays of bytes."""
    result = np.asarray(value, order="C")
    if result.dtype.char == "S" and result is not value:
        return np.asarray(value, order="C", dtype=object)
    if result.dtype.char == "U":
        return np.vectorize(lambda x: x.encode("utf8"), otypes=[object])(result).astype(object)
    return result


def _results(ret, node):
    """The function's result as one array per output, checked against ``Tout``."""
    tout, token = node.attr["Tout"], node.attr["token"]
    if ret is None and not tout:
        return []
    if node.op == "EagerPyFunc":
        values = list(ret) if isinstance(ret, (list, tuple)) else [ret]
        if len(values) == len(tout):
            return [np.asarray(v, dtype=t.np) for v, t in zip(values, tout)]
    else:
        ret = [ret] if isinstance(ret, bytes) else ret
        values = [_convert(x) for x in ret] if isinstance(ret, (list, tuple)) else [_convert(ret)]
    if len(values) != len(tout):
        raise errors.InvalidArgumentError(
            node.name, None, f"{token} returns {len(values)} values, but expects to see {len(tout)} values."
        )
    for i, (v, t) in enumerate(zip(values, tout)):
        got = _dtypes.as_dtype(v.dtype) if v.dtype.kind in "biufcOSU" else None
        if got != t:
            got_name = v.dtype.name if got is None else _TF_TYPE_NAMES.get(got.name, got.name)
            wanted = _TF_TYPE_NAMES.get(t.name, t.name)
            raise errors.InvalidArgumentError(
                node.name, None, f"{i}-th value returned by {token} is {got_name}, but expects {wanted}"
            )
    return values


class _EagerValue(np.ndarray):
    """What `py_function`'s function gets for a tensor: an array with TF's ``.numpy()``."""

    def numpy(self):
        return np.asarray(self)


def _kernel(ctx, node, *args):
    func = _FUNCS.get(node.attr["token"])
    if func is None:
        _runs_here(node)
    if node.op == "EagerPyFunc":
        args = [np.asarray(a).view(_EagerValue) for a in args]
    try:
        ret = func(*args)
    except Exception as e:  # (the function's error fails the step, as TF's)
        raise _error(e, node) from e
    values = _results(ret, node)
    if not values:
        return None
    return values[0] if len(values) == 1 else tuple(values)


for _type, _stateful in (("PyFunc", True), ("PyFuncStateless", False), ("EagerPyFunc", True)):
    registry.declare(_type, stateful=_stateful)
    registry.shape(_type)(lambda inputs, attrs: [(t, TensorShape(None)) for t in attrs["Tout"]])
    registry.kernel(_type)(_kernel)
    registry.runs_here(_type)(_runs_here)
registry.no_gradient("PyFunc")
registry.no_gradient("PyFuncStateless")


def _py_func(op_type, func, inp, Tout, name):  # noqa: N803 - TF's argument name
    is_list = isinstance(Tout, (list, tuple))
    tout = [_dtypes.as_dtype(t) for t in Tout] if is_list else [_dtypes.as_dtype(Tout)]
    inputs = [convert_to_tensor(x) for x in (inp or [])]
    graph = inputs[0].graph if inputs else get_default_graph()
    attrs = {
        "token": _register(func, graph),
        "Tin": [x.dtype for x in inputs],
        "Tout": tout,
        "_process": _this_process(),
    }
    if op_type == "EagerPyFunc":
        attrs["is_async"] = False
    op = registry.make_op(op_type, inputs, attrs, name=name or op_type, graph=graph)
    if not tout:
        return op
    return list(op.outputs) if is_list else op.outputs[0]


def py_func(func, inp, Tout, stateful=True, name=None):  # noqa: N803 - TF's argument name
    """`tf.py_func`: an op whose kernel calls ``func(*arrays)`` (numpy arrays of `inp`) in the
    process that built the graph.

    Args:
        func: returns one array (or value) per `Tout` dtype, of that dtype exactly.
        inp: the input tensors.
        Tout: a dtype (the op's one output) or a list of dtypes (a list of outputs; the op
            itself when empty).
        stateful: False makes a ``PyFuncStateless`` op (TF may then merge equal calls).

    Returns:
        A tensor of unknown shape, a list of them, or the op.
    """
    return _py_func("PyFunc" if stateful else "PyFuncStateless", func, inp, Tout, name)


def numpy_function(func=None, inp=None, Tout=None, stateful=True, name=None):  # noqa: N803 - TF's argument name
    """`tf.numpy_function`: `py_func` (numpy arrays in, numpy arrays out)."""
    return py_func(func, inp, Tout, stateful=stateful, name=name)


def py_function(func, inp, Tout, name=None):  # noqa: N803 - TF's argument name
    """`tf.py_function` (op ``EagerPyFunc``): `func` gets each input as an array with
    ``.numpy()`` (TF gives eager tensors) and its results are converted to `Tout`.

    nbdist has no eager mode to record `func`'s operations in, so the op has no gradient:
    `tf.gradients` through it raises `LookupError`.
    """
    return _py_func("EagerPyFunc", func, inp, Tout, name)
