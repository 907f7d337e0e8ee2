"""`tf.summary`: the summary ops, `FileWriter`, and event files read back by TensorBoard itself,
compared with real TensorFlow running the same program."""

import io
import logging
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from tensorboardX.proto import summary_pb2 as pb

import nbdist as tf
from procs import REPO
from tmpfs import fill, mounted_tmpfs

plt_image = pytest.importorskip("matplotlib.image")  # decodes the PNGs of image summaries


@pytest.fixture(autouse=True)
def _fresh_graph():
    tf.reset_default_graph()
    yield
    tf.reset_default_graph()


def _accumulator(logdir):
    event_accumulator = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator")
    acc = event_accumulator.EventAccumulator(
        str(logdir), size_guidance={"scalars": 0, "histograms": 0, "tensors": 0}
    )
    acc.Reload()
    return acc


def _parse(serialized):
    summary = pb.Summary()
    summary.ParseFromString(bytes(serialized))
    return summary


def _program(lib):
    """One TF 1.x program for both libraries: scalars, histograms (one in a family), text."""
    x = lib.placeholder(lib.float32, [None], name="x")
    w = lib.Variable(np.array([0.5, -1.0, 2.0, 0.0], np.float32), name="w")
    with lib.name_scope("train"):
        loss = lib.reduce_sum(lib.square(w))
        lib.summary.scalar("loss", loss)
        # A second one in the same scope: its tag is train/loss_1.
        lib.summary.scalar("loss", lib.multiply(loss, 2.0, name="double"))
        lib.summary.histogram("w", w, family="weights")
    lib.summary.histogram("x", x)
    lib.summary.scalar("odd name:1", lib.reduce_max(x))  # ':' and ' ' are not allowed in tags
    lib.summary.text("note", lib.constant("hello **TensorBoard**", name="greeting"))
    return x, lib.summary.merge_all()


def _write_run(lib, logdir, feeds):
    x, merged = _program(lib)
    with lib.Session() as sess:
        sess.run(lib.global_variables_initializer())
        writer = lib.summary.FileWriter(str(logdir), sess.graph)
        summaries = []
        for step, values in enumerate(feeds, start=1):
            summaries.append(sess.run(merged, {x: values}))
            writer.add_summary(summaries[-1], global_step=step)
        writer.close()
    return summaries


def _feeds():
    rng = np.random.RandomState(0)
    return [
        (rng.standard_normal(50) * 10.0 ** rng.randint(-14, 6, size=50)).astype(np.float32),
        np.array([0.0, 1e-13, -2.5, 3.0, 100.0, 1.0], np.float32),
        rng.uniform(-1, 1, size=200).astype(np.float32),
    ]


def test_summary_ops_are_tf_ops_with_tf_names_and_inputs(tf1_graph_mode):
    def summary_ops(lib, graph):
        with graph.as_default():
            _program(lib)
        return sorted(
            (op.name, op.type, [t.name for t in op.inputs])
            for op in graph.get_operations()
            if op.type.endswith("Summary") or op.type == "TensorSummaryV2"
        )

    ours = summary_ops(tf, tf.Graph())
    theirs = summary_ops(tf1_graph_mode, tf1_graph_mode.Graph())
    assert ours == theirs
    assert ("Merge/MergeSummary", "MergeSummary") in [o[:2] for o in ours]


def test_summary_values_match_real_tensorflow(tf1_graph_mode, tmp_path):
    ours = _write_run(tf, tmp_path / "nbdist", _feeds())
    with tf1_graph_mode.Graph().as_default():
        theirs = _write_run(tf1_graph_mode, tmp_path / "tf", _feeds())
    for mine, real in zip(ours, theirs):
        mine, real = _parse(mine), _parse(real)
        assert [v.tag for v in mine.value] == [v.tag for v in real.value]
        for a, b in zip(mine.value, real.value):
            if b.HasField("histo"):  # TF's buckets and sums, to the bit
                assert a.histo == b.histo, a.tag
            elif b.HasField("tensor"):
                assert (a.tensor, a.metadata) == (b.tensor, b.metadata)
            else:
                assert a.simple_value == pytest.approx(b.simple_value, rel=1e-6), a.tag


def test_tensorboard_reads_the_same_scalars_and_histograms_from_both(tf1_graph_mode, tmp_path):
    _write_run(tf, tmp_path / "nbdist", _feeds())
    with tf1_graph_mode.Graph().as_default():
        _write_run(tf1_graph_mode, tmp_path / "tf", _feeds())
    ours, theirs = _accumulator(tmp_path / "nbdist"), _accumulator(tmp_path / "tf")
    for kind in ("scalars", "histograms", "tensors"):
        assert ours.Tags()[kind] == theirs.Tags()[kind], kind
    assert "odd_name_1" in ours.Tags()["scalars"] and "weights/train/weights/w" in ours.Tags()["histograms"]
    for tag in ours.Tags()["scalars"]:
        assert [(e.step, pytest.approx(e.value, rel=1e-6)) for e in ours.Scalars(tag)] == [
            (e.step, e.value) for e in theirs.Scalars(tag)
        ]
    for tag in ours.Tags()["histograms"]:
        assert [(e.step, e.histogram_value) for e in ours.Histograms(tag)] == [
            (e.step, e.histogram_value) for e in theirs.Histograms(tag)
        ]
    assert ours.Tensors("note")[0].tensor_proto.string_val == [b"hello **TensorBoard**"]


def test_the_graph_tensorboard_reads_has_devices_attrs_and_shapes(tmp_path):
    with tf.device("/job:ps/task:0"):
        w = tf.Variable(tf.zeros([3, 2]), name="w")
    with tf.device("/job:worker/task:1"):
        x = tf.placeholder(tf.float32, [None, 3], name="x")
        y = tf.matmul(x, w, name="y")
        tf.summary.scalar("y_mean", tf.reduce_mean(y))
        with tf.control_dependencies([y]):
            tf.no_op(name="after")
    with tf.summary.FileWriter(str(tmp_path), graph=tf.get_default_graph()):
        pass
    nodes = {n.name: n for n in _accumulator(tmp_path).Graph().node}
    assert nodes["w"].op == "VariableV2" and nodes["w"].device == "/job:ps/task:0"
    assert nodes["y"].device == "/job:worker/task:1" and list(nodes["y"].input) == ["x", "w/read"]
    assert nodes["y_mean"].op == "ScalarSummary" and nodes["y_mean"].device == "/job:worker/task:1"
    assert nodes["x"].attr["dtype"].type == 1  # DT_FLOAT
    assert [d.size for d in nodes["x"].attr["shape"].shape.dim] == [-1, 3]
    assert [d.size for d in nodes["y"].attr["_output_shapes"].list.shape[0].dim] == [-1, 2]
    assert nodes["y_mean/tags"].attr["value"].tensor.string_val == [b"y_mean"]
    assert list(nodes["after"].input) == ["^y"]


def test_a_histogram_of_nan_fails_naming_the_tag():
    x = tf.placeholder(tf.float32, [None])
    h = tf.summary.histogram("activations", x)
    with (
        tf.Session() as sess,
        pytest.raises(tf.errors.InvalidArgumentError, match="Nan in summary histogram for: activations"),
    ):
        sess.run(h, {x: [1.0, np.nan]})


def test_merge_refuses_duplicate_tags():
    a = tf.summary.scalar("loss", 1.0)
    merged = tf.summary.merge([a, a])
    with (
        tf.Session() as sess,
        pytest.raises(tf.errors.InvalidArgumentError, match="Duplicate tag loss found"),
    ):
        sess.run(merged)


def test_merge_all_is_none_without_summaries_and_collections_choose_the_members():
    assert tf.summary.merge_all() is None
    tf.summary.scalar("a", 1.0, collections=["mine"])
    assert tf.summary.merge_all() is None
    merged = tf.summary.merge_all(key="mine")
    with tf.Session() as sess:
        assert [v.tag for v in _parse(sess.run(merged)).value] == ["a"]


def test_scalar_of_a_string_and_text_of_a_number_are_refused():
    with pytest.raises(TypeError, match=r"tf.summary.scalar\('s'\) needs a real number tensor, got string"):
        tf.summary.scalar("s", tf.constant("no"))
    with pytest.raises(ValueError, match="to have dtype string, got float32"):
        tf.summary.text("t", tf.constant(1.0))


def test_flush_puts_every_added_event_on_disk(tmp_path):
    writer = tf.summary.FileWriter(str(tmp_path), flush_secs=3600, max_queue=1000)
    writer.add_summary(pb.Summary(value=[pb.Summary.Value(tag="a", simple_value=1.0)]), 1)
    writer.flush()
    assert [e.value for e in _accumulator(tmp_path).Scalars("a")] == [1.0]
    writer.close()


def test_a_full_disk_drops_events_with_one_warning_and_reopen_writes_again(tmp_path, caplog):
    """Training goes on: no `OSError` reaches the caller (TF's writer thread dies instead)."""
    with mounted_tmpfs(tmp_path / "disk") as disk:
        filler = fill(disk)
        with caplog.at_level(logging.WARNING, logger="nbdist"):
            writer = tf.summary.FileWriter(str(disk), graph=tf.get_default_graph(), max_queue=2)
            for step in range(20):
                writer.add_summary(pb.Summary(value=[pb.Summary.Value(tag="a", simple_value=step)]), step)
            writer.flush()
        assert [r.getMessage() for r in caplog.records if "No space left" in r.getMessage()] == [
            f"No space left for events in {writer.path} (No space left on device): this writer drops its "
            "events from now on and training goes on; free space, then call reopen() to write a new "
            "event file."
        ]
        os.remove(filler)
        writer.reopen()
        writer.add_summary(pb.Summary(value=[pb.Summary.Value(tag="b", simple_value=1.0)]), 1)
        writer.close()
        assert [e.value for e in _accumulator(disk).Scalars("b")] == [1.0]


def test_writers_on_one_directory_keep_their_own_files_and_reopen_starts_a_new_one(tmp_path):
    a, b = tf.summary.FileWriter(str(tmp_path)), tf.summary.FileWriter(str(tmp_path))
    a.add_summary(pb.Summary(value=[pb.Summary.Value(tag="a", simple_value=1.0)]), 1)
    b.add_summary(pb.Summary(value=[pb.Summary.Value(tag="b", simple_value=2.0)]), 1)
    a.close()
    a.add_summary(pb.Summary(value=[pb.Summary.Value(tag="a", simple_value=9.0)]), 2)  # dropped: closed
    a.reopen()
    a.add_summary(pb.Summary(value=[pb.Summary.Value(tag="a", simple_value=3.0)]), 3)
    a.close()
    b.close()
    assert len(list(tmp_path.glob("events.out.tfevents.*"))) == 3
    acc = _accumulator(tmp_path)
    assert [(e.step, e.value) for e in acc.Scalars("a")] == [(1, 1.0), (3, 3.0)]
    assert [e.value for e in acc.Scalars("b")] == [2.0]


def test_file_writer_cache_gives_one_writer_per_directory_with_the_graph(tmp_path):
    tf.constant(1.0, name="c")
    try:
        writer = tf.summary.FileWriterCache.get(str(tmp_path))
        assert tf.summary.FileWriterCache.get(str(tmp_path)) is writer
        writer.flush()
        assert [n.name for n in _accumulator(tmp_path).Graph().node] == ["c"]
    finally:
        tf.summary.FileWriterCache.clear()


def test_file_writer_refuses_what_it_cannot_write(tmp_path):
    with pytest.raises(ValueError, match="omit session="):
        tf.summary.FileWriter(str(tmp_path), session=object())
    with tf.summary.FileWriter(str(tmp_path)) as writer:
        with pytest.raises(TypeError, match="must be an instance of `Graph` or a GraphDef"):
            writer.add_graph("not a graph")
        with pytest.raises(TypeError, match="takes a serialized Summary"):
            writer.add_summary(3.0)


def test_the_event_file_writer_is_a_default_dependency_and_summary_an_empty_extra():
    # A TF 1.x script calls tf.summary.scalar as a matter of course: a plain install must run it.
    pyproject = (Path(REPO) / "pyproject.toml").read_text()  # (tomllib is Python 3.11+)
    dependencies = re.search(r"^dependencies = \[(.*?)^\]", pyproject, re.M | re.S).group(1)
    assert re.search(r'^    "tensorboardX>=', dependencies, re.M)
    assert re.search(r'^    "protobuf>=', dependencies, re.M)
    assert re.search(r"^summary = \[\]$", pyproject, re.M)  # `pip install 'nbdist[summary]'` still works


def test_without_tensorboardx_summaries_fail_naming_it_and_training_without_them_runs():
    script = """
import sys
sys.modules["tensorboardX"] = None  # as if tensorboardX were missing (an install with --no-deps)
import nbdist as tf
try:
    tf.summary.scalar("loss", 1.0)
except ImportError as e:
    print("ImportError:", e)
step = tf.train.get_or_create_global_step()
inc = tf.assign_add(step, 1)
import tempfile
with tf.train.MonitoredTrainingSession(checkpoint_dir=tempfile.mkdtemp(), save_summaries_steps=1) as sess:
    print("steps", [int(sess.run(inc)) for _ in range(3)])
"""
    out = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        env={"PYTHONPATH": REPO, "PATH": "/usr/bin:/bin"},
        check=True,
    ).stdout
    assert "ImportError: tf.summary needs the tensorboardX package" in out
    assert (
        "it is one of nbdist's dependencies, missing from this environment: pip install 'tensorboardX>=2.6'"
        in out
    )
    assert "steps [1, 2, 3]" in out


def _images_of(lib, batches):
    summaries = [lib.summary.image(f"img{i}", value, max_outputs=n) for i, (value, n) in enumerate(batches)]
    with lib.Session() as sess:
        out = sess.run(summaries)
    decoded = []
    for serialized in out:
        for v in _parse(serialized).value:
            pixels = plt_image.imread(io.BytesIO(v.image.encoded_image_string), format="png")
            decoded.append((v.tag, v.image.height, v.image.width, v.image.colorspace, np.round(pixels * 255)))
    return decoded


def test_image_summaries_decode_to_the_pixels_tensorflow_writes(tf1_graph_mode):
    rng = np.random.RandomState(1)
    with_nan = rng.uniform(0, 3, (1, 3, 2, 3)).astype(np.float32)
    with_nan[0, 1, 1, 2] = np.nan
    batches = [
        ((rng.uniform(0, 255, (2, 3, 4, 3))).astype(np.uint8), 3),  # uint8: as is; 2 of up to 3
        (rng.uniform(0, 2, (2, 2, 3, 1)).astype(np.float32), 1),  # >= 0: largest -> 255; one image
        (rng.uniform(-2, 1, (1, 4, 4, 4)).astype(np.float32), 3),  # negatives: 0 -> 128; RGBA
        (with_nan, 3),  # the NaN pixel is TF's bad colour (red)
    ]
    ours = _images_of(tf, batches)
    with tf1_graph_mode.Graph().as_default():
        theirs = _images_of(tf1_graph_mode, batches)
    assert [o[:4] for o in ours] == [t[:4] for t in theirs]
    assert [o[0] for o in ours][:3] == ["img0/image/0", "img0/image/1", "img1/image"]
    for mine, real in zip(ours, theirs):
        np.testing.assert_array_equal(mine[4], real[4], err_msg=mine[0])


def test_an_image_summary_needs_four_dimensions_and_1_3_or_4_channels():
    h = tf.summary.image("bad", tf.zeros([2, 2, 2]))
    with (
        tf.Session() as sess,
        pytest.raises(tf.errors.InvalidArgumentError, match=r"last dim 1, 3, or 4, not \[2, 2, 2\]"),
    ):
        sess.run(h)
