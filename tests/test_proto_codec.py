"""tf.io.decode_proto / tf.io.encode_proto (issue 32) against real TensorFlow: sizes, values,
static shapes, serialized bytes and errors, on TF's own event and summary messages and on a
message type given as a FileDescriptorSet."""

import numpy as np
import pytest

import nbdist as tf

pytestmark = pytest.mark.tf


def _run(t, build):
    with t.Graph().as_default():
        out = build(t)
        with t.Session() as sess:
            return sess.run(out), out


def _histograms(t):
    return np.array(
        [
            [t.HistogramProto(min=1.0, num=3, bucket=[1, 2, 3], bucket_limit=[0.5]).SerializeToString()],
            [t.HistogramProto(max=-2.0, sum_squares=1e300).SerializeToString()],
        ],
        object,
    )


def _events(t):
    summary = t.Summary(value=[t.Summary.Value(tag="a", simple_value=0.5), t.Summary.Value(tag="b")])
    return [
        t.Event(step=-3, wall_time=1.5, file_version="brain").SerializeToString(),
        t.Event(step=2**40, summary=summary).SerializeToString(),
        t.Event(session_log=t.SessionLog(status=t.SessionLog.STOP, msg="m")).SerializeToString(),
    ]


DECODES = {
    "histogram_doubles": lambda t: t.io.decode_proto(
        _histograms(t), "tensorflow.HistogramProto", ["min", "max", "num", "bucket"], [t.float64] * 4
    ),
    "event_fields": lambda t: t.io.decode_proto(
        _events(t),
        "tensorflow.Event",
        ["step", "wall_time", "file_version", "summary", "session_log"],
        [t.int64, t.float64, t.string, t.string, t.string],
    ),
    "summary_values_repeated_messages": lambda t: t.io.decode_proto(
        [
            t.Summary(value=[t.Summary.Value(tag=str(i)) for i in range(n)]).SerializeToString()
            for n in (0, 3)
        ],
        "tensorflow.Summary",
        ["value"],
        [t.string],
    ),
    "float_as_float32_and_enum": lambda t: t.io.decode_proto(
        [t.Summary.Value(simple_value=-2.25).SerializeToString()],
        "tensorflow.Summary.Value",
        ["simple_value"],
        [t.float32],
    ),
    "enum": lambda t: t.io.decode_proto(
        [t.SessionLog(status=t.SessionLog.CHECKPOINT).SerializeToString(), b""],
        "tensorflow.SessionLog",
        ["status", "checkpoint_path"],
        [t.int32, t.string],
    ),
    "int32_as_int64": lambda t: t.io.decode_proto(
        [t.Summary.Image(height=-7, width=3).SerializeToString()],
        "tensorflow.Summary.Image",
        ["height", "width"],
        [t.int64, t.int32],
    ),
    "text_format": lambda t: t.io.decode_proto(
        ["step: 4 file_version: 'v'"],
        "tensorflow.Event",
        ["step", "file_version"],
        [t.int64, t.string],
        message_format="text",
    ),
}


@pytest.mark.parametrize("name", sorted(DECODES))
def test_decode_proto_equals_tensorflows(tf1, name):
    (ours, ours_out), (theirs, theirs_out) = _run(tf, DECODES[name]), _run(tf1, DECODES[name])
    np.testing.assert_array_equal(ours.sizes, theirs.sizes)
    assert ours.sizes.dtype == theirs.sizes.dtype
    assert ours_out.sizes.shape.as_list() == theirs_out.sizes.shape.as_list()
    for a, b, sa, sb in zip(ours.values, theirs.values, ours_out.values, theirs_out.values):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(a, b)
        assert sa.shape.as_list() == sb.shape.as_list()


def _encode_histograms(t):
    sizes, values = t.io.decode_proto(
        _histograms(t), "tensorflow.HistogramProto", ["bucket", "num", "min"], [t.float64] * 3
    )
    return t.io.encode_proto(sizes, values, ["bucket", "num", "min"], "tensorflow.HistogramProto")


ENCODES = {
    "histograms_round_trip": _encode_histograms,
    "event_repeated_singular": lambda t: t.io.encode_proto(
        np.array([[1, 2], [0, 1]], np.int32),
        [np.array([[5], [6]], np.int64), np.array([[b"a", b"b"], [b"c", b"d"]], object)],
        ["step", "file_version"],
        "tensorflow.Event",
    ),
    "negative_int32_and_enum": lambda t: t.io.encode_proto(
        np.array([[1, 1]], np.int32),
        [np.array([[-7]], np.int32), np.array([[3]], np.int32)],
        ["height", "colorspace"],
        "tensorflow.Summary.Image",
    ),
    "sessionlog_enum": lambda t: t.io.encode_proto(
        np.array([[1]], np.int32), [np.array([[2]], np.int32)], ["status"], "tensorflow.SessionLog"
    ),
}


@pytest.mark.parametrize("name", sorted(ENCODES))
def test_encode_proto_writes_tensorflows_bytes(tf1, name):
    (ours, ours_out), (theirs, theirs_out) = _run(tf, ENCODES[name]), _run(tf1, ENCODES[name])
    assert ours.tolist() == theirs.tolist()
    assert ours_out.shape.as_list() == theirs_out.shape.as_list()


@pytest.mark.parametrize(
    ("build", "error", "match"),
    [
        (
            lambda t: t.io.decode_proto(_events(t), "tensorflow.Event", ["nope"], [t.int64]),
            "InvalidArgumentError",
            "Unknown field: nope in message type tensorflow.Event",
        ),
        (
            lambda t: t.io.decode_proto(_events(t), "tensorflow.Event", ["step"], [t.int32]),
            "InvalidArgumentError",
            "Unexpected output type for tensorflow.Event.step: int64 to DT_INT32",
        ),
        (
            lambda t: t.io.decode_proto(_events(t), "tensorflow.SessionLog", ["status"], [t.int64]),
            "InvalidArgumentError",
            "Unexpected output type for tensorflow.SessionLog.status: enum to DT_INT64",
        ),
        (
            lambda t: t.io.decode_proto(_events(t), "tensorflow.Nope", ["step"], [t.int64]),
            "InvalidArgumentError",
            "No descriptor found for message type tensorflow.Nope",
        ),
        (
            lambda t: t.io.decode_proto([b"\xff\xff"], "tensorflow.Event", ["step"], [t.int64]),
            "DataLossError",
            "CountFields: Failed to consume entire buffer",
        ),
        (
            lambda t: t.io.encode_proto(
                np.array([[1]], np.int32), [np.array([[5]], np.int32)], ["step"], "tensorflow.Event"
            ),
            "InvalidArgumentError",
            "Incompatible type for field step.  Saw dtype: int32 but field type is: int64",
        ),
        (
            lambda t: t.io.encode_proto(
                np.array([[2]], np.int32), [np.array([[5]], np.int64)], ["step"], "tensorflow.Event"
            ),
            "InvalidArgumentError",
            "Size to write must not be larger than value tensor; but saw: 2 > 1 at message 0 field 0",
        ),
    ],
)
def test_decode_and_encode_fail_as_tensorflow_when_run(tf1, build, error, match):
    for t in (tf, tf1):
        with t.Graph().as_default():
            out = build(t)
            with t.Session() as sess, pytest.raises(getattr(t.errors, error), match=match):
                sess.run(out)


def test_a_message_type_from_a_file_descriptor_set(tf1, tmp_path):
    from google.protobuf import descriptor_pb2

    file_proto = descriptor_pb2.FileDescriptorProto(name="point.proto", package="geo", syntax="proto3")
    point = file_proto.message_type.add(name="Point")
    fd = descriptor_pb2.FieldDescriptorProto
    point.field.add(name="x", number=1, type=fd.TYPE_SINT32, label=fd.LABEL_OPTIONAL)
    point.field.add(name="ids", number=2, type=fd.TYPE_FIXED32, label=fd.LABEL_REPEATED)
    point.field.add(name="name", number=3, type=fd.TYPE_BYTES, label=fd.LABEL_OPTIONAL)
    data = descriptor_pb2.FileDescriptorSet(file=[file_proto]).SerializeToString()
    path = tmp_path / "point.desc"
    path.write_bytes(data)

    def build(t, source):
        sizes = np.array([[1, 3, 1], [1, 0, 0]], np.int32)
        values = [
            np.array([[-5], [70000]], np.int32),
            np.array([[1, 2, 3], [0, 0, 0]], np.uint32),
            np.array([[b"p"], [b""]], object),
        ]
        encoded = t.io.encode_proto(
            sizes, values, ["x", "ids", "name"], "geo.Point", descriptor_source=source
        )
        return encoded, t.io.decode_proto(
            encoded, "geo.Point", ["ids", "x"], [t.uint64, t.int64], descriptor_source=source
        )

    for source in (str(path), b"bytes://" + data):
        ours, _ = _run(tf, lambda t, s=source: build(t, s))
        theirs, _ = _run(tf1, lambda t, s=source: build(t, s))
        assert ours[0].tolist() == theirs[0].tolist()
        np.testing.assert_array_equal(ours[1].sizes, theirs[1].sizes)
        for a, b in zip(ours[1].values, theirs[1].values):
            assert a.dtype == b.dtype
            np.testing.assert_array_equal(a, b)


def test_tensorflow_names_fall_back_to_tensorboardx_messages():
    events = _events(tf)
    with tf.Graph().as_default():
        a = tf.io.decode_proto(events, "tensorflow.Event", ["step"], [tf.int64])
        b = tf.io.decode_proto(events, "tensorboardX.Event", ["step"], [tf.int64])
        with tf.Session() as sess:
            (sa, (va,)), (sb, (vb,)) = sess.run([a, b])
    np.testing.assert_array_equal(sa, sb)
    np.testing.assert_array_equal(va, vb)
    assert va.ravel().tolist() == [-3, 2**40, 0]
