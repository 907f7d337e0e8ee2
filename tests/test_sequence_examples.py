"""`tf.io.parse_single_sequence_example` (and the top-level name), `tf.io.parse_sequence_example`
and `tf.io.decode_json_example` against real TensorFlow: SequenceExamples built with TF's own
protos parse to TF's tensors (context and sequence features, dense and sparse, missing and
empty lists, batches padded), with TF's static shapes and errors; JSON Examples give TF's
bytes."""

import numpy as np
import pytest

import nbdist as tf


def _sequence_example(tf1, steps, words=True, label=7):
    ex = tf1.train.SequenceExample()
    if label is not None:
        ex.context.feature["label"].int64_list.value.append(label)
    ex.context.feature["weights"].float_list.value.extend([0.5 * i for i in range(steps)])
    ex.context.feature["name"].bytes_list.value.append(f"seq{steps}".encode())
    frames = ex.feature_lists.feature_list["frames"]
    for t in range(steps):
        frames.feature.add().float_list.value.extend([t, t + 0.5, -t])
        if words:
            ex.feature_lists.feature_list["words"].feature.add().bytes_list.value.extend([b"w%d" % t] * t)
    ex.feature_lists.feature_list["ids"].feature.extend([])
    return ex.SerializeToString()


def _features(t):
    context = {
        "label": t.io.FixedLenFeature([], t.int64, default_value=-1),
        "name": t.io.FixedLenFeature([1], t.string),
        "weights": t.io.VarLenFeature(t.float32),
        "extra": t.io.FixedLenFeature([2], t.float32, default_value=[1.0, 2.0]),
    }
    sequence = {
        "frames": t.io.FixedLenSequenceFeature([3], t.float32, allow_missing=True),
        "words": t.io.VarLenFeature(t.string),
        "ids": t.io.FixedLenSequenceFeature([], t.int64, allow_missing=True),
        "absent": t.io.VarLenFeature(t.int64),
    }
    return context, sequence


def _flatten(x):
    if isinstance(x, dict):
        return [(k, a) for key in sorted(x) for k, a in _flatten(x[key])]
    if isinstance(x, (list, tuple)) and not hasattr(x, "indices"):
        return [(k, a) for item in x for k, a in _flatten(item)]
    if hasattr(x, "indices"):
        return [("", x.indices), ("", x.values), ("", x.dense_shape)]
    return [("", x)]


def _run(lib, build):
    with lib.Graph().as_default(), lib.Session() as sess:
        out = build(lib)
        shapes = [getattr(a, "shape", None) for _, a in _flatten(out)]
        shapes = [None if s is None else s.as_list() if s.ndims is not None else None for s in shapes]
        return shapes, [a for _, a in _flatten(sess.run(out))]


def _assert_same(ours, theirs):
    assert ours[0] == theirs[0]  # static shapes
    assert len(ours[1]) == len(theirs[1])
    for a, b in zip(ours[1], theirs[1], strict=True):
        a, b = np.asarray(a), np.asarray(b)
        assert (a.shape, a.dtype) == (b.shape, b.dtype)
        assert a.tolist() == b.tolist()


def test_parse_single_sequence_example_matches_tensorflow(tf1):
    records = [_sequence_example(tf1, 3), _sequence_example(tf1, 0, words=False, label=None)]
    for record in records:
        build = lambda t, r=record: t.io.parse_single_sequence_example(r, *_features(t))  # noqa: E731
        _assert_same(_run(tf, build), _run(tf1, build))
    top = lambda t: t.parse_single_sequence_example(records[0], sequence_features=_features(t)[1])  # noqa: E731
    _assert_same(_run(tf, top), _run(tf1, top))


def test_parse_sequence_example_pads_a_batch_as_tensorflow(tf1):
    records = [_sequence_example(tf1, 3), _sequence_example(tf1, 1, label=None), _sequence_example(tf1, 0)]

    def build(t):
        return t.io.parse_sequence_example(t.constant(records), *_features(t), example_names=["a", "b", "c"])

    _assert_same(_run(tf, build), _run(tf1, build))


@pytest.mark.parametrize("lib_name", ["nbdist", "tensorflow"])
def test_bad_sequence_examples_raise_as_in_tensorflow(tf1, lib_name):
    t = tf if lib_name == "nbdist" else tf1
    record = _sequence_example(tf1, 2)
    cases = [
        ({"zz": t.io.FixedLenSequenceFeature([3], t.float32)}, "Feature list 'zz' is required"),
        ({"frames": t.io.FixedLenSequenceFeature([2], t.float32)}, "Number of values != expected"),
        (
            {"frames": t.io.FixedLenSequenceFeature([3], t.int64)},
            "Data types don't match. Expected type: int64",
        ),
    ]
    with t.Graph().as_default(), t.Session() as sess:
        for sequence, message in cases:
            with pytest.raises(t.errors.InvalidArgumentError, match=message):
                sess.run(t.io.parse_single_sequence_example(record, sequence_features=sequence))
        with pytest.raises(t.errors.InvalidArgumentError):
            sess.run(t.io.parse_single_sequence_example(record, {"q": t.io.FixedLenFeature([2], t.int64)}))


JSON = [
    '{"features": {"feature": {"a": {"int64List": {"value": ["1", 2, "-3"]}}}}}',
    "{}",
    '{"features": {"feature": {"b": {"bytesList": {"value": ["aGk=", ""]}}}}}',
    '{"features": {"feature": {"f": {"floatList": {"value": [1.5, -2, 0.1]}}}}}',
]


def test_decode_json_example_gives_tensorflows_bytes(tf1):
    def build(t):
        return [t.io.decode_json_example(JSON), t.decode_json_example(t.constant(JSON[0]))]

    ours, theirs = _run(tf, build), _run(tf1, build)
    _assert_same(ours, theirs)


@pytest.mark.parametrize("lib_name", ["nbdist", "tensorflow"])
def test_bad_json_raises_invalid_argument(tf1, lib_name):
    t = tf if lib_name == "nbdist" else tf1
    with t.Graph().as_default(), t.Session() as sess:
        for text in ['{"bad": 1}', "not json"]:
            with pytest.raises(t.errors.InvalidArgumentError, match="Error while parsing JSON"):
                sess.run(t.io.decode_json_example([text]))


def _sparse_examples(tf1):
    rows = [([5, 1, 8], [0, 2, 1], [0.5, 0.1, 0.8]), ([2], [3], [0.2]), ([], [], [])]
    out = []
    for ix, jx, values in rows:
        ex = tf1.train.Example()
        ex.features.feature["ix"].int64_list.value.extend(ix)
        ex.features.feature["jx"].int64_list.value.extend(jx)
        ex.features.feature["val"].float_list.value.extend(values)
        out.append(ex.SerializeToString())
    return out


def test_sparse_feature_parses_as_in_tensorflow(tf1):
    records = _sparse_examples(tf1)

    def build(t):
        batch = t.io.parse_example(
            records,
            {
                "sp": t.io.SparseFeature("ix", "val", t.float32, 10),
                "grid": t.SparseFeature(["ix", "jx"], "val", t.float32, [10, 4]),
                "ix": t.io.VarLenFeature(t.int64),
            },
        )
        single = t.io.parse_single_example(
            records[0],
            {
                "sorted": t.io.SparseFeature("ix", "val", t.float32, 10, already_sorted=True),
                "unsorted": t.io.SparseFeature("ix", "val", t.float32, 10),
            },
        )
        return [batch, single]

    _assert_same(_run(tf, build), _run(tf1, build))
