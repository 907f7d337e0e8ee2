"""tf.train.ClusterDef / JobDef (ClusterSpec.as_cluster_def and back) and tf.GraphOptions /
tf.OptimizerOptions in a ConfigProto (issue 32), against real TensorFlow's classes."""

import numpy as np
import pytest

import nbdist as tf

CLUSTER = {"ps": ["ps0:2222"], "worker": {0: "w0:2222", 3: "w3:2222"}}


def _jobs(cluster_def):
    return [(j.name, dict(j.tasks)) for j in cluster_def.job]


@pytest.mark.tf
def test_as_cluster_def_has_tensorflows_jobs_and_tasks(tf1):
    ours = tf.train.ClusterSpec(CLUSTER).as_cluster_def()
    theirs = tf1.train.ClusterSpec(CLUSTER).as_cluster_def()
    assert isinstance(ours, tf.train.ClusterDef)
    assert _jobs(ours) == _jobs(theirs) == [("ps", {0: "ps0:2222"}), ("worker", {0: "w0:2222", 3: "w3:2222"})]
    # each library's ClusterSpec takes the other's ClusterDef (field by field for TF's)
    assert tf.train.ClusterSpec(theirs) == tf.train.ClusterSpec(CLUSTER)
    assert tf.train.ClusterSpec(ours) == tf.train.ClusterSpec(CLUSTER)


@pytest.mark.tf
def test_cluster_def_built_job_by_job_as_in_tensorflow(tf1):
    specs = []
    for t in (tf, tf1):
        cluster_def = t.train.ClusterDef()
        cluster_def.job.add(name="worker", tasks={0: "w0:1", 1: "w1:1"})
        cluster_def.job.extend([t.train.JobDef(name="ps", tasks={0: "p0:1"})])
        spec = t.train.ClusterSpec(cluster_def)
        specs.append(
            (
                sorted(spec.jobs),
                spec.job_tasks("worker"),
                spec.task_address("ps", 0),
                spec.num_tasks("worker"),
            )
        )
    assert specs[0] == specs[1] == (["ps", "worker"], ["w0:1", "w1:1"], "p0:1", 2)


@pytest.mark.tf
def test_cluster_def_refuses_unknown_fields_as_tensorflow(tf1):
    for t in (tf, tf1):
        with pytest.raises(ValueError, match='Protocol message JobDef has no "address" field'):
            t.train.ClusterDef().job.add(name="ps", address="x:1")


def test_an_empty_cluster_def_is_an_empty_cluster_and_a_job_def_compares_by_value():
    assert tf.train.ClusterSpec(tf.train.ClusterDef()).jobs == []
    assert tf.train.JobDef(name="ps", tasks={"1": "a:1"}) == tf.train.JobDef(name="ps", tasks={1: "a:1"})
    assert tf.train.ClusterDef([tf.train.JobDef(name="ps")]) != tf.train.ClusterDef()
    with pytest.raises(TypeError, match=r"ClusterDef\.job holds JobDefs"):
        tf.train.ClusterDef([{"name": "ps"}])


def _config(t):
    optimizer = t.OptimizerOptions(
        opt_level=t.OptimizerOptions.L0,
        do_common_subexpression_elimination=True,
        global_jit_level=t.OptimizerOptions.OFF,
    )
    return t.ConfigProto(graph_options=t.GraphOptions(optimizer_options=optimizer, infer_shapes=True))


@pytest.mark.tf
def test_graph_and_optimizer_options_have_tensorflows_fields_and_defaults(tf1):
    for name, ours, theirs in [
        ("GraphOptions", tf.GraphOptions(), tf1.GraphOptions()),
        ("OptimizerOptions", tf.OptimizerOptions(), tf1.OptimizerOptions()),
    ]:
        fields = [f.name for f in getattr(tf1, name).DESCRIPTOR.fields]
        assert sorted(vars(ours)) == sorted(fields), name
        for field in fields:
            if field not in ("optimizer_options", "rewrite_options"):
                assert getattr(ours, field) == getattr(theirs, field), (name, field)
    for level in ("L0", "L1", "DEFAULT", "OFF", "ON_1", "ON_2"):
        assert getattr(tf.OptimizerOptions, level) == getattr(tf1.OptimizerOptions, level)
    ours, theirs = _config(tf), _config(tf1)
    for c in (ours, theirs):
        options = c.graph_options.optimizer_options
        assert (options.opt_level, options.do_common_subexpression_elimination) == (-1, True)
        assert (options.global_jit_level, c.graph_options.infer_shapes) == (-1, True)
    assert ours.graph_options.optimizer_options == tf.OptimizerOptions(
        opt_level=-1, do_common_subexpression_elimination=True, global_jit_level=-1
    )
    for t in (tf, tf1):
        with pytest.raises(ValueError, match='Protocol message GraphOptions has no "nope" field'):
            t.GraphOptions(nope=1)


@pytest.mark.tf
def test_a_session_with_graph_options_computes_what_tensorflows_does(tf1):
    values = []
    for t in (tf, tf1):
        with t.Graph().as_default():
            x = t.constant(np.arange(6.0, dtype=np.float32).reshape(2, 3))
            y = t.reduce_sum(t.square(x) + t.square(x), axis=1)
            with t.Session(config=_config(t)) as sess:
                values.append(sess.run(y))
    np.testing.assert_array_equal(values[0], values[1])
