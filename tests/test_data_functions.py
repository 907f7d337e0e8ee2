"""`tf.data` with traced functions and file sources, against real TensorFlow: `map`, `filter`,
`flat_map`, `interleave`, `apply`, `padded_batch`, `shard`, `cache`, `TextLineDataset` (plain
and GZIP), `FixedLengthRecordDataset`; every element of the same pipeline in nbdist and in
``tensorflow.compat.v1`` (graph mode), in order.
"""

import gzip

import numpy as np
import pytest

import nbdist as tf

ROWS = np.arange(12, dtype=np.float32).reshape(6, 2)
LABELS = np.array([0, 1, 2, 0, 1, 2], np.int64)
CSV = "a,1,0.5\nb,2,1.5\nc,3,2.5\nd,4,3.5\ne,5,4.5\n"


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("data")
    (d / "one.csv").write_text(CSV)
    (d / "two.csv").write_text("f,6,5.5\ng,7,6.5\n")
    with gzip.open(d / "one.csv.gz", "wb") as f:
        f.write(CSV.encode())
    (d / "fixed.bin").write_bytes(b"HEAD" + bytes(range(24)) + b"FOOT")
    for kind in ("NONE", "GZIP"):  # TFRecord files of tf.train.Examples, written by nbdist
        options = tf.python_io.TFRecordOptions(getattr(tf.python_io.TFRecordCompressionType, kind))
        with tf.python_io.TFRecordWriter(str(d / f"examples-{kind}.tfrecord"), options) as writer:
            for i in range(5):
                example = tf.train.Example(
                    features=tf.train.Features(
                        feature={
                            "x": tf.train.Feature(float_list=tf.train.FloatList(value=[i, i / 2])),
                            "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[i % 2])),
                        }
                    )
                )
                writer.write(example.SerializeToString())
    return d


def _pipelines(files):
    scale = np.float32(0.5)
    return {
        "map_tuple_to_dict": lambda t: t.data.Dataset.from_tensor_slices((ROWS, LABELS)).map(
            lambda x, y: {"x": x * scale + t.cast(y, t.float32), "y": y * 2}
        ),
        "map_captures_a_tensor": lambda t: t.data.Dataset.range(5).map(
            lambda i: t.cast(i, t.float32) * t.constant([1.0, -1.0])
        ),
        "filter": lambda t: t.data.Dataset.range(10).filter(lambda i: t.equal(i % 3, 0)),
        "flat_map": lambda t: t.data.Dataset.range(1, 4).flat_map(
            lambda n: t.data.Dataset.range(n).map(lambda k: k * 10 + n)
        ),
        "interleave": lambda t: t.data.Dataset.range(1, 6).interleave(
            lambda x: t.data.Dataset.from_tensors(x).repeat(6), cycle_length=2, block_length=4
        ),
        "apply": lambda t: t.data.Dataset.range(6).apply(lambda ds: ds.skip(2).take(3)),
        "padded_batch": lambda t: (
            t.data.Dataset.range(5)
            .map(lambda n: (t.fill(t.cast([n], t.int32), n), t.cast(n, t.float32)))
            .padded_batch(2, ([None], []), padding_values=(t.constant(-1, t.int64), t.constant(0.0)))
        ),
        "padded_batch_fixed": lambda t: (
            t.data.Dataset.range(4)
            .map(lambda n: t.fill(t.cast([n], t.int32), n))
            .padded_batch(3, [5], drop_remainder=True)
        ),
        "shard": lambda t: t.data.Dataset.range(10).shard(3, 1),
        "cache_repeat": lambda t: t.data.Dataset.range(3).map(lambda x: x * x).cache().repeat(3),
        "text_lines_csv": lambda t: (
            t.data.TextLineDataset([str(files / "one.csv"), str(files / "two.csv")])
            .map(lambda line: t.decode_csv(line, [[""], [0], [0.0]]))
            .batch(3)
        ),
        "text_lines_gzip": lambda t: t.data.TextLineDataset(
            str(files / "one.csv.gz"), compression_type="GZIP"
        ),
        "fixed_length_records": lambda t: t.data.FixedLengthRecordDataset(
            str(files / "fixed.bin"), 8, header_bytes=4, footer_bytes=4
        ),
        "tfrecord_examples": lambda t: t.data.TFRecordDataset(str(files / "examples-NONE.tfrecord")).map(
            lambda r: t.parse_single_example(
                r, {"x": t.FixedLenFeature([2], t.float32), "label": t.FixedLenFeature([], t.int64)}
            )
        ),
        "tfrecord_gzip_batched": lambda t: (
            t.data.TFRecordDataset([str(files / "examples-GZIP.tfrecord")] * 2, compression_type="GZIP")
            .batch(3)
            .map(lambda rs: t.parse_example(rs, {"x": t.FixedLenFeature([2], t.float32)})["x"])
        ),
        "shuffle_free_pipeline": lambda t: (
            t.data.Dataset.from_tensor_slices(ROWS).map(t.reduce_sum).filter(lambda s: s > 4.0).batch(2)
        ),
    }


def _elements(lib, build):
    graph = lib.Graph()
    with graph.as_default():
        dataset = build(lib)
        next_element = lib.data.make_one_shot_iterator(dataset).get_next()
        out = []
        with lib.Session(graph=graph) as sess:
            while True:
                try:
                    out.append(sess.run(next_element))
                except lib.errors.OutOfRangeError:
                    return out


def _flat(value):
    if isinstance(value, dict):
        return [x for k in sorted(value) for x in _flat(value[k])]
    if isinstance(value, (tuple, list)):
        return [x for v in value for x in _flat(v)]
    return [value]


@pytest.mark.parametrize(
    "name",
    [
        "map_tuple_to_dict",
        "map_captures_a_tensor",
        "filter",
        "flat_map",
        "interleave",
        "apply",
        "padded_batch",
        "padded_batch_fixed",
        "shard",
        "cache_repeat",
        "text_lines_csv",
        "text_lines_gzip",
        "fixed_length_records",
        "tfrecord_examples",
        "tfrecord_gzip_batched",
        "shuffle_free_pipeline",
    ],
)
def test_elements_match_tensorflow(tf1, files, name):
    build = _pipelines(files)[name]
    ours, theirs = _elements(tf, build), _elements(tf1, build)
    assert len(ours) == len(theirs), (ours, theirs)
    for k, (a, b) in enumerate(zip(ours, theirs)):
        fa, fb = _flat(a), _flat(b)
        assert len(fa) == len(fb)
        for x, y in zip(fa, fb):
            x, y = np.asarray(x), np.asarray(y)
            assert x.shape == y.shape, f"{name}: element {k}: shape {x.shape} vs TF's {y.shape}"
            if y.dtype == object or y.dtype.kind in "SU":
                assert x.tolist() == y.tolist(), f"{name}: element {k}"
            else:
                assert x.dtype == y.dtype, f"{name}: element {k}: dtype {x.dtype} vs TF's {y.dtype}"
                np.testing.assert_allclose(x, y, err_msg=f"{name}: element {k}")


def test_an_initializable_iterator_is_fed_its_file_names(files, graph):
    names = tf.placeholder(tf.string, [None])
    dataset = tf.data.TextLineDataset(names).map(lambda line: tf.decode_csv(line, [[""], [0], [0.0]])[1])
    iterator = dataset.make_initializable_iterator()
    value = iterator.get_next()
    with tf.Session() as sess:
        for files_fed, want in (([files / "two.csv"], [6, 7]), ([files / "one.csv"], [1, 2, 3, 4, 5])):
            sess.run(iterator.initializer, {names: [str(f) for f in files_fed]})
            got = []
            while True:
                try:
                    got.append(int(sess.run(value)))
                except tf.errors.OutOfRangeError:
                    break
            assert got == want


def test_a_missing_file_is_named(graph, tmp_path):
    value = tf.data.TextLineDataset(str(tmp_path / "absent.csv")).make_one_shot_iterator().get_next()
    with tf.Session() as sess, pytest.raises(tf.errors.NotFoundError, match=r"absent\.csv"):
        sess.run(value)


def test_an_error_in_a_map_function_names_its_op(graph):
    dataset = tf.data.Dataset.range(3).map(lambda i: tf.reshape(tf.fill(tf.cast([i], tf.int32), i), [2]))
    value = dataset.make_one_shot_iterator().get_next()
    with tf.Session() as sess, pytest.raises(tf.errors.InvalidArgumentError, match="Reshape"):
        sess.run(value)


def test_a_filter_predicate_must_be_a_scalar_bool(graph):
    with pytest.raises(ValueError, match="one scalar bool"):
        tf.data.Dataset.range(3).filter(lambda i: i * 2)


def test_a_map_function_that_updates_a_variable_is_refused(graph):
    v = tf.Variable(0, dtype=tf.int64)
    with pytest.raises(ValueError, match="do not update them"):
        tf.data.Dataset.range(3).map(lambda i: tf.assign_add(v, i)).make_one_shot_iterator()
