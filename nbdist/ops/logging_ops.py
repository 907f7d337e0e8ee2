"""Checking and printing tensors while a step runs: `tf.check_numerics` (op ``CheckNumerics``),
`tf.verify_tensor_all_finite`, `tf.add_check_numerics_ops`, `tf.Print` (op ``Print``, TF 1.x's:
logs its data to stderr and returns its input) and `tf.print` (``StringFormat`` + ``PrintV2``,
a stateful op with no output: run it or make something depend on it), and the type tests
`tf.is_tensor` / `tf.is_symbolic_tensor`.

The kernels print in the process that runs them - on a worker task, in that task's output, as
in TF. Messages show values as TF's kernels do (`nbdist.ops.tensor_format`).
"""

import os
import pprint
import sys
import threading
import weakref

import numpy as np

from nbdist import errors
from nbdist.graph import dtypes as _dtypes
from nbdist.graph.graph import Tensor, get_default_graph, name_scope
from nbdist.ops import nest, registry, string_ops
from nbdist.ops.constant_op import convert_to_tensor
from nbdist.ops.control_flow_ops import group, with_dependencies
from nbdist.ops.indexed_slices import IndexedSlices
from nbdist.ops.sparse_tensor import SparseTensor
from nbdist.ops.tensor_format import summarize_value
from nbdist.platform import tf_logging

__all__ = [
    "Print",
    "add_check_numerics_ops",
    "check_numerics",
    "is_symbolic_tensor",
    "is_tensor",
    "print",
    "verify_tensor_all_finite",
]

_LOOP_TYPES = ("Enter", "Exit", "While", "StatelessWhile")  # (a while_loop's ops, as TF refuses them)
_CHECKED = frozenset(_dtypes.as_dtype(t) for t in ("float16", "float32", "float64"))


# -- CheckNumerics -------------------------------------------------------------------------------
registry.shape("CheckNumerics")(lambda inputs, attrs: [(inputs[0].dtype, inputs[0].shape)])


@registry.kernel("CheckNumerics")
def _check_numerics_kernel(ctx, node, x):
    has_nan, has_inf = bool(np.isnan(x).any()), bool(np.isinf(x).any())
    if has_nan or has_inf:
        found = " and ".join(k for k, bad in (("Inf", has_inf), ("NaN", has_nan)) if bad)
        raise errors.InvalidArgumentError(
            node.name, None, f"{node.attr['message']} : Tensor had {found} values"
        )
    return x


@registry.gradient("CheckNumerics")
def _check_numerics_grad(op, grad):
    message = f"Not a number (NaN) or infinity (Inf) values detected in gradient. {op.get_attr('message')}"
    return [check_numerics(grad, message)]


def check_numerics(tensor, message, name=None):
    """`tf.check_numerics`: `tensor`, or a step failing with `InvalidArgumentError` ("`message`
    : Tensor had NaN values", naming the op) when it holds a NaN or an infinity. Its gradient
    passes through, checked the same way.

    Raises:
        TypeError: `tensor` is not float16, float32 or float64.
    """
    tensor = convert_to_tensor(tensor)
    if tensor.dtype not in _CHECKED:
        raise TypeError(
            f"Value passed to parameter 'tensor' has DataType {tensor.dtype.name} not in list of allowed "
            "values: bfloat16, float16, float32, float64"
        )
    attrs = {"T": tensor.dtype, "message": str(message)}
    return registry.make_op("CheckNumerics", [tensor], attrs, name=name or "CheckNumerics").outputs[0]


def verify_tensor_all_finite(t=None, msg=None, name=None, x=None, message=None):
    """`tf.verify_tensor_all_finite`: `t` (or `x`) once `check_numerics` passed on it."""
    t = x if t is None else t
    msg = message if msg is None else msg
    with name_scope(name, "VerifyFinite", [t]):
        t = convert_to_tensor(t, name="t")
        with get_default_graph().colocate_with(t.op):
            check = check_numerics(t, message=msg)
            return with_dependencies([check], t, name="control_dependency")


def add_check_numerics_ops():
    """`tf.add_check_numerics_ops`: one op running `check_numerics` on every float16/32/64
    output of the default graph, one after another in the graph's order (message ``op:index``).

    Raises:
        ValueError: an op inside `tf.cond` or `tf.while_loop` (as TF).
    """
    graph = get_default_graph()
    checks = []
    for op in graph.get_operations():
        for i, output in enumerate(op.outputs):
            if output.dtype not in _CHECKED:
                continue
            if getattr(op, "control_flow_context", None) is not None or op.type in _LOOP_TYPES:
                raise ValueError(
                    "`tf.add_check_numerics_ops() is not compatible with TensorFlow control flow "
                    "operations such as `tf.cond()` or `tf.while_loop()`."
                )
            with graph.control_dependencies(checks):
                checks = [check_numerics(output, message=f"{op.name}:{i}")]
    return group(*checks)


# -- Print (TF 1.x) -------------------------------------------------------------------------------
registry.declare("Print", stateful=True)
registry.shape("Print")(lambda inputs, attrs: [(inputs[0].dtype, inputs[0].shape)])
_printed = weakref.WeakKeyDictionary()  # resource manager (one per session/task) -> {node: count}
_printed_lock = threading.Lock()


@registry.kernel("Print")
def _print_kernel(ctx, node, x, *data):
    first_n = node.attr["first_n"]
    if first_n >= 0:
        with _printed_lock:
            counts = _printed.setdefault(ctx.resources, {})
            if counts.get(node.name, 0) >= first_n:
                return x
            counts[node.name] = counts.get(node.name, 0) + 1
    text = node.attr["message"] + "".join(f"[{summarize_value(d, node.attr['summarize'])}]" for d in data)
    sys.stderr.write(text + "\n")
    sys.stderr.flush()
    return x


@registry.gradient("Print")
def _print_grad(op, grad):
    return [grad] + [None] * (len(op.inputs) - 1)


def Print(input_, data, message=None, first_n=None, summarize=None, name=None):  # noqa: N802 - TF's tf.Print
    """`tf.Print` (TF 1.x): `input_`, and when it is computed `message` followed by each of
    `data` (``[1 2 3...]``: its first `summarize` entries, default 3) is written to stderr -
    every time, or the first `first_n` times per session.
    """
    input_ = convert_to_tensor(input_)
    data = [convert_to_tensor(d) for d in data]
    attrs = {
        "message": "" if message is None else str(message),
        "first_n": -1 if first_n is None else int(first_n),
        "summarize": 3 if summarize is None else int(summarize),
    }
    return registry.make_op("Print", [input_, *data], attrs, name=name or "Print").outputs[0]


# -- print (PrintV2) --------------------------------------------------------------------------------
registry.declare("PrintV2", stateful=True)
registry.shape("PrintV2")(lambda inputs, attrs: [])
registry.no_gradient("PrintV2")

_LOG_STREAMS = {
    "log(info)": tf_logging.info,
    "log(warning)": tf_logging.warning,
    "log(error)": tf_logging.error,
}


@registry.kernel("PrintV2")
def _print_v2_kernel(ctx, node, text):
    text = bytes(np.asarray(text).item()).decode("utf-8", "replace")
    stream, end = node.attr["output_stream"], node.attr["end"]
    if stream in ("stdout", "stderr"):
        out = sys.stdout if stream == "stdout" else sys.stderr
        out.write(text + end)
        out.flush()
    elif stream in _LOG_STREAMS:
        _LOG_STREAMS[stream]("%s", text + end.rstrip("\n"))
    elif stream.startswith("file://"):
        with open(stream[len("file://") :], "a", encoding="utf-8") as f:
            f.write(text + end)
    else:
        raise errors.InvalidArgumentError(node.name, None, f"unknown output stream {stream!r} of PrintV2")


def _stream_name(output_stream):
    """TF's name of an output stream: ``stdout``, ``stderr``, ``log(info)``, ... or the file."""
    if isinstance(output_stream, str) and output_stream.startswith("file://"):
        return output_stream
    streams = (
        (sys.stdout, "stdout"),
        (sys.stderr, "stderr"),
        (sys.__stdout__, "stdout"),
        (sys.__stderr__, "stderr"),
        (tf_logging.info, "log(info)"),
        (tf_logging.warning, "log(warning)"),
        (tf_logging.error, "log(error)"),
    )
    levels = {tf_logging.INFO: "log(info)", tf_logging.WARN: "log(warning)", tf_logging.ERROR: "log(error)"}
    found = next((name for stream, name in streams if output_stream is stream), None)
    if found is None and isinstance(output_stream, int) and not isinstance(output_stream, bool):
        found = levels.get(output_stream)
    if found is None:
        raise ValueError(
            f"Unsupported output stream, logging level, or file.{output_stream}. Supported streams are "
            "sys.stdout, sys.stderr, tf.logging.info, tf.logging.warning, tf.logging.error. File needs "
            "to be in the form of 'file://<filepath>'."
        )
    return found


def _is_printed_tensor(x):
    return isinstance(x, (Tensor, SparseTensor)) or hasattr(x, "_as_graph_element")


def print(*inputs, **kwargs):  # noqa: A001 - TF's public name tf.print
    """`tf.print`: a stateful op (`PrintV2`) writing `inputs` - tensors, and Python values and
    structures of them - separated by `sep` (" ") and followed by `end` (a newline), to
    `output_stream` (``sys.stderr``, ``sys.stdout``, ``tf.logging.info`` / ``warning`` /
    ``error`` or ``"file://path"``), each tensor as ``[0 1 ... 8 9]`` (`summarize` entries, 3,
    at each end of a dimension; -1: all). In graph mode it runs only when run or depended on.

    Raises:
        ValueError: an unsupported `output_stream`, or an unknown keyword argument.
    """
    output_stream = kwargs.pop("output_stream", sys.stderr)
    name = kwargs.pop("name", None)
    summarize = kwargs.pop("summarize", 3)
    sep = kwargs.pop("sep", " ")
    end = kwargs.pop("end", os.linesep)
    if kwargs:
        raise ValueError(f"Unrecognized keyword arguments for tf.print: {kwargs}")
    stream = _stream_name(output_stream)
    single = inputs[0] if len(inputs) == 1 else None
    if isinstance(single, Tensor) and single.shape.ndims == 0 and single.dtype == _dtypes.string:
        formatted = single  # (as TF: one string scalar is printed as it is)
    else:
        formatted = _format_inputs(inputs, sep, summarize, name)
    attrs = {"output_stream": stream, "end": end}
    return registry.make_op("PrintV2", [formatted], attrs, name=name or "PrintV2")


def _tensor_free(x):
    return nest.pack_sequence_as(x, ["" if _is_printed_tensor(v) else v for v in nest.flatten(x)])


def _format_inputs(inputs, sep, summarize, name):
    """TF's template: each input's `pprint` with its tensors as placeholders, one
    ``StringFormat`` op."""
    free = " ".join(pprint.pformat(_tensor_free(x)) for x in inputs)
    placeholder = "{}"
    while placeholder in free:
        placeholder += "0"
    templates, tensors = [], []
    for x in inputs:
        leaves = []
        for leaf in nest.flatten(x):
            if isinstance(leaf, SparseTensor):
                tensors += [leaf.indices, leaf.values, leaf.dense_shape]
                p = placeholder
                leaves.append(f"SparseTensor(indices={p}, values={p}, shape={p})")
            elif _is_printed_tensor(leaf):
                tensors.append(leaf)
                leaves.append(placeholder)
            else:
                leaves.append(leaf)
        templates.append(x if isinstance(x, str) else pprint.pformat(nest.pack_sequence_as(x, leaves)))
    template = sep.join(templates).replace(f"'{placeholder}'", placeholder)
    format_name = None if name is None else f"{name}_format"
    return string_ops.format(
        template, tensors, placeholder=placeholder, summarize=summarize, name=format_name
    )


# -- type tests ---------------------------------------------------------------------------------------
def is_tensor(x):
    """`tf.is_tensor`: a `Tensor`, `SparseTensor`, `IndexedSlices` or variable (not an array)."""
    return isinstance(x, (Tensor, SparseTensor, IndexedSlices)) or hasattr(x, "_as_graph_element")


def is_symbolic_tensor(tensor):
    """`tf.is_symbolic_tensor`: a graph `Tensor` (not a variable, `SparseTensor` or value)."""
    return isinstance(tensor, Tensor)
