"""Device names and requests: `DeviceSpec`, `tf.device` scopes and device functions.

Recording only: every test checks the device an op *requests* (``op.device``), which is
what the master later completes and enforces. Scopes must merge exactly as TF 1.x's do.
"""

import numpy as np
import pytest

import nbdist as tf
from nbdist.graph.device import (
    DeviceSpec,
    Task,
    canonical_device,
    canonicalize,
    merge_device,
    task_of,
    task_prefix,
)

pytestmark = pytest.mark.usefixtures("graph")


# -- DeviceSpec: parsing ------------------------------------------------------------------------
def test_from_string_parses_every_field():
    spec = DeviceSpec.from_string("/job:ps/replica:0/task:3/device:CPU:1")
    assert (spec.job, spec.replica, spec.task, spec.device_type, spec.device_index) == ("ps", 0, 3, "CPU", 1)


def test_from_string_leaves_missing_fields_unset():
    spec = DeviceSpec.from_string("/job:worker")
    assert (spec.job, spec.replica, spec.task, spec.device_type, spec.device_index) == (
        "worker",
        None,
        None,
        None,
        None,
    )


def test_from_string_accepts_fields_in_any_order():
    assert DeviceSpec.from_string("/task:1/job:ps").to_string() == "/job:ps/task:1"


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("/cpu:0", "/device:CPU:0"),
        ("/CPU:0", "/device:CPU:0"),
        ("/gpu:1", "/device:GPU:1"),
        ("/device:cpu:0", "/device:CPU:0"),
        ("/device:CPU:*", "/device:CPU:*"),
        ("CPU:0", "/device:CPU:0"),
        ("/job:ps/cpu:0", "/job:ps/device:CPU:0"),
    ],
)
def test_short_device_forms_canonicalize_as_tf(text, canonical):
    assert DeviceSpec.from_string(text).to_string() == canonical


@pytest.mark.parametrize("empty", [None, ""])
def test_empty_spec_has_no_fields(empty):
    assert DeviceSpec.from_string(empty).to_string() == ""


def test_from_string_copies_a_device_spec():
    spec = DeviceSpec(job="ps", task=1)
    copy = DeviceSpec.from_string(spec)
    copy.task = 2
    assert spec.task == 1


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("/job:", "bad job name ''"),
        ("/job:p s", "bad job name 'p s'"),
        ("/task:x", "task index must be a non-negative integer, got 'x'"),
        ("/task:-1", "task index must be a non-negative integer, got '-1'"),
        ("/replica:", "replica index must be a non-negative integer, got ''"),
        ("/device:", "empty device type"),
        ("/device:CPU:x", "device index must be an integer or '\\*', got 'x'"),
        ("/job:ps/bogus", "unknown device field 'bogus' in '/job:ps/bogus'"),
    ],
)
def test_parse_errors_name_the_bad_part(text, message):
    with pytest.raises(ValueError, match=message):
        DeviceSpec.from_string(text)


@pytest.mark.parametrize("text", ["/tsak:1", "/job:ps/host:0"])
def test_misspelt_field_is_not_taken_for_a_device_type(text):
    with pytest.raises(ValueError, match="unknown device field"):
        DeviceSpec.from_string(text)


def test_non_string_spec_is_a_type_error():
    with pytest.raises(TypeError, match="device spec must be a string or DeviceSpec, got 3"):
        DeviceSpec.from_string(3)


# -- DeviceSpec: merging and printing -----------------------------------------------------------
def test_to_string_is_canonical_order_with_only_set_fields():
    spec = DeviceSpec(task=2, job="worker", device_type="cpu")
    assert spec.to_string() == "/job:worker/task:2/device:CPU:*"


def test_merge_from_overwrites_only_fields_set_in_other():
    spec = DeviceSpec.from_string("/job:worker/task:1/device:CPU:0")
    spec.merge_from("/job:ps")
    assert spec.to_string() == "/job:ps/task:1/device:CPU:0"


def test_make_merged_spec_leaves_both_inputs_unchanged():
    base = DeviceSpec.from_string("/job:worker/task:1")
    other = DeviceSpec.from_string("/task:2")
    merged = base.make_merged_spec(other)
    assert merged.to_string() == "/job:worker/task:2"
    assert base.to_string() == "/job:worker/task:1"
    assert other.to_string() == "/task:2"


def test_is_fully_specified_needs_every_field():
    assert DeviceSpec.from_string(canonical_device("ps", 0)).is_fully_specified()
    assert not DeviceSpec.from_string("/job:ps/task:0").is_fully_specified()


def test_specs_compare_equal_to_equivalent_strings_and_hash_alike():
    spec = DeviceSpec.from_string("/task:1/job:ps")
    assert spec == "/job:ps/task:1"
    assert spec == DeviceSpec(job="ps", task=1)
    assert hash(spec) == hash(DeviceSpec(job="ps", task=1))
    assert spec != DeviceSpec(job="ps", task=2)


def test_canonical_device_is_fully_specified_string():
    assert canonical_device("worker", 3) == "/job:worker/replica:0/task:3/device:CPU:0"


def test_canonicalize_normalizes_without_completing():
    assert canonicalize("/task:0/JOB:ps/cpu:0") == "/job:ps/task:0/device:CPU:0"
    assert canonicalize(None) == ""


def test_task_spells_one_task_every_way_and_parses_any_device_of_it():
    t = Task.parse("/job:worker/replica:0/task:1/device:CPU:0")
    assert t == ("worker", 1) and t == Task("worker", 1)
    assert (t.device, t.name, t.label, t.slug) == (
        "/job:worker/replica:0/task:1",
        "/job:worker/task:1",
        "worker:1",
        "worker_1",
    )
    assert Task.parse(t.device) == Task.parse(t.name) == t
    assert {("worker", 1): "x"}[t] == "x"  # keys dicts as the (job, index) tuple does


@pytest.mark.parametrize("text", ["/job:ps", "/task:0", "", "/device:CPU:0"])
def test_task_parse_needs_a_job_and_a_task(text):
    with pytest.raises(ValueError, match="does not name a task"):
        Task.parse(text)


def test_task_prefix_drops_the_device_part():
    assert task_prefix("/job:ps/replica:0/task:2/device:CPU:0") == "/job:ps/replica:0/task:2"
    assert task_prefix("/job:ps/task:2") == "/job:ps/replica:0/task:2"


def test_task_of_returns_job_and_task():
    assert task_of("/job:ps/replica:0/task:1/device:CPU:0") == ("ps", 1)
    assert task_of("") == (None, None)


# -- tf.device scopes ---------------------------------------------------------------------------
def test_device_scope_sets_requested_device():
    with tf.device("/job:ps/task:0"):
        c = tf.constant(1.0)
    assert c.op.device == "/job:ps/task:0"
    assert c.device == "/job:ps/task:0"


def test_ops_outside_any_scope_request_no_device():
    assert tf.constant(1.0).device == ""


def test_inner_job_merges_over_outer_task():
    with tf.device("/job:worker/task:1"), tf.device("/job:ps"):
        c = tf.constant(1.0)
    assert c.device == "/job:ps/task:1"


def test_inner_device_type_adds_to_outer_task():
    with tf.device("/job:worker/task:1"), tf.device("/cpu:0"):
        c = tf.constant(1.0)
    assert c.device == "/job:worker/task:1/device:CPU:0"


def test_inner_replica_keeps_outer_task():
    with tf.device("/job:worker/task:1"), tf.device("/job:ps/replica:2"):
        c = tf.constant(1.0)
    assert c.device == "/job:ps/replica:2/task:1"


def test_device_none_clears_outer_scopes():
    with tf.device("/job:worker/task:1"), tf.device(None):
        c = tf.constant(1.0)
    assert c.device == ""


def test_scope_under_device_none_starts_fresh():
    with tf.device("/job:worker/task:1"), tf.device(None), tf.device("/job:ps"):
        c = tf.constant(1.0)
    assert c.device == "/job:ps"


def test_device_scope_ends_with_its_block():
    with tf.device("/job:ps/task:0"):
        pass
    assert tf.constant(1.0).device == ""


def test_device_spec_object_is_accepted_as_scope():
    with tf.device(tf.DeviceSpec(job="ps", task=2)):
        c = tf.constant(1.0)
    assert c.device == "/job:ps/task:2"


def test_device_scope_rejects_other_types():
    with (
        pytest.raises(TypeError, match=r"tf\.device\(\) takes a device string, DeviceSpec, None"),
        tf.device(42),
    ):
        pass


def test_device_scope_parse_error_is_raised_at_the_with():
    with pytest.raises(ValueError, match="unknown device field"), tf.device("/job:ps/nonsense"):
        pass


def test_device_scopes_are_recorded_per_graph():
    other = tf.Graph()
    with tf.device("/job:ps"), other.as_default():
        c = tf.constant(1.0)
    assert c.device == ""


# -- device functions ---------------------------------------------------------------------------
def _ps_for_variables(op):
    return "/job:ps/task:0" if op.type == "VariableV2" else "/job:worker"


def test_device_function_chooses_per_op():
    with tf.device(_ps_for_variables):
        v = tf.Variable(1.0)
        c = tf.constant(2.0)
    assert v.device == "/job:ps/task:0"
    assert c.device == "/job:worker"


def test_outer_string_scope_merges_under_device_function_result():
    with tf.device("/task:3"), tf.device(_ps_for_variables):
        v = tf.Variable(1.0)
        c = tf.constant(2.0)
    assert v.device == "/job:ps/task:0"  # the function's task wins
    assert c.device == "/job:worker/task:3"  # the scope fills the task the function left open


def test_device_function_sees_device_chosen_by_inner_scope():
    seen = []

    def record(op):
        seen.append(op.device)
        return op.device

    with tf.device(record), tf.device("/job:ps/task:1"):
        tf.constant(1.0)
    assert seen == ["/job:ps/task:1"]


def test_device_function_may_return_a_device_spec():
    with tf.device(lambda op: DeviceSpec(job="ps", task=4)):
        c = tf.constant(1.0)
    assert c.device == "/job:ps/task:4"


def test_device_function_returning_none_requests_no_device():
    with tf.device(lambda op: None):
        c = tf.constant(1.0)
    assert c.device == ""


def test_merge_device_function_keeps_fields_already_set_on_op():
    fn = merge_device("/job:worker/task:1")
    op = tf.constant(1.0).op
    op._set_device("/job:ps")
    assert fn(op) == "/job:ps/task:1"


# -- colocation ---------------------------------------------------------------------------------
def test_colocation_overrides_device_scopes():
    with tf.device("/job:ps/task:0"):
        a = tf.constant(1.0)
    with tf.device("/job:worker/task:5"), tf.colocate_with(a):
        b = tf.identity(a)
    assert b.device == "/job:ps/task:0"
    assert b.op.get_attr("_class") == ["loc:@Const"]


def test_device_scopes_resume_after_colocation_block():
    a = tf.constant(1.0)
    with tf.device("/job:worker/task:5"):
        with tf.colocate_with(a):
            pass
        c = tf.constant(2.0)
    assert c.device == "/job:worker/task:5"


# -- the seed placement example (TF's "Distributed TensorFlow" guide) --------------------------
def _seed_model():
    rng = np.random.default_rng(0)
    with tf.device("/job:ps/task:0"):
        weights_1 = tf.Variable(rng.normal(size=(4, 8)).astype(np.float32), name="weights_1")
        biases_1 = tf.Variable(np.zeros(8, np.float32), name="biases_1")
    with tf.device("/job:ps/task:1"):
        weights_2 = tf.Variable(rng.normal(size=(8, 2)).astype(np.float32), name="weights_2")
        biases_2 = tf.Variable(np.zeros(2, np.float32), name="biases_2")
    with tf.device("/job:worker/task:7"):
        inputs = tf.placeholder(tf.float32, [None, 4], name="input")
        labels = tf.placeholder(tf.float32, [None, 2], name="labels")
        layer_1 = tf.nn.relu(tf.matmul(inputs, weights_1) + biases_1)
        logits = tf.nn.relu(tf.matmul(layer_1, weights_2) + biases_2)
        loss = tf.square(logits - labels)
        variables = [weights_1, biases_1, weights_2, biases_2]
        grads = tf.gradients(loss, variables)
        train_op = tf.group(*[tf.assign_sub(v, 0.1 * g) for v, g in zip(variables, grads)])
    return variables, train_op


def _variable_ops(variable):
    prefix = variable.op.name + "/"
    return [variable.op] + [op for op in variable.graph.get_operations() if op.name.startswith(prefix)]


def test_seed_example_places_each_variable_and_its_ops_on_its_ps_task(graph):
    variables, _ = _seed_model()
    expected = {"weights_1": 0, "biases_1": 0, "weights_2": 1, "biases_2": 1}
    for v in variables:
        ops = _variable_ops(v)
        assert [op.name for op in ops] == [
            v.op.name,
            f"{v.op.name}/initial_value",
            f"{v.op.name}/Assign",
            f"{v.op.name}/read",
        ]
        for op in ops:
            assert op.device == f"/job:ps/task:{expected[v.op.name]}", op.name


def test_seed_example_puts_updates_with_their_variable(graph):
    variables, _ = _seed_model()
    updates = [op for op in graph.get_operations() if op.type == "AssignSub"]
    assert len(updates) == 4
    by_var = {op.inputs[0].op.name: op for op in updates}
    for v in variables:
        assert by_var[v.op.name].device == v.device
        assert by_var[v.op.name].get_attr("_class") == [f"loc:@{v.op.name}"]


def test_seed_example_puts_all_other_ops_on_worker_task_7(graph):
    variables, train_op = _seed_model()
    on_ps = {op for v in variables for op in _variable_ops(v)}
    on_ps |= {op for op in graph.get_operations() if op.type == "AssignSub"}
    others = [op for op in graph.get_operations() if op not in on_ps]
    assert train_op in others
    assert {op.type for op in others} >= {"Placeholder", "MatMul", "Add", "Relu", "Sub", "Square", "NoOp"}
    for op in others:
        assert op.device == "/job:worker/task:7", op.name


def test_seed_example_trains_in_a_local_session_ignoring_devices(graph):
    variables, train_op = _seed_model()
    rng = np.random.default_rng(1)
    feed = {
        graph.get_tensor_by_name("input:0"): rng.normal(size=(5, 4)),
        graph.get_tensor_by_name("labels:0"): rng.normal(size=(5, 2)),
    }
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        before = sess.run(variables[0]).copy()
        assert sess.run(train_op, feed) is None
        after = sess.run(variables[0])
    assert not np.array_equal(before, after)


# -- parity with TensorFlow itself --------------------------------------------------------------
def _nested_scopes_program(t):
    """The same scope program in nbdist or TF; returns [(op name, device)]."""
    g = t.Graph()
    with g.as_default():
        with t.device("/job:worker/task:1"):
            with t.device("/job:ps"):
                t.Variable(0.0, name="v")
            with t.device(None):
                t.constant(1.0, name="cleared")
            with t.device("/cpu:0"):
                t.constant(1.0, name="cpu")
            with t.device("/job:ps/replica:2"):
                t.constant(1.0, name="replica")
        with t.device("/task:3"), t.device(_ps_for_variables):
            t.Variable(1.0, name="fn_var")
            t.constant(1.0, name="fn_const")
    return [(op.name, op.device) for op in g.get_operations()]


@pytest.mark.tf
def test_scope_merging_matches_tensorflow(tf1):
    assert _nested_scopes_program(tf) == _nested_scopes_program(tf1)
