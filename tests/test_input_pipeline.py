"""Queue-based input pipelines (`nbdist/train/input.py`, `nbdist/ops/reader_ops.py`) against
tensorflow.compat.v1: the same program under both libraries, files in tmp_path.

Orders without shuffling are deterministic in both, so batches, keys and values are compared
exactly; shuffled orders are nbdist's own (seeded), so only "every record once per epoch" is.
"""

import numpy as np
import pytest

import nbdist

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def csv_files(tmp_path):
    """Two CSV files with a header line: ``x,y`` rows 0..4 and 10..12 (y = x / 2)."""
    paths = []
    for name, xs in (("a.csv", range(5)), ("b.csv", range(10, 13))):
        path = tmp_path / name
        path.write_text("x,y\n" + "".join(f"{x},{x * 0.5}\n" for x in xs))
        paths.append(str(path))
    return paths


def _drain(tf, sess, fetches, limit=100):
    """Runs `fetches` in TF's standard loop until OutOfRangeError; returns the results and the
    coordinator's should_stop afterwards."""
    coord = tf.train.Coordinator()
    threads = tf.train.start_queue_runners(sess, coord)
    out = []
    try:
        while not coord.should_stop() and len(out) < limit:
            out.append(sess.run(fetches))
    except tf.errors.OutOfRangeError:
        out.append("OutOfRange")
    finally:
        coord.request_stop()
        coord.join(threads, stop_grace_period_secs=10)
    return out, coord.should_stop()


def _run(tf, build, limit=100):
    with tf.Graph().as_default():
        fetches = build(tf)
        with tf.Session() as sess:
            sess.run([tf.global_variables_initializer(), tf.local_variables_initializer()])
            return _drain(tf, sess, fetches, limit)


def _both(tf1, build, limit=100):
    ours, theirs = _run(nbdist, build, limit), _run(tf1, build, limit)
    assert _plain(ours) == _plain(theirs)
    return ours


def _plain(x):
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    if isinstance(x, dict):
        return {k: _plain(v) for k, v in x.items()}
    if isinstance(x, np.ndarray):
        return [x.dtype.kind, x.tolist()]
    return x


def test_csv_through_string_input_producer_and_batch_equals_tensorflow(tf1, csv_files):
    def build(tf):
        filenames = tf.train.string_input_producer(csv_files, num_epochs=2, shuffle=False)
        key, line = tf.TextLineReader(skip_header_lines=1).read(filenames)
        x, y = tf.decode_csv(line, [[0], [0.0]])
        return tf.train.batch({"x": x, "y": y, "key": key}, batch_size=3)

    (results, stopped) = _both(tf1, build)
    assert len(results) == 6 and results[-1] == "OutOfRange" and stopped  # 16 records: 5 batches
    assert [r["x"].tolist() for r in results[:2]] == [[0, 1, 2], [3, 4, 10]]
    assert results[0]["key"][0] == f"{csv_files[0]}:2".encode()


def test_allow_smaller_final_batch_returns_the_rest(tf1, csv_files):
    def build(tf):
        filenames = tf.train.string_input_producer(csv_files, num_epochs=1, shuffle=False)
        _, line = tf.TextLineReader(skip_header_lines=1).read(filenames)
        x, _ = tf.decode_csv(line, [[0], [0.0]])
        return tf.train.batch([x], batch_size=3, allow_smaller_final_batch=True)

    results, _ = _both(tf1, build)
    assert [r.tolist() for r in results[:-1]] == [[0, 1, 2], [3, 4, 10], [11, 12]]


def test_shuffle_batch_gives_every_record_once_per_epoch(csv_files):
    tf = nbdist
    with tf.Graph().as_default():
        filenames = tf.train.string_input_producer(csv_files, num_epochs=3, seed=1)
        _, line = tf.TextLineReader(skip_header_lines=1).read(filenames)
        x, _ = tf.decode_csv(line, [[0], [0.0]])
        xb = tf.train.shuffle_batch([x], batch_size=4, capacity=20, min_after_dequeue=5, seed=7)
        with tf.Session() as sess:
            sess.run(tf.local_variables_initializer())
            results, stopped = _drain(tf, sess, xb)
    assert results[-1] == "OutOfRange" and stopped
    seen = np.concatenate(results[:-1]).tolist()
    assert len(seen) == 24  # 3 epochs of 8 records, 6 full batches
    assert sorted(seen) == sorted([0, 1, 2, 3, 4, 10, 11, 12] * 3)
    assert seen != sorted(seen)


def test_fixed_length_tfrecord_whole_file_and_identity_readers_equal_tensorflow(tf1, tmp_path):
    data = tmp_path / "f.bin"
    data.write_bytes(bytes(range(23)))
    text = tmp_path / "t.txt"
    text.write_bytes(b"h\n1,2\r\n\n3,4")
    records = tmp_path / "r.tfrecord"
    gzipped = tmp_path / "r.tfrecord.gz"
    for path, kind in ((records, "NONE"), (gzipped, "GZIP")):
        options = nbdist.python_io.TFRecordOptions(getattr(nbdist.python_io.TFRecordCompressionType, kind))
        with nbdist.python_io.TFRecordWriter(str(path), options) as writer:
            for payload in (b"first", b"", b"third record"):
                writer.write(payload)

    def build(tf):
        out = {}
        for label, reader, files in (
            ("fixed", tf.FixedLengthRecordReader(5), [data]),
            ("fixed_hf", tf.FixedLengthRecordReader(5, header_bytes=2, footer_bytes=3), [data]),
            ("fixed_hop", tf.FixedLengthRecordReader(4, header_bytes=1, footer_bytes=1, hop_bytes=6), [data]),
            ("whole", tf.WholeFileReader(), [text, data]),
            ("identity", tf.IdentityReader(), [text, data]),
            ("text", tf.TextLineReader(), [text]),
            ("tfrecord", tf.TFRecordReader(), [records, records]),
            (
                "tfrecord_gzip",
                tf.TFRecordReader(
                    options=tf.python_io.TFRecordOptions(tf.python_io.TFRecordCompressionType.GZIP)
                ),
                [gzipped],
            ),
        ):
            queue = tf.FIFOQueue(4, tf.string, shapes=[[]])
            init = queue.enqueue_many([[str(f) for f in files]])
            out[label] = (init, queue.close(), reader.read(queue), reader.num_work_units_completed())
        return out

    def read_all(tf):
        with tf.Graph().as_default():
            ops = build(tf)
            results = {}
            with tf.Session() as sess:
                for label, (init, close, read, completed) in ops.items():
                    sess.run([init])
                    sess.run(close)
                    records = []
                    while True:
                        try:
                            records.append(sess.run(list(read)))
                        except tf.errors.OutOfRangeError:
                            break
                    results[label] = (records, sess.run(completed))
            return results

    ours = read_all(nbdist)
    assert _plain(ours) == _plain(read_all(tf1))
    assert len(ours["fixed_hop"][0]) == 3 and ours["text"][0][1] == [f"{text}:2".encode(), b"1,2"]


def test_read_up_to_stops_at_the_end_of_a_file_as_tensorflow(tf1, tmp_path):
    files = []
    for name, body in (("a.txt", "h\n1\n2\n3\n"), ("e.txt", ""), ("b.txt", "h\n4\n5")):
        (tmp_path / name).write_text(body)
        files.append(str(tmp_path / name))

    def build(tf):
        filenames = tf.train.string_input_producer(files, num_epochs=1, shuffle=False)
        return tf.TextLineReader(skip_header_lines=1).read_up_to(filenames, 2)

    results, _ = _both(tf1, build)
    assert [v.tolist() for _, v in results[:-1]] == [[b"1", b"2"], [b"3"], [b"4", b"5"]]


def test_reader_counts_and_reset(tmp_path):
    tf = nbdist
    (tmp_path / "a.txt").write_text("1\n2\n")
    with tf.Graph().as_default():
        queue = tf.FIFOQueue(4, tf.string, shapes=[[]])
        reader = tf.TextLineReader()
        key, _ = reader.read(queue)
        produced, completed = reader.num_records_produced(), reader.num_work_units_completed()
        with tf.Session() as sess:
            sess.run(queue.enqueue_many([[str(tmp_path / "a.txt")] * 3]))
            for _ in range(3):
                sess.run(key)
            assert sess.run([produced, completed]) == [3, 1]
            sess.run(reader.reset())
            assert sess.run([produced, completed]) == [0, 0]
            assert sess.run(key) == f"{tmp_path / 'a.txt'}:1".encode()  # reset dropped the work unit


def test_producers_equal_tensorflow(tf1):
    def build(tf):
        numbers = tf.train.range_input_producer(4, num_epochs=2, shuffle=False).dequeue()
        a, b = tf.train.slice_input_producer(
            [tf.constant([1, 2, 3]), tf.constant([[1.0], [2.0], [3.0]])], shuffle=False
        )
        limited = tf.train.limit_epochs(tf.constant([7, 8]), num_epochs=3)
        return [numbers, a, b, limited]

    results, stopped = _both(tf1, build)
    assert len(results) == 4 and results[-1] == "OutOfRange" and stopped  # limit_epochs: 3 runs


def test_graph_collections_match_tensorflow(tf1, csv_files):
    def names(tf):
        with tf.Graph().as_default():
            filenames = tf.train.string_input_producer(csv_files, num_epochs=1)
            _, line = tf.TextLineReader().read(filenames)
            tf.train.shuffle_batch([line], 2, capacity=10, min_after_dequeue=3)
            tf.train.batch([line], 2)
            return (
                [qr.name for qr in tf.get_collection(tf.GraphKeys.QUEUE_RUNNERS)],
                [s.op.name for s in tf.get_collection(tf.GraphKeys.SUMMARIES)],
                [v.op.name for v in tf.local_variables()],
            )

    assert names(nbdist) == names(tf1)


def test_match_filenames_once_is_a_local_variable_of_sorted_matches(tmp_path):
    tf = nbdist
    for name in ("b.csv", "a.csv", "c.txt"):
        (tmp_path / name).write_text("")
    with tf.Graph().as_default():
        files = tf.train.match_filenames_once(str(tmp_path / "*.csv"))
        assert files in tf.local_variables()
        with tf.Session() as sess:
            sess.run(tf.local_variables_initializer())
            assert sess.run(files).tolist() == [str(tmp_path / n).encode() for n in ("a.csv", "b.csv")]


def test_maybe_batch_enqueues_only_kept_inputs(tf1):
    def build(tf):
        n = tf.train.range_input_producer(6, num_epochs=1, shuffle=False).dequeue()
        return tf.train.maybe_batch([n], tf.equal(n % 2, 0), batch_size=3)

    results, _ = _both(tf1, build)
    assert results[0].tolist() == [0, 2, 4]


def test_batch_join_and_shuffle_batch_join_take_from_every_list(csv_files):
    tf = nbdist
    with tf.Graph().as_default():
        filenames = tf.train.string_input_producer(csv_files, num_epochs=1, shuffle=False)
        lists = []
        for _ in range(2):
            _, line = tf.TextLineReader(skip_header_lines=1).read(filenames)
            lists.append(tf.decode_csv(line, [[0], [0.0]])[:1])
        joined = tf.train.batch_join(lists, batch_size=2)
        with tf.Session() as sess:
            sess.run(tf.local_variables_initializer())
            results, stopped = _drain(tf, sess, joined)
    assert stopped and sorted(np.concatenate(results[:-1]).tolist()) == [0, 1, 2, 3, 4, 10, 11, 12]


def test_num_epochs_needs_local_variables_initializer(csv_files):
    tf = nbdist
    with tf.Graph().as_default():
        filenames = tf.train.string_input_producer(csv_files, num_epochs=1)
        with tf.Session() as sess, pytest.raises(tf.errors.FailedPreconditionError, match="epochs"):
            sess.run(tf.get_collection(tf.GraphKeys.QUEUE_RUNNERS)[0].enqueue_ops[0])
    assert filenames.name == "input_producer"
