"""tf.summary's remaining names (issue 32) against real TensorFlow: tensor_summary, audio,
get_summary_description, all_v2_summary_ops, and FileWriter.add_run_metadata (TF's
mnist_with_summaries pattern: a traced step's RunMetadata in the event file)."""

import os

import numpy as np
import pytest

import nbdist as tf

pytestmark = pytest.mark.tf

CLIPS = np.sin(np.linspace(0, 20, 24, dtype=np.float32)).reshape(2, 6, 2) * 1.5


def _summary_bytes(t, build):
    with t.Graph().as_default():
        s = build(t)
        with t.Session() as sess:
            return sess.run(s), s.op.type, s.op.name


BUILDS = {
    "tensor_int": lambda t: t.summary.tensor_summary("ts", np.arange(4, dtype=np.int32).reshape(2, 2)),
    "tensor_meta": lambda t: t.summary.tensor_summary(
        "ts", np.float32(2.5), summary_description="desc", display_name="shown", family="fam"
    ),
    "tensor_strings": lambda t: t.summary.tensor_summary("s", np.array([b"a", b"bc"], object)),
    "tensor_plugin": lambda t: t.summary.tensor_summary(
        "p",
        np.float64([1.0, -1.0]),
        summary_metadata=t.SummaryMetadata(plugin_data=t.SummaryMetadata.PluginData(plugin_name="pr")),
    ),
    "audio_stereo": lambda t: t.summary.audio("snd", CLIPS, 8000),
    "audio_mono_one": lambda t: t.summary.audio("mono", CLIPS[:, :, 0], 16000, max_outputs=1),
    "audio_more_outputs_than_clips": lambda t: t.summary.audio("snd", CLIPS[:1], 44100.0, max_outputs=5),
    "audio_empty_batch": lambda t: t.summary.audio("e", np.zeros([0, 4], np.float32), 8000),
}


@pytest.mark.parametrize("name", sorted(BUILDS))
def test_summary_bytes_equal_tensorflows(tf1, name):
    ours, theirs = _summary_bytes(tf, BUILDS[name]), _summary_bytes(tf1, BUILDS[name])
    assert tf.Summary.FromString(ours[0]) == tf.Summary.FromString(theirs[0])
    assert ours == theirs  # bytes, op type and name


def test_tensor_summary_and_audio_join_the_summaries_collection():
    with tf.Graph().as_default():
        a = tf.summary.audio("snd", CLIPS, 8000)
        t = tf.summary.tensor_summary("t", [1.0], collections=["mine"])
        assert tf.get_collection(tf.GraphKeys.SUMMARIES) == [a]
        assert tf.get_collection("mine") == [t]
        with tf.Session() as sess:
            merged = tf.Summary.FromString(sess.run(tf.summary.merge_all()))
    assert [v.tag for v in merged.value] == ["snd/audio/0", "snd/audio/1"]


def test_audio_of_a_wrong_rank_fails_when_run(tf1):
    for t in (tf, tf1):
        with t.Graph().as_default():
            x = t.placeholder(t.float32)
            s = t.summary.audio("a", x, 8000)
            with (
                t.Session() as sess,
                pytest.raises(t.errors.InvalidArgumentError, match=r"Tensor must be 3-D or 2-D, got: \[3\]"),
            ):
                sess.run(s, {x: np.zeros([3], np.float32)})


def test_get_summary_description_as_tensorflow(tf1):
    for t in (tf, tf1):
        with t.Graph().as_default():
            s = t.summary.tensor_summary("ts", [1.0])
            with pytest.raises(ValueError, match="Can't get_summary_description on TensorSummaryV2"):
                t.summary.get_summary_description(s.op.node_def)
        node = t.NodeDef(
            name="old", op="TensorSummary", attr={"description": t.AttrValue(s=b'{"typeHint": "scalar"}')}
        )
        assert t.summary.get_summary_description(node).type_hint == "scalar"


def test_all_v2_summary_ops_is_empty_in_a_tf1_graph(tf1):
    for t in (tf, tf1):
        with t.Graph().as_default():
            t.summary.scalar("loss", t.constant(1.0))
            assert t.summary.all_v2_summary_ops() == []


# -- FileWriter.add_run_metadata ---------------------------------------------------------------------
def _traced_run_metadata(t):
    with t.Graph().as_default() as graph:
        x = t.placeholder(t.float32, [2], name="x")
        y = t.reduce_sum(t.square(x), name="y")
        md = t.RunMetadata()
        with t.Session() as sess:
            options = t.RunOptions(trace_level=t.RunOptions.FULL_TRACE)
            sess.run(y, {x: [1.0, 2.0]}, options=options, run_metadata=md)
    return graph, md


def test_add_run_metadata_writes_a_tagged_run_metadata_tensorflow_reads(tf1, tmp_path):
    graph, md = _traced_run_metadata(tf)
    writer = tf.summary.FileWriter(str(tmp_path), graph)
    writer.add_run_metadata(md, "step_3", global_step=3)
    with pytest.raises(ValueError, match="The provided tag was already used for this event type"):
        writer.add_run_metadata(md, "step_3")
    _, theirs = _traced_run_metadata(tf1)
    writer.add_run_metadata(theirs, "tf_step", 4)  # TF's own RunMetadata is written as is
    writer.close()
    (name,) = os.listdir(tmp_path)
    events = [
        e for e in tf1.train.summary_iterator(str(tmp_path / name)) if e.HasField("tagged_run_metadata")
    ]
    assert [(e.step, e.tagged_run_metadata.tag) for e in events] == [(3, "step_3"), (4, "tf_step")]
    parsed = tf1.RunMetadata.FromString(events[0].tagged_run_metadata.run_metadata)
    ours = [(d.device, [s["node_name"] for s in d.node_stats]) for d in md.step_stats.dev_stats]
    assert [(d.device, [s.node_name for s in d.node_stats]) for d in parsed.step_stats.dev_stats] == ours
    assert {"y"} <= {s.node_name for d in parsed.step_stats.dev_stats for s in d.node_stats}
    for d in parsed.step_stats.dev_stats:
        for s in d.node_stats:
            assert s.all_start_micros > 0 and s.all_end_rel_micros >= 0
            assert s.timeline_label.startswith(f"{s.node_name} = ")
    assert tf1.RunMetadata.FromString(events[1].tagged_run_metadata.run_metadata) == theirs


def test_add_run_metadata_holds_the_partition_graphs(tf1, tmp_path):
    md = tf.RunMetadata()
    with tf.Graph().as_default() as graph:
        tf.add(tf.constant(1.0, name="a"), 2.0, name="sum")
        md.partition_graphs.append({"device": "/job:localhost/replica:0/task:0", **graph.as_graph_def()})
    writer = tf.summary.FileWriter(str(tmp_path))
    writer.add_run_metadata(md, "parts")
    writer.close()
    (name,) = os.listdir(tmp_path)
    (event,) = [
        e for e in tf1.train.summary_iterator(str(tmp_path / name)) if e.HasField("tagged_run_metadata")
    ]
    (part,) = tf1.RunMetadata.FromString(event.tagged_run_metadata.run_metadata).partition_graphs
    ops = {n.name: n.op for n in part.node}
    assert (ops["a"], ops["sum"], sorted(ops.values())) == ("Const", "Add", ["Add", "Const", "Const"])
    assert [n.device for n in part.node] == [""] * 3
