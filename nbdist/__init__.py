"""nbdist: TensorFlow 1.x's distributed programming model on numpy + ZeroMQ.

``import nbdist as tf`` gives the documented subset of TF 1.x's API (docs/api.md)
at the same paths: ``tf.placeholder``, ``tf.nn.relu``, ``tf.train.Server``, ...
A TF name nbdist does not support raises an `AttributeError` that says so.
"""

from nbdist import errors
from nbdist.graph.device import DeviceSpec
from nbdist.graph.dtypes import (
    DType,
    as_dtype,
    bool,  # noqa: A004 - TF's public name tf.bool
    double,
    float16,
    float32,
    float64,
    half,
    int8,
    int16,
    int32,
    int64,
    string,
    uint8,
)
from nbdist.graph.graph import (
    Graph,
    GraphKeys,
    Operation,
    Tensor,
    add_to_collection,
    colocate_with,
    control_dependencies,
    device,
    get_collection,
    get_collection_ref,
    get_default_graph,
    get_default_session,
    name_scope,
    reset_default_graph,
)
from nbdist.graph.graph_def import import_graph_def
from nbdist.graph.tensor_shape import TensorShape
from nbdist.ops import array_ops as _array_ops
from nbdist.ops import control_flow_ops as _control_flow_ops
from nbdist.ops import math_ops as _math_ops
from nbdist.ops import state_ops as _state_ops
from nbdist.ops.constant_op import constant, convert_to_tensor
from nbdist.ops.gradients import gradients
from nbdist.runtime.config import ConfigProto, GPUOptions, RunMetadata, RunOptions
from nbdist.runtime.session import InteractiveSession, Session

from nbdist._facade import export_all as _export_all, unsupported as _unsupported

_export_all(globals(), _math_ops, _array_ops, _control_flow_ops, _state_ops)
from nbdist import nn, train  # noqa: E402 - the namespaces use the names above

__version__ = "0.1.0"


def __getattr__(name):
    return _unsupported("tf", name)
