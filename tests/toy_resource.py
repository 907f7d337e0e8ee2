"""A toy resource kind and two ops on it, declared only through the registry.

Used by tests/test_resource_kinds.py to show that a new kind of resource (here a counter;
next a FIFO queue or an accumulator) needs no edit to the executor, master or worker: it
is imported in the test process (to build the graph) and in a task process (to run it).
"""

import threading

import numpy as np

from nbdist.graph import dtypes
from nbdist.graph.tensor_shape import TensorShape
from nbdist.ops import registry
from nbdist.ops.constant_op import convert_to_tensor


class Counter:
    """A counter that outlives steps: `value` from the creator's ``start`` attr."""

    def __init__(self, name, device, attrs):
        self.name = name
        self.device = device
        self.value = int(attrs["start"])
        self.lock = threading.Lock()


COUNTER = registry.resource_kind("toy_counter", Counter, attrs=("start",))

# The creator: outputs the counter's current value (its kernel makes it on first use).
registry.declare("ToyCounter", creates="toy_counter", stateful=True)
registry.shape("ToyCounter")(lambda inputs, attrs: [(dtypes.int64, TensorShape(()))])
registry.kernel("ToyCounter")(lambda ctx, node: np.int64(ctx.resources.resource(COUNTER, node).value))
registry.no_gradient("ToyCounter")

# A user op: takes the counter itself (ref input 0) and an amount; returns the new value.
registry.declare("ToyCounterAdd", ref_inputs={0: "toy_counter"}, stateful=True)
registry.shape("ToyCounterAdd")(lambda inputs, attrs: [(dtypes.int64, TensorShape(()))])
registry.no_gradient("ToyCounterAdd")


@registry.kernel("ToyCounterAdd")
def _add(ctx, node, counter, amount):
    with counter.lock:
        counter.value += int(amount)
        return np.int64(counter.value)


def counter(start=0, name="ToyCounter", shared_name=None):
    attrs = {"start": start}
    if shared_name:
        attrs["shared_name"] = shared_name
    return registry.make_op("ToyCounter", [], attrs, name=name).outputs[0]


def counter_add(ref, amount, name="ToyCounterAdd"):
    return registry.make_op(
        "ToyCounterAdd", [ref, convert_to_tensor(amount, dtypes.int64)], name=name
    ).outputs[0]
