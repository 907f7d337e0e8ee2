"""`tf.TensorArray`: an array of tensors of one dtype that loops write and read, as a value.

TF 1.x's TensorArray is a resource (``TensorArrayV3``) its ops update, ordered by a scalar
*flow* tensor. nbdist's `while_loop` body may not update a resource, so here the flow *is* the
array: a dense ``[size, *element_shape]`` tensor (ops/tensor_array_kernels.py). `write`,
`scatter`, `unstack` and `split` return a new TensorArray whose flow is a new tensor; `read`,
`gather`, `stack`, `concat` and `size` read the flow. A TensorArray in a `tf.while_loop`'s
loop variables or a `tf.cond` branch's outputs travels as its flow and is rebuilt after, as in
TF (`build_ta_with_new_flow`). Gradients are those of the ops (a write's value gets its row of
the flow's gradient).

    ta = tf.TensorArray(tf.float32, size=4)
    _, ta = tf.while_loop(lambda i, ta: i < 4,
                          lambda i, ta: (i + 1, ta.write(i, tf.cast(i * i, tf.float32))),
                          [0, ta])
    squares = ta.stack()  # [0., 1., 4., 9.]

Differences from TF, all from the array being a value: every element has one shape (with
``infer_shape=False`` too: writing elements of other shapes is refused when run); an element
written twice keeps the last value (TF refuses the second write); ``clear_after_read`` is
accepted and a read never clears; there is no `handle` resource (`handle` is the flow) and no
`grad()` (gradients come from `tf.gradients` through the ops).
"""

from nbdist.graph import dtypes as _dtypes
from nbdist.graph.graph import Tensor, get_default_graph
from nbdist.graph.tensor_shape import TensorShape, as_shape
from nbdist.ops import registry
from nbdist.ops import tensor_array_kernels as _kernels
from nbdist.ops.constant_op import convert_to_tensor
from nbdist.ops.shape_ops import get_static_value


def _static_int(tensor):
    value = get_static_value(tensor)
    return None if value is None else int(value)


class TensorArray:
    """`tf.TensorArray`: a list of `size` tensors of `dtype` (see the module's docstring).

    Args:
        dtype: the elements' dtype.
        size: the number of elements (an int or an int32 scalar tensor); required unless `flow`
            (or `handle`) is given.
        dynamic_size: let a write past the end grow the array (by default a fixed size).
        clear_after_read: accepted; nbdist's reads never clear an element.
        tensor_array_name: the array's name in error messages (default: its op's name).
        handle, flow: an existing array's flow (nbdist's handle is its flow).
        infer_shape: the first write fixes the elements' static shape; later writes of another
            shape raise ``ValueError`` while building.
        element_shape: the elements' shape, known up front (then the array exists before the
            first write and unwritten elements read as zeros).
        colocate_with_first_write_call: accepted (the array is a value: it goes where its ops go).
        name: the name scope of the array's op.

    Raises:
        ValueError: without a `size`, `flow` or `handle`.
    """

    def __init__(
        self,
        dtype,
        size=None,
        dynamic_size=None,
        clear_after_read=None,
        tensor_array_name=None,
        handle=None,
        flow=None,
        infer_shape=True,
        element_shape=None,
        colocate_with_first_write_call=True,
        name=None,
    ):
        del clear_after_read, colocate_with_first_write_call
        if handle is not None and tensor_array_name:
            raise ValueError("Cannot construct with both handle and tensor_array_name")
        flow = flow if flow is not None else handle
        if flow is None and size is None:
            raise ValueError("Argument `size` must be provided if handle is not provided.")
        self._dtype = _dtypes.as_dtype(dtype)
        self._dynamic_size = bool(dynamic_size)
        self._infer_shape = infer_shape
        self._element_shape = [as_shape(element_shape) if element_shape is not None else TensorShape(None)]
        graph = get_default_graph()
        with graph.name_scope(name or "TensorArray") as scope:
            self._size = convert_to_tensor(size if size is not None else 0, dtype=_dtypes.int32, name="size")
            if flow is None:
                attrs = {
                    "dtype": self._dtype,
                    "element_shape": self._element_shape[0],
                    "size_static": _static_int(self._size),
                    "tensor_array_name": tensor_array_name or "",
                }
                op = registry.make_op("TensorArrayNew", [self._size], attrs, name=scope)  # (TF's op name)
                if not tensor_array_name:
                    attrs["tensor_array_name"] = op.name
                flow = op.outputs[0]
            else:
                flow = convert_to_tensor(flow, dtype=self._dtype)
        self._flow = flow
        self._name = tensor_array_name or flow.op.name

    # -- properties --------------------------------------------------------------------------
    @property
    def dtype(self):
        """The elements' dtype."""
        return self._dtype

    @property
    def flow(self):
        """The tensor holding the array (``[size, *element_shape]``; rank 0 before a first write)."""
        return self._flow

    @property
    def handle(self):
        """nbdist's array has no resource: its handle is its `flow`."""
        return self._flow

    @property
    def element_shape(self):
        """The elements' static shape (`TensorShape`), known once given or first written."""
        return self._element_shape[0]

    @property
    def dynamic_size(self):
        """Whether a write past the end grows the array."""
        return self._dynamic_size

    # -- building --------------------------------------------------------------------------------
    def _with_flow(self, flow):
        ta = object.__new__(TensorArray)
        ta.__dict__.update(self.__dict__)  # the element shape list is shared, as TF's
        ta._flow = flow
        return ta

    def _merge_element_shape(self, shape):
        if not self._infer_shape:
            return
        if not shape.is_compatible_with(self._element_shape[0]):
            raise ValueError(f"Inconsistent shapes: saw {shape} but expected {self._element_shape[0]} ")
        self._element_shape[0] = self._element_shape[0].merge_with(shape)

    def _value(self, value):
        value = convert_to_tensor(value, preferred_dtype=self._dtype, name="value")
        if value.dtype != self._dtype:
            raise TypeError(
                f"TensorArray dtype is {self._dtype.name} but Op is trying to write dtype "
                f"{value.dtype.name}; cast the value (tf.cast) first"
            )
        return value

    def _attrs(self, **more):
        attrs = {
            "tensor_array_name": self._name,
            "dynamic_size": self._dynamic_size,
            "infer_shape": self._infer_shape,
            "size_static": _static_int(self._size),
            "element_shape": self._element_shape[0],
        }
        attrs.update(more)
        return attrs

    def _make(self, op_type, inputs, name, **attrs):
        with get_default_graph().name_scope(name or op_type):
            return registry.make_op(op_type, inputs, self._attrs(**attrs), name=op_type).outputs[0]

    # -- writes ------------------------------------------------------------------------------------
    def write(self, index, value, name=None):
        """A TensorArray with `value` at `index` (an int32 scalar).

        Raises:
            ValueError: `value`'s static shape differs from the elements' (with `infer_shape`).
            InvalidArgumentError: when run, `index` past the end of a fixed-size array or negative,
                or a value of another shape than the elements written before.
        """
        value = self._value(value)
        index = convert_to_tensor(index, dtype=_dtypes.int32, name="index")
        self._merge_element_shape(value.shape)
        flow = self._make(
            "TensorArrayWrite", [self._flow, index, value, self._size], name or "TensorArrayWrite"
        )
        return self._with_flow(flow)

    def scatter(self, indices, value, name=None):
        """A TensorArray with ``value[k]`` at ``indices[k]``."""
        value = self._value(value)
        indices = convert_to_tensor(indices, dtype=_dtypes.int32, name="indices")
        n, rows = indices.shape[0] if indices.shape.ndims == 1 else None, value.shape[:1]
        if value.shape.ndims and n is not None and rows[0] is not None and rows[0] != n:
            raise ValueError(
                f"Dimensions must be equal, but are {rows[0]} and {n} for TensorArrayScatter: value "
                f"{value.name} has {rows[0]} rows for {n} indices"
            )
        if value.shape.ndims:
            self._merge_element_shape(value.shape[1:])
        flow = self._make(
            "TensorArrayScatter", [self._flow, indices, value, self._size], name or "TensorArrayScatter"
        )
        return self._with_flow(flow)

    def unstack(self, value, name=None):
        """A TensorArray whose elements are `value`'s rows (a scatter to ``0..len(value)-1``).

        Raises:
            ValueError: `value` is a scalar.
        """
        from nbdist.ops.math_ops import range as _range  # noqa: PLC0415 - math ops build on this module's peers
        from nbdist.ops.shape_ops import shape  # noqa: PLC0415

        with get_default_graph().name_scope(name or "TensorArrayUnstack"):
            value = self._value(value)
            if value.shape.ndims == 0:
                raise ValueError(
                    f"TensorArray.unstack needs a value of rank >= 1, got the scalar {value.name}"
                )
            return self.scatter(_range(0, shape(value, out_type=_dtypes.int32)[0]), value)

    def split(self, value, lengths, name=None):
        """A TensorArray whose elements are consecutive pieces of `value` (``lengths[k]`` rows
        each; nbdist's elements share one shape, so the lengths must be equal)."""
        value = self._value(value)
        lengths = convert_to_tensor(lengths, preferred_dtype=_dtypes.int64, name="lengths")
        known = get_static_value(lengths)
        element = TensorShape(None)
        if value.shape.ndims is not None and known is not None and len(known) and (known == known[0]).all():
            element = TensorShape([int(known[0])]).concatenate(value.shape[1:])
            self._merge_element_shape(element)
        elif value.shape.ndims is not None:
            element = TensorShape([None]).concatenate(value.shape[1:])
        flow = self._make(
            "TensorArraySplit",
            [self._flow, value, lengths, self._size],
            name or "TensorArraySplit",
            split_element_shape=element,
        )
        return self._with_flow(flow)

    # -- reads ----------------------------------------------------------------------------------------
    def read(self, index, name=None):
        """The element at `index`.

        Raises:
            InvalidArgumentError: when run, `index` outside the array, or nothing written yet
                and no `element_shape` given.
        """
        index = convert_to_tensor(index, dtype=_dtypes.int32, name="index")
        return self._make("TensorArrayRead", [self._flow, index], name or "TensorArrayRead")

    def gather(self, indices, name=None):
        """The elements at `indices`, stacked."""
        indices = convert_to_tensor(indices, dtype=_dtypes.int32, name="indices")
        return self._make("TensorArrayGather", [self._flow, indices], name or "TensorArrayGather")

    def stack(self, name=None):
        """All the elements, stacked: ``[size, *element_shape]``."""
        from nbdist.ops.math_ops import range as _range  # noqa: PLC0415

        with get_default_graph().name_scope(name or "TensorArrayStack"):
            value = self.gather(_range(0, self.size()))
            size = _static_int(self._size)
            if self.element_shape.ndims is not None and not self._dynamic_size and size is not None:
                value.set_shape(TensorShape([size]).concatenate(self.element_shape))
            return value

    def concat(self, name=None):
        """All the elements concatenated along their first dimension."""
        return self._make("TensorArrayConcat", [self._flow, self._size], name or "TensorArrayConcat")

    def size(self, name=None):
        """The number of elements (an int32 scalar)."""
        return self._make("TensorArraySize", [self._flow, self._size], name or "TensorArraySize")

    # -- the rest of TF's methods ---------------------------------------------------------------------
    def identity(self):
        """A TensorArray whose flow is an Identity of this one's (for control dependencies)."""
        from nbdist.ops.unary_ops import identity  # noqa: PLC0415

        return self._with_flow(identity(self._flow))

    def close(self, name=None):
        """A no-op (nbdist's array is a value; nothing to free)."""
        from nbdist.ops.control_flow_ops import no_op  # noqa: PLC0415

        return no_op(name=name or "TensorArrayClose")

    def __repr__(self):
        return (
            f"<nbdist.TensorArray {self._name!r} dtype={self._dtype.name} element_shape={self.element_shape}>"
        )


def build_ta_with_new_flow(old_ta, flow):
    """`old_ta` with `flow` as its array (TF's name): how a loop or cond rebuilds a TensorArray."""
    if not isinstance(flow, Tensor):
        raise TypeError(f"a TensorArray's flow must be a tensor, got {flow!r}")
    return old_ta._with_flow(flow)


def to_flows(flat):
    """`flat` with each TensorArray replaced by its flow."""
    return [x.flow if isinstance(x, TensorArray) else x for x in flat]


def from_flows(templates, flat):
    """`flat` with each item whose template is a TensorArray rebuilt as one (on that flow)."""
    return [
        build_ta_with_new_flow(t, x) if isinstance(t, TensorArray) else x for t, x in zip(templates, flat)
    ]


__all__ = ["TensorArray"]
del _kernels  # (imported for its ops' registrations)
