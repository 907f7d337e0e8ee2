"""TF's protocol-buffer classes at tf.* and tf.summary.* (issue 32): tensorboardX's messages,
wire-compatible with real TensorFlow's: each side parses what the other serializes."""

import os

import numpy as np
import pytest

import nbdist as tf

pytestmark = pytest.mark.tf


def _build(t, name):
    """One message of class `name`, built the same way with library `t` (nbdist's or TF's)."""
    builds = {
        "Summary": lambda: t.Summary(
            value=[
                t.Summary.Value(tag="loss", simple_value=0.25),
                t.Summary.Value(tag="h", histo=t.HistogramProto(min=-1.0, max=2.0, num=3, bucket=[1, 2])),
                t.Summary.Value(
                    tag="img",
                    image=t.Summary.Image(height=1, width=2, colorspace=3, encoded_image_string=b"png"),
                ),
            ]
        ),
        "Event": lambda: t.Event(
            wall_time=12.5,
            step=7,
            summary=t.Summary(value=[t.Summary.Value(tag="acc", simple_value=0.75)]),
        ),
        "SessionLog": lambda: t.SessionLog(
            status=t.SessionLog.CHECKPOINT, checkpoint_path="/tmp/m.ckpt-3", msg="saved"
        ),
        "HistogramProto": lambda: t.HistogramProto(
            min=0.0, max=4.0, num=5, sum=10.0, sum_squares=30.0, bucket_limit=[1.0, 4.0], bucket=[2, 3]
        ),
        "SummaryMetadata": lambda: t.SummaryMetadata(
            plugin_data=t.SummaryMetadata.PluginData(plugin_name="text", content=b"\x08\x01"),
            display_name="shown",
            summary_description="described",
        ),
        "GraphDef": lambda: t.GraphDef(
            node=[
                t.NodeDef(name="x", op="Placeholder", attr={"dtype": t.AttrValue(type=1)}),
                t.NodeDef(name="y", op="Neg", input=["x"], device="/job:ps/task:0"),
            ]
        ),
        "NodeDef": lambda: t.NodeDef(
            name="c",
            op="Const",
            attr={
                "value": t.AttrValue(s=b"bytes"),
                "ints": t.AttrValue(list=t.AttrValue.ListValue(i=[1, -2, 3])),
                "f": t.AttrValue(func=t.NameAttrList(name="fn", attr={"k": t.AttrValue(b=True)})),
            },
        ),
        "AttrValue": lambda: t.AttrValue(list=t.AttrValue.ListValue(f=[0.5, -1.5], s=[b"a"])),
        "NameAttrList": lambda: t.NameAttrList(name="f", attr={"T": t.AttrValue(type=2)}),
        "LogMessage": lambda: t.LogMessage(level=t.LogMessage.WARN, message="careful"),
    }
    return builds[name]()


NAMES = [
    "Summary",
    "Event",
    "SessionLog",
    "HistogramProto",
    "SummaryMetadata",
    "GraphDef",
    "NodeDef",
    "AttrValue",
    "NameAttrList",
    "LogMessage",
]


@pytest.mark.parametrize("name", NAMES)
def test_top_level_proto_is_wire_compatible_with_tensorflows(tf1, name):
    ours, theirs = _build(tf, name), _build(tf1, name)
    assert ours.SerializeToString(deterministic=True) == theirs.SerializeToString(deterministic=True)
    # Each parses the other's bytes into an equal message.
    assert getattr(tf1, name).FromString(ours.SerializeToString()) == theirs
    assert getattr(tf, name).FromString(theirs.SerializeToString()) == ours


def test_the_proto_classes_are_spelled_as_tf_programs_spell_them():
    summary = tf.Summary(value=[tf.Summary.Value(tag="loss", simple_value=0.5)])
    assert summary.value[0].simple_value == 0.5
    assert tf.Event(summary=summary).WhichOneof("what") == "summary"
    assert tf.SessionLog(status=tf.SessionLog.START).status == 1
    assert tf.HistogramProto(num=2).num == 2
    assert tf.SummaryMetadata(display_name="d").display_name == "d"
    assert tf.GraphDef(node=[tf.NodeDef(name="n", op="NoOp")]).node[0].op == "NoOp"
    assert tf.AttrValue(i=3).WhichOneof("value") == "i"
    assert tf.NameAttrList(name="f").name == "f"
    assert tf.LogMessage(level=tf.LogMessage.ERROR).level == 40
    # tf.summary's classes are the same ones
    assert tf.summary.Summary is tf.Summary
    assert tf.summary.Event is tf.Event
    assert tf.summary.SessionLog is tf.SessionLog
    assert tf.summary.SummaryDescription(type_hint="scalar").type_hint == "scalar"
    tagged = tf.summary.TaggedRunMetadata(tag="step_1", run_metadata=b"\x0a\x00")
    assert tagged.tag == "step_1"


def test_summary_description_and_tagged_run_metadata_are_tensorflows(tf1):
    ours = tf.summary.SummaryDescription(type_hint="histogram").SerializeToString()
    assert tf1.summary.SummaryDescription.FromString(ours).type_hint == "histogram"
    theirs = tf1.summary.TaggedRunMetadata(tag="s", run_metadata=b"abc").SerializeToString()
    assert tf.summary.TaggedRunMetadata.FromString(theirs).run_metadata == b"abc"
    event = tf.summary.Event(
        step=3, tagged_run_metadata=tf.summary.TaggedRunMetadata(tag="s", run_metadata=b"abc")
    )
    assert tf1.summary.Event.FromString(event.SerializeToString()).tagged_run_metadata.tag == "s"
    log = tf.summary.SessionLog(status=tf.summary.SessionLog.STOP)
    assert tf1.summary.SessionLog.FromString(log.SerializeToString()).status == tf1.SessionLog.STOP


def test_filewriter_writes_a_hand_built_summary_and_session_log_tensorflow_reads(tf1, tmp_path):
    """The commonest TF 1.x pattern: a Summary built by hand, given to add_summary."""
    writer = tf.summary.FileWriter(str(tmp_path))
    for step in range(3):
        value = tf.Summary.Value(tag="eval/accuracy", simple_value=0.5 + step / 8)
        writer.add_summary(tf.Summary(value=[value]), global_step=step)
    writer.add_session_log(tf.SessionLog(status=tf.SessionLog.STOP), global_step=3)
    writer.add_event(tf.Event(step=4, log_message=tf.LogMessage(level=tf.LogMessage.INFO, message="hi")))
    writer.close()
    (name,) = os.listdir(tmp_path)
    events = list(tf1.train.summary_iterator(str(tmp_path / name)))
    scalars = [(e.step, v.tag, v.simple_value) for e in events for v in e.summary.value]
    assert scalars == [(0, "eval/accuracy", 0.5), (1, "eval/accuracy", 0.625), (2, "eval/accuracy", 0.75)]
    assert [(e.step, e.session_log.status) for e in events if e.HasField("session_log")] == [
        (3, tf1.SessionLog.STOP)
    ]
    assert [e.log_message.message for e in events if e.HasField("log_message")] == ["hi"]


def test_filewriter_takes_tensorflows_own_summary_proto(tf1, tmp_path):
    writer = tf.summary.FileWriter(str(tmp_path))
    writer.add_summary(tf1.Summary(value=[tf1.Summary.Value(tag="x", simple_value=2.0)]), 1)
    writer.close()
    (name,) = os.listdir(tmp_path)
    (event,) = [e for e in tf.train.summary_iterator(str(tmp_path / name)) if e.HasField("summary")]
    assert isinstance(event.summary, tf.Summary)
    assert (event.step, event.summary.value[0].simple_value) == (1, 2.0)


def test_a_summary_op_value_parses_as_tf_summary():
    with tf.Graph().as_default():
        s = tf.summary.scalar("loss", tf.constant(np.float32(1.5)))
        with tf.Session() as sess:
            parsed = tf.Summary.FromString(sess.run(s))
    assert [(v.tag, v.simple_value) for v in parsed.value] == [("loss", 1.5)]


def test_a_frozen_graph_read_into_tf_graph_def_imports_and_runs_as_in_tensorflow(tf1, tmp_path):
    """TF 1.x's frozen-model pattern: tf.GraphDef().ParseFromString(.pb bytes), tf.import_graph_def."""
    w = np.array([[1.0, -2.0], [0.5, 3.0]], np.float32)
    x_value = np.array([[1.0, 2.0], [-1.0, 0.5]], np.float32)
    with tf1.Graph().as_default() as graph:
        x = tf1.placeholder(tf1.float32, [None, 2], name="x")
        tf1.nn.relu(tf1.matmul(x, tf1.constant(w)) + 1.0, name="out")
        tf1.io.write_graph(graph, str(tmp_path), "frozen.pb", as_text=False)
        with tf1.Session() as sess:
            theirs = sess.run("out:0", {"x:0": x_value})
    graph_def = tf.GraphDef()
    with tf.gfile.GFile(str(tmp_path / "frozen.pb"), "rb") as f:
        graph_def.ParseFromString(f.read())
    with tf.Graph().as_default():
        (out,) = tf.import_graph_def(graph_def, return_elements=["out:0"], name="")
        with tf.Session() as sess:
            np.testing.assert_array_equal(sess.run(out, {"x:0": x_value}), theirs)


def test_tf_summary_summary_is_built_as_tf_programs_build_it():
    value = tf.summary.Summary.Value(tag="t", simple_value=1.0)
    summary = tf.summary.Summary(value=[value])
    assert tf.summary.Event(summary=summary).summary.value[0].tag == "t"
    assert tf.summary.SessionLog(status=tf.summary.SessionLog.START).status == tf.SessionLog.START
