"""`tf.data.Iterator`: an iterator is a resource of kind ``"iterator"`` on the task that holds it.

Its creator op (``IteratorV2``, or ``OneShotIterator``) is placed like any op; its other ops
take it as a ref input, so they run where it lives — a worker or a ps of a real cluster:

- ``MakeIterator`` (`Iterator.initializer`, `make_initializer`) starts the pipeline from its
  ``dataset`` attr (the plain-data spec of `nbdist.ops.dataset_ops`, run by
  `nbdist.ops.dataset_runner`) and its input values (the pipeline's tensors: fed
  placeholders work); running it again starts over;
- ``IteratorGetNext`` (`get_next()`) returns the next element, `OutOfRangeError` at the
  end (TF's end of data), `FailedPreconditionError` before initialization;
- ``OneShotIterator`` carries the spec *and* its constant values as attrs, so the iterator
  starts itself when first used on its task.

An iterator with a `shared_name` outlives sessions on its task and is shared by them, as
a variable is; without one, each session has its own (as in TF). `tf.Session.reset`
clears both.
"""

import threading

import numpy as np

from nbdist import errors
from nbdist.graph import dtypes as _dtypes
from nbdist.graph.graph import get_default_graph
from nbdist.graph.tensor_shape import TensorShape
from nbdist.ops import dataset_runner, registry
from nbdist.ops.element_spec import ElementSpec, pack_as

_NOT_INITIALIZED = (
    "GetNext() failed because the iterator has not been initialized. Ensure that you have run the "
    "initializer operation for this iterator before getting the next element."
)


class IteratorResource:
    """The state of one iterator: the running pipeline (None until initialized)."""

    def __init__(self, name, device, attrs):
        self.name = name
        self.device = device
        self.output_types = list(attrs["output_types"])
        self.lock = threading.Lock()
        self.elements = None
        # A one-shot iterator starts itself, at its first get_next (its functions run then).
        self.pending = (attrs["dataset"], attrs["leaves"]) if "dataset" in attrs else None

    def start(self, spec, leaves, node_name, run_function):
        """Starts the pipeline `spec`; `run_function(subgraph, values)` runs its functions
        (`StepContext.function_runner`)."""
        self.pending = None
        self.elements = dataset_runner.elements(spec, leaves, node_name, run_function)

    def next(self, node, run_function):
        if self.pending is not None:
            self.start(*self.pending, self.name, run_function)
        if self.elements is None:
            raise errors.FailedPreconditionError(
                node.name, None, f"{_NOT_INITIALIZED} (iterator {self.name!r} on {self.device})"
            )
        try:
            element = next(self.elements)
        except StopIteration:
            raise errors.OutOfRangeError(node.name, None, "End of sequence") from None
        return tuple(np.asarray(v, dtype=t.np) for v, t in zip(element, self.output_types))


# Without a shared_name each session has its own iterator, as in TF.
ITERATOR = registry.resource_kind(
    "iterator", IteratorResource, attrs=("output_types", "output_shapes"), per_session=True
)


def _handle_shape(inputs, attrs):
    return [(_dtypes.string, TensorShape(()))]


def _creator_kernel(ctx, node):
    return np.array(ctx.resources.resource(ITERATOR, node, session=ctx.session).name.encode(), dtype=object)


for _creator in ("IteratorV2", "OneShotIterator"):
    registry.declare(_creator, creates="iterator", stateful=True)
    registry.shape(_creator)(_handle_shape)
    registry.kernel(_creator)(_creator_kernel)
    registry.no_gradient(_creator)

registry.declare("MakeIterator", ref_inputs={0: "iterator"}, stateful=True)
registry.shape("MakeIterator")(lambda inputs, attrs: [])
registry.no_gradient("MakeIterator")


@registry.kernel("MakeIterator")
def _make_iterator_kernel(ctx, node, iterator, *leaves):
    with iterator.lock:
        iterator.start(node.attr["dataset"], leaves, node.name, ctx.function_runner())


registry.declare("IteratorGetNext", ref_inputs={0: "iterator"}, stateful=True)
registry.no_gradient("IteratorGetNext")


@registry.shape("IteratorGetNext")
def _get_next_shape(inputs, attrs):
    return list(zip(attrs["output_types"], attrs["output_shapes"]))


@registry.kernel("IteratorGetNext")
def _get_next_kernel(ctx, node, iterator):
    with iterator.lock:
        values = iterator.next(node, ctx.function_runner())
    return values[0] if len(values) == 1 else values


class Iterator:
    """`tf.data.Iterator` (TF 1.x): `initializer`, `get_next()`, `make_initializer(dataset)`.

    Made by `Dataset.make_initializable_iterator()`, `Dataset.make_one_shot_iterator()` or
    `Iterator.from_structure(output_types, output_shapes)` (one iterator, several datasets).
    """

    def __init__(self, handle, initializer, element_spec):
        self._handle = handle  # the creator's output: the ref input of the iterator's ops
        self._initializer = initializer
        self.element_spec = element_spec

    @staticmethod
    def from_dataset(dataset, shared_name=None):
        element = dataset.element_spec
        iterator = Iterator(_creator("IteratorV2", element, shared_name), None, element)
        iterator._initializer = iterator.make_initializer(dataset)
        return iterator

    @staticmethod
    def from_structure(output_types, output_shapes=None, shared_name=None, output_classes=None):
        """An iterator for any dataset with these element types (and compatible shapes)."""
        element = ElementSpec.from_types(output_types, output_shapes)
        return Iterator(_creator("IteratorV2", element, shared_name), None, element)

    @property
    def initializer(self):
        if self._initializer is None:
            raise ValueError(
                "this iterator has no initializer: it was made by from_structure (use "
                "make_initializer(dataset)) or is one-shot (it needs none)"
            )
        return self._initializer

    @property
    def output_types(self):
        return self.element_spec.output_types

    @property
    def output_shapes(self):
        return self.element_spec.output_shapes

    @property
    def output_classes(self):
        return self.element_spec.output_classes

    def make_initializer(self, dataset, name=None):
        """An op that (re)starts this iterator on `dataset`.

        Raises:
            TypeError: `dataset`'s element types differ from the iterator's.
        """
        if dataset.element_spec.dtypes != self.element_spec.dtypes:
            raise TypeError(
                f"Expected output types {self.output_types} but got dataset with output types "
                f"{dataset.output_types}"
            )
        leaves = []
        spec = dataset.to_spec(leaves)
        return registry.make_op(
            "MakeIterator", [self._handle, *leaves], {"dataset": spec}, name=name or "MakeIterator"
        )

    def get_next(self, name=None):
        """The next element (same structure as the dataset's); `OutOfRangeError` at the end."""
        element = self.element_spec
        attrs = {"output_types": element.dtypes, "output_shapes": element.shapes}
        op = registry.make_op("IteratorGetNext", [self._handle], attrs, name=name or "IteratorGetNext")
        return pack_as(element.structure, op.outputs)

    def __repr__(self):
        return f"<tf.data.Iterator {self._handle.op.name} types: {self.output_types}>"


def _creator(op_type, element, shared_name=None, extra=None):
    attrs = {"output_types": list(element.dtypes), "output_shapes": list(element.shapes), **(extra or {})}
    if shared_name:
        attrs["shared_name"] = shared_name
    container = get_default_graph().current_container()
    if container:
        attrs["container"] = container
    name = "OneShotIterator" if op_type == "OneShotIterator" else "Iterator"
    return registry.make_op(op_type, [], attrs, name=name).outputs[0]


def one_shot_iterator(dataset):
    """`make_one_shot_iterator`: the spec and its constant values ride in the creator's attrs.

    Raises:
        ValueError: the pipeline uses a tensor that is not a constant (a placeholder, a
            variable): use `make_initializable_iterator` and feed it instead.
    """
    leaves = []
    spec = dataset.to_spec(leaves)
    values = []
    for t in leaves:
        if t.op.type != "Const":
            raise ValueError(
                f"make_one_shot_iterator() cannot capture {t.name} ({t.op.type}) by value: a one-shot "
                "iterator carries its data as constants. Use make_initializable_iterator() (and feed "
                "the placeholder when running its initializer)"
            )
        values.append(t.op.get_attr("value"))
    extra = {"dataset": spec, "leaves": values}
    handle = _creator("OneShotIterator", dataset.element_spec, extra=extra)
    return Iterator(handle, None, dataset.element_spec)


def make_one_shot_iterator(dataset):
    """`tf.data.make_one_shot_iterator(dataset)` (TF 1.x's `tf.compat.v1.data` form)."""
    return dataset.make_one_shot_iterator()


def make_initializable_iterator(dataset, shared_name=None):
    """`tf.data.make_initializable_iterator(dataset)` (TF 1.x's `tf.compat.v1.data` form)."""
    return dataset.make_initializable_iterator(shared_name)


def get_output_types(dataset_or_iterator):
    return dataset_or_iterator.output_types


def get_output_shapes(dataset_or_iterator):
    return dataset_or_iterator.output_shapes


def get_output_classes(dataset_or_iterator):
    return dataset_or_iterator.output_classes
