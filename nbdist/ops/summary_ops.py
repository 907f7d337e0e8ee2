"""Summary ops: `tf.summary.scalar`, `histogram`, `image`, `text`, `merge`, `merge_all`.

Each is an ordinary op whose output is a scalar string tensor holding a serialized
``Summary`` protobuf, as in TF: it is placed, partitioned and run like any op (a summary
of a ps variable runs on the ps; its bytes cross the wire like any string tensor) and
`tf.summary.FileWriter` writes the fetched bytes to an event file. The op types and their
inputs are TF's (``ScalarSummary(tags, values)``, ``HistogramSummary(tag, values)``,
``ImageSummary(tag, tensor)`` (PNGs),
``TensorSummaryV2(tag, tensor, serialized_summary_metadata)``, ``MergeSummary(inputs)``),
so the graph TensorBoard shows is the one TF would record.

Tags follow TF's rule: the summary's name scope (``train/loss``, ``train/loss_1`` for a
second one), prefixed with ``family/`` when a family is given; characters TF does not allow
in a tag become ``_``. The protobuf classes come from tensorboardX (`summary_protos`),
loaded when a summary op is built or run.
"""

import contextlib
import logging
import re
import struct
import zlib

import numpy as np

from nbdist import errors
from nbdist.graph import dtypes as _dtypes
from nbdist.graph.graph import GraphKeys, add_to_collection, get_collection, get_default_graph
from nbdist.graph.tensor_shape import TensorShape
from nbdist.ops import registry, summary_protos
from nbdist.ops.constant_op import constant, convert_to_tensor

_log = logging.getLogger("nbdist")
_INVALID_TAG_CHARACTERS = re.compile(r"[^-/\w.]")
_TEXT_PLUGIN = "text"


# -- names, tags and collections (TF's summary_op_util) ------------------------------------------
def clean_tag(name):
    """`name` with characters TF does not allow in a tag replaced by ``_`` and leading ``/`` removed."""
    if name is None:
        return None
    cleaned = _INVALID_TAG_CHARACTERS.sub("_", name).lstrip("/")
    if cleaned != name:
        _log.info("Summary name %s is illegal; using %s instead.", name, cleaned)
    return cleaned


@contextlib.contextmanager
def summary_scope(name, family=None):
    """Opens the summary's name scope; yields ``(tag, scope)`` (TF's rule for both).

    ``scope`` ends in ``/``: as an op's name it names the op exactly after its scope.
    """
    name, family = clean_tag(name), clean_tag(family)
    with get_default_graph().name_scope(name if family is None else f"{family}/{name}") as scope:
        base = scope.rstrip("/")
        yield (base if family is None else f"{family}/{base}"), scope


def _collect(summary, collections, default):
    for key in default if collections is None else collections:
        add_to_collection(key, summary)


def _string_scalar(inputs, attrs):
    return [(_dtypes.string, TensorShape(()))]


def _as_bytes(value):
    value = value.item() if isinstance(value, np.ndarray) else value
    return value.encode() if isinstance(value, str) else bytes(value)


def _protos(node):
    """The protobuf classes, or a `FailedPreconditionError` naming the task's missing package."""
    try:
        return summary_protos.load()
    except ImportError as e:
        raise errors.FailedPreconditionError(node, None, str(e)) from None


def _serialized(summary):
    return np.array(summary.SerializeToString(), dtype=object)


# -- ScalarSummary -----------------------------------------------------------------------------
registry.shape("ScalarSummary")(_string_scalar)
registry.no_gradient("ScalarSummary")


@registry.kernel("ScalarSummary")
def _scalar_summary_kernel(ctx, node, tags, values):
    tags, values = np.asarray(tags, dtype=object), np.asarray(values)
    if tags.shape != values.shape:
        raise errors.InvalidArgumentError(
            None, None, f"tags and values not the same shape: {list(tags.shape)} != {list(values.shape)}"
        )
    pb = _protos(node)
    summary = pb.Summary()
    for tag, value in zip(tags.ravel(), values.ravel()):
        summary.value.add(tag=_as_bytes(tag).decode(), simple_value=float(value))
    return _serialized(summary)


def scalar(name, tensor, collections=None, family=None):
    """`tf.summary.scalar`: a summary of one real number (a loss, a learning rate).

    Args:
        name: the summary's name; with the enclosing name scopes it is the tag.
        tensor: a real numeric scalar tensor.
        collections: graph collections to add the summary to (default ``[SUMMARIES]``).
        family: an optional prefix of the tag (TensorBoard's tab).

    Returns:
        A scalar string tensor: a serialized ``Summary``.

    Raises:
        TypeError: `tensor` is not real numeric.
        ImportError: tensorboardX (a dependency) is missing from this environment.
    """
    summary_protos.load()
    with summary_scope(name, family) as (tag, scope):
        values = convert_to_tensor(tensor, name="values")
        if not (values.dtype.is_floating or values.dtype.is_integer):
            raise TypeError(
                f"tf.summary.scalar({name!r}) needs a real number tensor, got {values.dtype.name}"
            )
        tags = constant(tag, name="tags")
        op = registry.make_op("ScalarSummary", [tags, values], {"T": values.dtype}, name=scope)
    _collect(op.outputs[0], collections, [GraphKeys.SUMMARIES])
    return op.outputs[0]


# -- HistogramSummary --------------------------------------------------------------------------
def _default_bucket_limits():
    """TF's default histogram buckets: +-1e-12 growing by 10% up to 1e20, then +-DBL_MAX, and 0."""
    positive, v = [], 1.0e-12
    while v < 1.0e20:
        positive.append(v)
        v *= 1.1
    positive.append(np.finfo(np.float64).max)
    return np.array([-x for x in reversed(positive)] + [0.0, *positive])


_BUCKET_LIMITS = _default_bucket_limits()


def histogram_proto(values, pb):
    """The ``HistogramProto`` of `values` with TF's buckets and encoding (runs of empty buckets
    collapse into the last one of the run), so TensorBoard draws what TF would."""
    values = np.asarray(values, dtype=np.float64).ravel()
    limits = _BUCKET_LIMITS
    counts = np.bincount(
        np.minimum(np.searchsorted(limits, values, side="right"), len(limits) - 1), minlength=len(limits)
    )
    proto = pb.HistogramProto(
        num=float(values.size),
        # Sums in TF's order (one value after another), so the figures match TF's to the bit.
        sum=float(np.cumsum(values)[-1]) if values.size else 0.0,
        sum_squares=float(np.cumsum(values * values)[-1]) if values.size else 0.0,
        min=float(values.min()) if values.size else float(limits[-1]),
        max=float(values.max()) if values.size else float(limits[0]),
    )
    i = 0
    while i < len(counts):
        end, count = limits[i], counts[i]
        i += 1
        if count <= 0:
            while i < len(counts) and counts[i] <= 0:
                end = limits[i]
                i += 1
        proto.bucket_limit.append(float(end))
        proto.bucket.append(float(count))
    return proto


registry.shape("HistogramSummary")(_string_scalar)
registry.no_gradient("HistogramSummary")


@registry.kernel("HistogramSummary")
def _histogram_summary_kernel(ctx, node, tag, values):
    tag = _as_bytes(tag).decode()
    values = np.asarray(values, dtype=np.float64)
    if np.isnan(values).any():
        raise errors.InvalidArgumentError(None, None, f"Nan in summary histogram for: {tag}")
    if np.isinf(values).any():
        raise errors.InvalidArgumentError(None, None, f"Infinity in summary histogram for: {tag}")
    pb = _protos(node)
    summary = pb.Summary()
    summary.value.add(tag=tag, histo=histogram_proto(values, pb))
    return _serialized(summary)


def histogram(name, values, collections=None, family=None):
    """`tf.summary.histogram`: the distribution of a tensor's values (TensorBoard's histograms).

    Args:
        name: the summary's name; with the enclosing name scopes it is the tag.
        values: a real numeric tensor of any shape.
        collections: graph collections to add the summary to (default ``[SUMMARIES]``).
        family: an optional prefix of the tag.

    Returns:
        A scalar string tensor: a serialized ``Summary``. Running it fails with
        `InvalidArgumentError` when a value is NaN or infinite (as in TF).
    """
    summary_protos.load()
    with summary_scope(name, family) as (tag, scope):
        values = convert_to_tensor(values, name="values")
        if not (values.dtype.is_floating or values.dtype.is_integer):
            raise TypeError(
                f"tf.summary.histogram({name!r}) needs a real number tensor, got {values.dtype.name}"
            )
        tag_t = constant(tag, name="tag")
        op = registry.make_op("HistogramSummary", [tag_t, values], {"T": values.dtype}, name=scope)
    _collect(op.outputs[0], collections, [GraphKeys.SUMMARIES])
    return op.outputs[0]


# -- ImageSummary ----------------------------------------------------------------------------------
_BAD_COLOR = np.array([255, 0, 0, 255], np.uint8)  # TF's default for non-finite pixels: opaque red
_ZERO_THRESHOLD = 1e-6


def png_bytes(image):
    """A PNG file of an ``[height, width, channels]`` uint8 image (1, 3 or 4 channels)."""
    height, width, channels = image.shape
    color_type = {1: 0, 3: 2, 4: 6}[channels]  # grey, RGB, RGBA
    rows = np.concatenate([np.zeros((height, 1), np.uint8), image.reshape(height, width * channels)], axis=1)

    def chunk(kind, data):
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", width, height, 8, color_type, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows.tobytes()))
        + chunk(b"IEND", b"")
    )


def _as_uint8_image(image, bad_color):
    """TF's conversion of one float image: all >= 0 scales the largest to 255; with a negative
    value, 0 goes to 128 and the largest magnitude to 127 off it; non-finite pixels get
    `bad_color`. Values are truncated, as TF's cast does."""
    image = image.astype(np.float32)
    finite = np.isfinite(image).all(axis=-1)
    values = image[finite]
    low, high = (float(values.min()), float(values.max())) if values.size else (0.0, 0.0)
    if low < 0:
        bound = max(abs(low), abs(high))
        scale, offset = (0.0 if bound < _ZERO_THRESHOLD else 127.0 / bound), 128.0
    else:
        scale, offset = (0.0 if high < _ZERO_THRESHOLD else 255.0 / high), 0.0
    with np.errstate(invalid="ignore"):
        out = (image * np.float32(scale) + np.float32(offset)).astype(np.uint8)
    out[~finite] = bad_color[: image.shape[-1]]
    return out


registry.shape("ImageSummary")(_string_scalar)
registry.no_gradient("ImageSummary")


@registry.kernel("ImageSummary")
def _image_summary_kernel(ctx, node, tag, tensor):
    tag = _as_bytes(tag).decode()
    if tensor.ndim != 4 or tensor.shape[-1] not in (1, 3, 4):
        raise errors.InvalidArgumentError(
            None, None, f"Tensor must be 4-D with last dim 1, 3, or 4, not {list(tensor.shape)}"
        )
    pb = _protos(node)
    summary, max_images = pb.Summary(), node.attr["max_images"]
    bad_color = np.asarray(node.attr["bad_color"], np.uint8)
    for i, image in enumerate(tensor[:max_images]):
        if image.dtype != np.uint8:
            image = _as_uint8_image(image, bad_color)
        height, width, channels = image.shape
        summary.value.add(
            tag=f"{tag}/image" if max_images == 1 else f"{tag}/image/{i}",
            image=pb.Summary.Image(
                height=height, width=width, colorspace=channels, encoded_image_string=png_bytes(image)
            ),
        )
    return _serialized(summary)


def image(name, tensor, max_outputs=3, collections=None, family=None):
    """`tf.summary.image`: up to `max_outputs` images of a ``[batch, height, width, channels]``
    tensor (1, 3 or 4 channels; uint8 as is, floats scaled as TF does), as PNGs.

    Tags are ``name/image/0``, ``name/image/1``, ... (``name/image`` when `max_outputs` is 1).
    """
    summary_protos.load()
    with summary_scope(name, family) as (tag, scope):
        tensor = convert_to_tensor(tensor, name="tensor")
        if tensor.dtype.name not in ("uint8", "float16", "float32", "float64"):
            raise TypeError(
                f"tf.summary.image({name!r}) needs uint8 or float images, got {tensor.dtype.name}"
            )
        attrs = {"T": tensor.dtype, "max_images": int(max_outputs), "bad_color": _BAD_COLOR.copy()}
        op = registry.make_op("ImageSummary", [constant(tag, name="tag"), tensor], attrs, name=scope)
    _collect(op.outputs[0], collections, [GraphKeys.SUMMARIES])
    return op.outputs[0]


# -- TensorSummaryV2 (tf.summary.text) ---------------------------------------------------------------
registry.shape("TensorSummaryV2")(_string_scalar)
registry.no_gradient("TensorSummaryV2")


@registry.kernel("TensorSummaryV2")
def _tensor_summary_kernel(ctx, node, tag, tensor, serialized_metadata):
    pb = _protos(node)
    summary = pb.Summary()
    value = summary.value.add(tag=_as_bytes(tag).decode())
    value.metadata.ParseFromString(_as_bytes(serialized_metadata))
    value.tensor.CopyFrom(summary_protos.tensor_proto(np.asarray(tensor), pb))
    return _serialized(summary)


def text(name, tensor, collections=None):
    """`tf.summary.text`: string tensors shown as text (markdown) in TensorBoard's Text tab.

    Raises:
        ValueError: `tensor` is not a string tensor (TF's message).
    """
    pb = summary_protos.load()
    tensor = convert_to_tensor(tensor)
    if tensor.dtype is not _dtypes.string:
        raise ValueError("Expected tensor %s to have dtype string, got %s" % (tensor.name, tensor.dtype.name))  # noqa: UP031 - TF's message
    metadata = pb.SummaryMetadata()
    metadata.plugin_data.plugin_name = _TEXT_PLUGIN
    with summary_scope(name) as (tag, scope):
        inputs = [
            constant(tag, name="tag"),
            tensor,
            constant(metadata.SerializeToString(), name="serialized_summary_metadata"),
        ]
        op = registry.make_op("TensorSummaryV2", inputs, {"T": tensor.dtype}, name=scope)
    _collect(op.outputs[0], collections, [GraphKeys.SUMMARIES])
    return op.outputs[0]


# -- MergeSummary -------------------------------------------------------------------------------------
registry.shape("MergeSummary")(_string_scalar)
registry.no_gradient("MergeSummary")


@registry.kernel("MergeSummary")
def _merge_summary_kernel(ctx, node, *inputs):
    pb = _protos(node)
    merged, tags = pb.Summary(), set()
    for serialized in (s for arr in inputs for s in np.asarray(arr, dtype=object).ravel()):
        summary = pb.Summary()
        try:
            summary.ParseFromString(_as_bytes(serialized))
        except Exception:  # noqa: BLE001 - protobuf's DecodeError: the input is not a Summary
            raise errors.InvalidArgumentError(
                None, None, "Could not parse one of the summary inputs"
            ) from None
        for value in summary.value:
            if value.tag in tags:
                raise errors.InvalidArgumentError(
                    None, None, f"Duplicate tag {value.tag} found in summary inputs"
                )
            tags.add(value.tag)
            merged.value.add().CopyFrom(value)
    return _serialized(merged)


def merge(inputs, collections=None, name=None):
    """`tf.summary.merge`: one ``Summary`` holding every value of `inputs` (a list of summaries).

    Running it fails with `InvalidArgumentError` when two inputs have the same tag.
    """
    summary_protos.load()
    inputs = [convert_to_tensor(t) for t in inputs]
    name = clean_tag(name)
    graph = inputs[0].graph if inputs else get_default_graph()
    with graph.name_scope(name or "Merge"):
        op = registry.make_op("MergeSummary", inputs, {"N": len(inputs)}, name=name, graph=graph)
    _collect(op.outputs[0], collections, [])
    return op.outputs[0]


def merge_all(key=GraphKeys.SUMMARIES, scope=None, name=None):
    """`tf.summary.merge_all`: merges every summary in collection `key` (matching `scope`).

    Returns:
        The merged summary tensor, or None when the collection is empty.
    """
    summaries = get_collection(key, scope=scope)
    return merge(summaries, name=name) if summaries else None
