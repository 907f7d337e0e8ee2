"""`tf.train.replica_device_setter`: the devices it requests, pinned and checked against real TF.

Each program builds a small between-graph-replication graph with a library (``nbdist`` or
``tensorflow.compat.v1``) and returns ``{op name: requested device}``; the parity tests
compare nbdist's table with TensorFlow's on every op both graphs have (all variables,
their reads and assigns, optimizer slots and the model's ops are in both).
"""

import numpy as np
import pytest

import nbdist as tf
from nbdist.train.device_setter import GreedyLoadBalancingStrategy, byte_size_load_fn


def _devices(graph):
    return {op.name: op.device for op in graph.get_operations()}


def _build(lib, fn, types=False):
    graph = lib.Graph()
    with graph.as_default():
        fn(lib)
    if types:
        return {op.name: op.type for op in graph.get_operations()}
    return _devices(graph)


def _round_robin(lib):
    with lib.device(lib.train.replica_device_setter(ps_tasks=3, worker_device="/job:worker/task:1")):
        x = lib.placeholder(lib.float32, [None, 4], name="x")
        h = x
        for i in range(4):
            w = lib.Variable(np.ones((4, 4), np.float32), name=f"w{i}")
            h = lib.matmul(h, w, name=f"matmul{i}")
        b = lib.Variable(np.zeros(4, np.float32), name="b")
        lib.add(h, b, name="out")


def _cluster_dict(lib):
    cluster = {"ps": ["127.0.0.1:1", "127.0.0.1:2"], "worker": ["127.0.0.1:3", "127.0.0.1:4"]}
    with lib.device(lib.train.replica_device_setter(cluster=cluster, worker_device="/job:worker/task:0")):
        a = lib.Variable(1.0, name="a")
        c = lib.Variable(2.0, name="c")
        lib.multiply(a, c, name="prod")


def _cluster_spec(lib):
    cluster = lib.train.ClusterSpec({"ps": ["127.0.0.1:1"], "worker": ["127.0.0.1:3"]})
    with lib.device(lib.train.replica_device_setter(cluster=cluster)):
        a = lib.Variable(1.0, name="a")
        lib.square(a, name="sq")


def _merged_with_explicit_devices(lib):
    with lib.device("/job:worker/task:7"), lib.device(lib.train.replica_device_setter(ps_tasks=2)):
        v0 = lib.Variable(1.0, name="v0")
        with lib.device("/job:ps/task:1"):
            v1 = lib.Variable(2.0, name="v1")  # an explicit task wins (the strategy still takes a turn)
        v2 = lib.Variable(3.0, name="v2")
        with lib.device("/job:other"):
            v3 = lib.Variable(4.0, name="v3")  # another job: keeps it, takes no ps task
        with lib.device("/job:worker/task:2"):
            s = lib.add(v0, v1, name="explicit_worker")
        with lib.device("/device:CPU:0"):
            lib.add(s, v2, name="on_cpu")
        lib.add_n([v0, v1, v2, v3], name="sum")


def _unmerged(lib):
    with lib.device(lib.train.replica_device_setter(ps_tasks=2, merge_devices=False)):
        with lib.device("/job:ps/task:1"):
            lib.Variable(1.0, name="explicit")
        lib.Variable(1.0, name="implicit")
        with lib.device("/job:foo"):
            lib.constant(1.0, name="kept")


def _custom_ps_ops(lib):
    with lib.device(lib.train.replica_device_setter(ps_tasks=2, ps_ops=["Const"])):
        lib.constant(1.0, name="c0")
        lib.constant(2.0, name="c1")
        lib.Variable(3.0, name="v")


def _greedy_by_bytes(lib):
    strategy = GreedyLoadBalancingStrategy(2, byte_size_load_fn)
    with lib.device(lib.train.replica_device_setter(ps_tasks=2, ps_strategy=strategy)):
        lib.Variable(np.zeros((100, 10), np.float32), name="big")  # 4000 B -> ps 0
        lib.Variable(np.zeros((10,), np.float32), name="small1")  # ps 1 (40 B)
        lib.Variable(np.zeros((10,), np.float32), name="small2")  # ps 1 (80 B)
        lib.Variable(np.zeros((50, 10), np.float64), name="mid")  # ps 1 (4080 B)
        lib.Variable(np.zeros((3,), np.float32), name="last")  # ps 0


def _partitioned(lib):
    with lib.device(lib.train.replica_device_setter(ps_tasks=3)):
        emb = lib.get_variable("emb", [12, 4], partitioner=lib.fixed_size_partitioner(3))
        w = lib.get_variable("w", [4, 2], initializer=lib.zeros_initializer())
        lib.matmul(lib.ones([2, 12]), lib.matmul(emb.as_tensor(), w), name="logits")


def _with_adam_slots(lib):
    with lib.device(lib.train.replica_device_setter(ps_tasks=2, worker_device="/job:worker/task:0")):
        x = lib.constant(np.ones((2, 3), np.float32), name="x")
        w = lib.Variable(np.ones((3, 1), np.float32), name="w")
        b = lib.Variable(np.zeros(1, np.float32), name="b")
        gs = lib.train.get_or_create_global_step()
        loss = lib.reduce_sum(lib.square(lib.add(lib.matmul(x, w), b, name="logits")), name="loss")
        lib.train.AdamOptimizer(0.1).minimize(loss, global_step=gs, name="train")


PROGRAMS = {
    "round_robin": _round_robin,
    "cluster_dict": _cluster_dict,
    "cluster_spec": _cluster_spec,
    "merged_with_explicit_devices": _merged_with_explicit_devices,
    "unmerged": _unmerged,
    "custom_ps_ops": _custom_ps_ops,
    "greedy_by_bytes": _greedy_by_bytes,
    "partitioned": _partitioned,
    "with_adam_slots": _with_adam_slots,
}


# -- nbdist on its own: the table TF gives, written out -------------------------------------------
def test_round_robin_over_ps_tasks_counts_only_ps_ops():
    d = _build(tf, _round_robin)
    assert [d[f"w{i}"] for i in range(4)] + [d["b"]] == [
        "/job:ps/task:0",
        "/job:ps/task:1",
        "/job:ps/task:2",
        "/job:ps/task:0",
        "/job:ps/task:1",
    ]
    assert d["x"] == d["matmul0"] == d["out"] == "/job:worker/task:1"
    # A variable's read and assign follow it, not the setter.
    assert d["w1/read"] == d["w1/Assign"] == "/job:ps/task:1"


def test_explicit_device_fields_win_when_merging():
    d = _build(tf, _merged_with_explicit_devices)
    assert d["v0"] == "/job:ps/task:0"
    assert d["v1"] == "/job:ps/task:1"
    assert d["v2"] == "/job:ps/task:0"  # v1 took round-robin turn 1 (TF counts it)
    assert d["v3"] == "/job:other/task:7"  # outer task fills the unset field
    assert d["explicit_worker"] == "/job:worker/task:2"
    assert d["on_cpu"] == "/job:worker/task:7/device:CPU:0"
    assert d["sum"] == "/job:worker/task:7"


def test_greedy_strategy_balances_bytes():
    d = _build(tf, _greedy_by_bytes)
    assert [d[n] for n in ("big", "small1", "small2", "mid", "last")] == [
        "/job:ps/task:0",
        "/job:ps/task:1",
        "/job:ps/task:1",
        "/job:ps/task:1",
        "/job:ps/task:0",
    ]


def test_partitioned_variable_shards_spread_over_ps_tasks():
    d = _build(tf, _partitioned)
    assert [d[f"emb/part_{i}"] for i in range(3)] == ["/job:ps/task:0", "/job:ps/task:1", "/job:ps/task:2"]
    assert d["w"] == "/job:ps/task:0"
    # The initializers are colocated with their shard (device cleared, `_class` set), as in TF.
    g = tf.Graph()
    with g.as_default():
        _partitioned(tf)
    init = [op for op in g.get_operations() if op.name.startswith("emb/part_1/Initializer/")]
    assert init and all(op.device == "" for op in init)
    assert all(op.get_attr("_class") == ["loc:@emb/part_1"] for op in init)


def test_no_ps_job_gives_none():
    assert tf.train.replica_device_setter(cluster={"worker": ["127.0.0.1:1"]}) is None
    assert tf.train.replica_device_setter(ps_tasks=0) is None


def test_strategy_must_be_callable():
    with pytest.raises(TypeError, match="ps_strategy must be callable"):
        tf.train.replica_device_setter(ps_tasks=1, ps_strategy=3)


def test_byte_size_load_fn_needs_a_single_output():
    g = tf.Graph()
    with g.as_default():
        op = tf.no_op(name="nothing")
    with pytest.raises(ValueError, match="must have a single output"):
        byte_size_load_fn(op)


def test_the_placer_puts_setter_placed_variables_on_their_ps():
    # The setter's requests are what the distributed placer completes (no cluster needed to see it).
    d = _build(tf, _with_adam_slots)
    assert d["w"] == d["w/Adam"] == d["w/Adam_1"] == "/job:ps/task:0"
    assert d["b"] == d["b/Adam"] == "/job:ps/task:1"
    assert d["loss"] == "/job:worker/task:0"


# -- against real TensorFlow ---------------------------------------------------------------------------
@pytest.mark.tf
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_placements_match_tensorflow(tf1, name):
    ours = _build(tf, PROGRAMS[name])
    theirs = _build(tf1, PROGRAMS[name])
    common = sorted(set(ours) & set(theirs))
    their_types = _build(tf1, PROGRAMS[name], types=True)
    stateful = [n for n, t in their_types.items() if t == "VariableV2"]
    assert stateful and all(n in ours for n in stateful), f"variables TF has that nbdist lacks: {stateful}"
    assert len(common) >= len(stateful) * 3, f"too few ops in common to compare: {common}"
    diff = {n: (ours[n], theirs[n]) for n in common if ours[n] != theirs[n] and n not in OURS_ON_PURPOSE}
    assert not diff, f"nbdist vs TF devices differ: {diff}"


# Adam's beta constants for the beta-power update: TF makes them on the worker and sends them to
# the ps every step; nbdist makes them beside the beta powers (one message fewer per step).
OURS_ON_PURPOSE = {"train/beta1", "train/beta2"}
