"""`tf.timestamp`: the wall-clock time when the op runs (``Timestamp``), as TF's.

Seconds since the Unix epoch as a float64 scalar, read by the kernel each time the op runs
(stateful: never folded as a constant nor shared between two `tf.timestamp()` calls).
"""

import time

import numpy as np

from nbdist.graph import dtypes as _dtypes
from nbdist.graph.tensor_shape import TensorShape
from nbdist.ops import registry

__all__ = ["timestamp"]

registry.declare("Timestamp", stateful=True)
registry.shape("Timestamp")(lambda inputs, attrs: [(_dtypes.float64, TensorShape(()))])
registry.kernel("Timestamp")(lambda ctx, node: np.float64(time.time()))
registry.no_gradient("Timestamp")


def timestamp(name=None):
    """`tf.timestamp`: a float64 scalar, the seconds since the Unix epoch when the op runs."""
    return registry.make_op("Timestamp", [], name=name).outputs[0]
