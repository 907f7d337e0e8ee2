"""nbdist: TensorFlow 1.x's distributed programming model on numpy + ZeroMQ.

``import nbdist as tf`` gives the documented subset of TF 1.x's API (docs/api.md)
at the same paths: ``tf.placeholder``, ``tf.nn.relu``, ``tf.train.Server``, ...
A TF name nbdist does not support raises an `AttributeError` that says so.
"""

import platform as _platform

from nbdist import errors
from nbdist._facade import export_all as _export_all
from nbdist._facade import unsupported as _unsupported
from nbdist._widget_names import TF_WIDGETS as _TF_WIDGETS  # names only: no notebook code
from nbdist.errors import OpError
from nbdist.export.from_tf import import_graph_def  # nbdist's, also taking TF's GraphDef protos
from nbdist.graph.default_session import get_default_session
from nbdist.graph.device import DeviceSpec
from nbdist.graph.dtypes import (
    QUANTIZED_DTYPES,
    DType,
    as_dtype,
    bool,  # noqa: A004 - TF's public name tf.bool
    complex64,
    complex128,
    double,
    float16,
    float32,
    float64,
    half,
    int8,
    int16,
    int32,
    int64,
    qint8,
    qint16,
    qint32,
    quint8,
    quint16,
    resource,
    string,
    uint8,
    uint16,
    uint32,
    uint64,
    variant,
)
from nbdist.graph.graph import (
    Graph,
    GraphKeys,
    Operation,
    Tensor,
    add_to_collection,
    colocate_with,
    container,
    control_dependencies,
    device,
    get_collection,
    get_collection_ref,
    get_default_graph,
    name_scope,
    reset_default_graph,
)
from nbdist.graph.graph_def import GRAPH_DEF_VERSION as _GRAPH_DEF_VERSION
from nbdist.graph.tensor_shape import TensorShape
from nbdist.ops import accumulator_ops as _accumulator_ops
from nbdist.ops import array_extra_ops as _array_extra_ops
from nbdist.ops import array_ops as _array_ops
from nbdist.ops import bfloat16_ops as _bfloat16_ops
from nbdist.ops import check_ops as _check_ops
from nbdist.ops import clip_ops as _clip_ops
from nbdist.ops import complex_ops as _complex_ops
from nbdist.ops import cond_ops as _cond_ops
from nbdist.ops import control_flow_ops as _control_flow_ops
from nbdist.ops import conv_generic_ops as _conv_generic_ops
from nbdist.ops import custom_gradient_ops as _custom_gradient_ops
from nbdist.ops import einsum_ops as _einsum_ops
from nbdist.ops import example_parsing_ops as _example_parsing_ops
from nbdist.ops import fft_ops as _fft_ops
from nbdist.ops import index_ops as _index_ops
from nbdist.ops import init_ops as _init_ops
from nbdist.ops import int_div_ops as _int_div_ops
from nbdist.ops import linalg_decomp_ops as _linalg_decomp_ops
from nbdist.ops import linalg_matfunc_ops as _linalg_matfunc_ops
from nbdist.ops import linalg_ops as _linalg_ops
from nbdist.ops import linalg_solve_ops as _linalg_solve_ops
from nbdist.ops import logging_ops as _logging_ops
from nbdist.ops import math_ops as _math_ops
from nbdist.ops import parsing_ops as _parsing_ops
from nbdist.ops import patches_ops as _patches_ops
from nbdist.ops import queue_more_ops as _queue_more_ops
from nbdist.ops import queue_ops as _queue_ops
from nbdist.ops import random_ops as _random_ops
from nbdist.ops import reader_ops as _reader_ops
from nbdist.ops import reduction_ops as _reduction_ops
from nbdist.ops import scan_ops as _scan_ops
from nbdist.ops import scatter_nd_ops as _scatter_nd_ops
from nbdist.ops import scope_helpers as _scope_helpers
from nbdist.ops import script_ops as _script_ops
from nbdist.ops import segment_ops as _segment_ops
from nbdist.ops import sequence_example_ops as _sequence_example_ops
from nbdist.ops import session_ops as _session_ops
from nbdist.ops import slice_ops as _slice_ops  # installs Tensor.__getitem__
from nbdist.ops import sort_search_ops as _sort_search_ops
from nbdist.ops import space_batch_ops as _space_batch_ops
from nbdist.ops import sparse_extra_ops as _sparse_extra_ops
from nbdist.ops import sparse_feature as _sparse_feature
from nbdist.ops import sparse_math_ops as _sparse_math_ops
from nbdist.ops import sparse_ops as _sparse_ops
from nbdist.ops import sparse_serialize_ops as _sparse_serialize_ops
from nbdist.ops import sparse_tensor as _sparse_tensor
from nbdist.ops import special_math_ops as _special_math_ops
from nbdist.ops import state_ops as _state_ops
from nbdist.ops import state_scatter_ops as _state_scatter_ops
from nbdist.ops import statistics_ops as _statistics_ops
from nbdist.ops import string_codec_ops as _string_codec_ops
from nbdist.ops import string_hash_ops as _string_hash_ops
from nbdist.ops import string_ops as _string_ops
from nbdist.ops import summary_ops as _summary_ops  # registers the summary ops
from nbdist.ops import template as _template
from nbdist.ops import tensor_array_ops as _tensor_array_ops
from nbdist.ops import tensor_conversion as _tensor_conversion
from nbdist.ops import tensor_proto_ops as _tensor_proto_ops
from nbdist.ops import tile_ops as _tile_ops
from nbdist.ops import timestamp_ops as _timestamp_ops
from nbdist.ops import training_ops as _training_ops  # registers the Apply* ops
from nbdist.ops import type_spec as _type_spec
from nbdist.ops import variable_creation as _variable_creation
from nbdist.ops import variable_scope as _variable_scope
from nbdist.ops import vectorized_map_ops as _vectorized_map_ops
from nbdist.ops import while_ops as _while_ops
from nbdist.ops.constant_op import constant, convert_to_tensor
from nbdist.ops.gradients import AggregationMethod, UnconnectedGradients, gradients
from nbdist.ops.indexed_slices import IndexedSlices
from nbdist.runtime.config import (
    ConfigProto,
    GPUOptions,
    GraphOptions,
    OptimizerOptions,
    RunMetadata,
    RunOptions,
)
from nbdist.runtime.session import InteractiveSession, Session

# Public functions of the op modules that are not TF 1.x names at tf.* (they live at tf.nn.*
# or are nbdist's own helpers for gradients).
_NOT_AT_TF = {
    "sum_to_shape",
    "broadcast_to_like",
    "relu",
    "softplus",
    "with_dependencies",
    "read_variable_now",
    # tf.math only (special_math_ops)
    "bessel_i0",
    "bessel_i0e",
    "bessel_i1",
    "bessel_i1e",
    "erfcinv",
    "erfinv",
    "ndtri",
    "sobol_sample",
}
_export_all(
    globals(),
    _math_ops,
    _array_ops,
    _reduction_ops,
    _scan_ops,
    _segment_ops,
    _statistics_ops,
    _complex_ops,
    _random_ops,
    _control_flow_ops,
    _check_ops,
    _logging_ops,
    _custom_gradient_ops,
    _script_ops,
    _cond_ops,
    _while_ops,
    _tensor_array_ops,
    _vectorized_map_ops,
    _state_ops,
    _init_ops,
    _variable_scope,
    _variable_creation,
    _scope_helpers,
    _template,
    _timestamp_ops,
    _bfloat16_ops,
    _session_ops,
    _type_spec,
    _queue_ops,
    _queue_more_ops,
    _accumulator_ops,
    _index_ops,
    _clip_ops,
    _linalg_ops,
    _linalg_solve_ops,
    _linalg_decomp_ops,
    _linalg_matfunc_ops,
    _einsum_ops,
    _parsing_ops,
    _example_parsing_ops,
    _sequence_example_ops,
    _sparse_tensor,
    _sparse_ops,
    _sparse_serialize_ops,
    _sparse_feature,
    _sparse_math_ops,
    _reader_ops,
    _slice_ops,
    _string_ops,
    _tensor_conversion,
    _tensor_proto_ops,
    _string_hash_ops,
    _string_codec_ops,
    _scatter_nd_ops,
    _sort_search_ops,
    _int_div_ops,
    _state_scatter_ops,
    _sparse_extra_ops,
    _tile_ops,
    _array_extra_ops,
    _space_batch_ops,
    _patches_ops,
    _special_math_ops,
    _fft_ops,
    _conv_generic_ops,
    exclude=_NOT_AT_TF,
)
from nbdist import data, layers, losses, metrics, nn, python_io, sparse, summary, train  # noqa: E402 - the namespaces use the names above
from nbdist.ns import debugging, image, initializers, io, linalg, math, random, strings  # noqa: E402 - tf.math, ... (TF's other paths of these names)
from nbdist.platform import app, flags, gfile, test  # noqa: E402 - tf.app, tf.flags (absl's, as TF 1.x), tf.gfile, tf.test
from nbdist.platform import tf_logging as logging  # noqa: E402 - tf.logging
from nbdist.platform.tf_logging import get_logger  # noqa: E402 - tf.get_logger: tf.logging's logger
from nbdist.platform.v2_switches import *  # noqa: E402, F403 - tf.disable_v2_behavior() and the others: no-ops

__version__ = "0.1.0"
# TF's version names, saying what this is: nbdist's version, built by this Python.
VERSION = __version__
GIT_VERSION = __git_version__ = f"nbdist-v{__version__}"
COMPILER_VERSION = __compiler_version__ = f"CPython {_platform.python_version()}"
GRAPH_DEF_VERSION = _GRAPH_DEF_VERSION
# nbdist reads GraphDefs of every version and writes ones every version reads (it checks none).
GRAPH_DEF_VERSION_MIN_CONSUMER = 0
GRAPH_DEF_VERSION_MIN_PRODUCER = 0
# TF's build facts: nbdist builds no C++ (a Python package on numpy), so each is 0.
CXX11_ABI_FLAG = 0
CXX_VERSION = 0
MONOLITHIC_BUILD = 0


# The notebook layer loads on first use, so `import nbdist` stays light (no IPython, no widgets).
_NOTEBOOK_NAMES = {
    "LocalCluster": "nbdist.notebook.local_cluster",
    "report": "nbdist.notebook.event_stream",
    "report_trace": "nbdist.notebook.event_stream",
    "load_ipython_extension": "nbdist.notebook.magics",
    "unload_ipython_extension": "nbdist.notebook.magics",
    **dict.fromkeys(_TF_WIDGETS, "nbdist.notebook.widgets"),
    "export_chrome_trace": "nbdist.notebook.trace",
}
# nbdist's own names beside TF's (tests/test_facade.py checks that every other name is TF's).
_NBDIST_ADDITIONS = [*_NOTEBOOK_NAMES]  # (`tuple` here is tf.tuple)
_MODULES = ("export",)  # tf.export: graduation to real TensorFlow (imports TensorFlow on use)
# TF's protobuf classes (tf.Summary, tf.Event, tf.GraphDef, ...): tensorboardX's wire-compatible
# messages (`nbdist.ops.summary_protos`), loaded on first use.
_PROTOS = (
    "AttrValue",
    "Event",
    "GraphDef",
    "HistogramProto",
    "LogMessage",
    "NameAttrList",
    "NodeDef",
    "SessionLog",
    "Summary",
    "SummaryMetadata",
)


def __dir__():
    """The names, those made on first use too (TF's: `tf.bfloat16`, the protocol buffers)."""
    lazy = [*_PROTOS, *(["bfloat16"] if _bfloat16_available() else [])]
    return sorted({*globals(), *lazy})


def _bfloat16_available():
    import importlib.util  # noqa: PLC0415

    return importlib.util.find_spec("ml_dtypes") is not None


def __getattr__(name):
    if name == "bfloat16":  # made on first use (graph/dtypes.py: ml_dtypes is slow to import)
        from nbdist.graph import dtypes  # noqa: PLC0415

        return dtypes.bfloat16
    if name in _MODULES:
        import importlib  # noqa: PLC0415

        return importlib.import_module(f"nbdist.{name}")
    if name in _PROTOS:
        from nbdist.ops import summary_protos  # noqa: PLC0415 - tensorboardX loads on first use

        return getattr(summary_protos.load(), name)
    module = _NOTEBOOK_NAMES.get(name)
    if module is not None:
        import importlib  # noqa: PLC0415

        # Bound here once loaded: `tf.report` after every training step must not come through
        # this hook (a failed attribute lookup costs microseconds: docs/benchmarks.md).
        value = globals()[name] = getattr(importlib.import_module(module), name)
        return value
    return _unsupported("tf", name)
