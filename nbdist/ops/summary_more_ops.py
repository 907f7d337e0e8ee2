"""More of `tf.summary`: `tensor_summary`, `audio` (``AudioSummaryV2``: 16-bit PCM WAVs),
`get_summary_description` and `all_v2_summary_ops`, beside `nbdist.ops.summary_ops`.

`tensor_summary` records any tensor with a ``SummaryMetadata`` (display name, description,
plugin data) through the ``TensorSummaryV2`` op that `tf.summary.text` uses. `audio` encodes
each clip as TF's kernel does (samples clipped to [-1, 1], times 2**15, rounded, saturated to
int16), so the bytes of its ``Summary`` equal TF's.
"""

import struct

import numpy as np

from nbdist import errors
from nbdist.graph import dtypes as _dtypes
from nbdist.graph.graph import GraphKeys, add_to_collection, get_collection
from nbdist.graph.tensor_shape import TensorShape
from nbdist.ops import registry, summary_protos
from nbdist.ops.constant_op import constant, convert_to_tensor
from nbdist.ops.summary_ops import summary_scope

__all__ = ["all_v2_summary_ops", "audio", "get_summary_description", "tensor_summary"]

_V2_SUMMARIES = "_SUMMARY_V2"  # TF's GraphKeys._SUMMARY_COLLECTION (tf.contrib / TF 2 summary ops)


def _add_to(summary, collections):
    for key in [GraphKeys.SUMMARIES] if collections is None else collections:
        add_to_collection(key, summary)


def _as_bytes(value):
    value = value.item() if isinstance(value, np.ndarray) else value
    return value.encode() if isinstance(value, str) else bytes(value)


def tensor_summary(
    name,
    tensor,
    summary_description=None,
    collections=None,
    summary_metadata=None,
    family=None,
    display_name=None,
):
    """`tf.summary.tensor_summary`: a summary holding `tensor` whole (any dtype and shape).

    Args:
        name: the summary's name (with the name scopes and `family`, its tag).
        tensor: the tensor to record.
        summary_description: text for ``SummaryMetadata.summary_description``.
        collections: graph collections to add the summary to (default ``[SUMMARIES]``).
        summary_metadata: a ``SummaryMetadata`` protobuf (e.g. a plugin's), copied.
        family: an optional prefix of the tag.
        display_name: ``SummaryMetadata.display_name``.

    Returns:
        A scalar string tensor: a serialized ``Summary``.
    """
    pb = summary_protos.load()
    metadata = pb.SummaryMetadata()
    if summary_metadata is not None:
        metadata.ParseFromString(summary_metadata.SerializeToString())
    if display_name:
        metadata.display_name = display_name
    if summary_description:
        metadata.summary_description = summary_description
    with summary_scope(name, family) as (tag, scope):
        tensor = convert_to_tensor(tensor, name="tensor")
        inputs = [
            constant(tag, name="tag"),
            tensor,
            constant(metadata.SerializeToString(), name="serialized_summary_metadata"),
        ]
        op = registry.make_op("TensorSummaryV2", inputs, {"T": tensor.dtype}, name=scope)
    _add_to(op.outputs[0], collections)
    return op.outputs[0]


# -- AudioSummaryV2 ----------------------------------------------------------------------------------
registry.no_gradient("AudioSummaryV2")


@registry.shape("AudioSummaryV2")
def _audio_shape(inputs, attrs):
    return [(_dtypes.string, TensorShape(()))]


def wav_bytes(clip, sample_rate):
    """A 16-bit PCM WAV file of `clip` (``[frames, channels]`` floats in [-1, 1]), as TF encodes it."""
    samples = np.clip(np.round(np.asarray(clip, np.float32) * np.float32(32768.0)), -32768, 32767)
    data = samples.astype("<i2").tobytes()
    channels = clip.shape[1]
    header = struct.pack(
        "<4sI4s4sIHHIIHH4sI",
        b"RIFF",
        36 + len(data),
        b"WAVE",
        b"fmt ",
        16,
        1,
        channels,
        sample_rate,
        sample_rate * channels * 2,
        channels * 2,
        16,
        b"data",
        len(data),
    )
    return header + data


@registry.kernel("AudioSummaryV2")
def _audio_kernel(ctx, node, tag, tensor, sample_rate):
    tensor, sample_rate = np.asarray(tensor), np.asarray(sample_rate)
    if tensor.ndim not in (2, 3):
        raise errors.InvalidArgumentError(None, None, f"Tensor must be 3-D or 2-D, got: {list(tensor.shape)}")
    if sample_rate.size != 1:
        raise errors.InvalidArgumentError(None, None, "sample_rate must be rank-0 or contain a single value")
    rate = float(sample_rate.ravel()[0])
    if tensor.ndim == 2:
        tensor = tensor[:, :, None]
    try:
        pb = summary_protos.load()
    except ImportError as e:
        raise errors.FailedPreconditionError(None, None, str(e)) from None
    summary, max_outputs, tag = pb.Summary(), node.attr["max_outputs"], _as_bytes(tag).decode()
    for i, clip in enumerate(tensor[:max_outputs]):
        frames, channels = clip.shape
        summary.value.add(
            tag=f"{tag}/audio/{i}" if max_outputs > 1 else f"{tag}/audio",
            audio=pb.Summary.Audio(
                sample_rate=rate,
                num_channels=channels,
                length_frames=frames,
                encoded_audio_string=wav_bytes(clip, int(rate)),
                content_type="audio/wav",
            ),
        )
    return np.array(summary.SerializeToString(), dtype=object)


def audio(name, tensor, sample_rate, max_outputs=3, collections=None, family=None):
    """`tf.summary.audio`: up to `max_outputs` clips of a float ``[batch, frames, channels]`` (or
    ``[batch, frames]``) tensor of samples in [-1, 1], as WAVs at `sample_rate` Hz.

    Tags are ``name/audio/0``, ``name/audio/1``, ... (``name/audio`` when `max_outputs` is 1).
    Running it fails with `InvalidArgumentError` for a tensor of another rank (TF's message).
    """
    summary_protos.load()
    with summary_scope(name, family) as (tag, scope):
        tensor = convert_to_tensor(tensor, dtype=_dtypes.float32, name="tensor")
        rate = convert_to_tensor(sample_rate, dtype=_dtypes.float32, name="sample_rate")
        op = registry.make_op(
            "AudioSummaryV2",
            [constant(tag, name="tag"), tensor, rate],
            {"max_outputs": int(max_outputs)},
            name=scope,
        )
    _add_to(op.outputs[0], collections)
    return op.outputs[0]


# -- descriptions and TF 2's summaries ---------------------------------------------------------------
def get_summary_description(node_def):
    """`tf.summary.get_summary_description`: the ``SummaryDescription`` of a TF 1.x
    ``TensorSummary`` node (its ``description`` attr, JSON).

    Args:
        node_def: a ``NodeDef`` protobuf (``tf.NodeDef``, real TF's) or nbdist's `NodeDef`.

    Raises:
        ValueError: the node is not a ``TensorSummary`` (TF's message; `tensor_summary` makes
            ``TensorSummaryV2`` nodes, in TF too).
    """
    if node_def.op != "TensorSummary":
        raise ValueError(f"Can't get_summary_description on {node_def.op}")
    from google.protobuf import json_format  # noqa: PLC0415 - protobuf loads on first use

    raw = node_def.attr["description"]
    raw = raw.s if hasattr(raw, "s") else raw
    text = raw.decode() if isinstance(raw, bytes) else str(raw)
    description = summary_protos.load().SummaryDescription()
    json_format.Parse(text, description)
    return description


def all_v2_summary_ops():
    """`tf.summary.all_v2_summary_ops`: the TF 2 (``tf.contrib.summary``) summary ops of the
    default graph: none in nbdist, which has only TF 1.x's summary ops (an empty list, what TF
    returns for such a graph)."""
    return get_collection(_V2_SUMMARIES)
