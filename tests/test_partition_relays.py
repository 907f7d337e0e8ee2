"""A NoOp that only relays control edges between ops of another task is bypassed.

`tf.train.Optimizer.minimize(..., global_step=...)` under a `replica_device_setter` puts
its ``update`` group (a NoOp) on the worker and everything the group orders on the ps:
the variables' updates, then the global step's increment. Kept, that NoOp cost every
training step a round trip ps -> worker -> ps; bypassed, the increment waits for the
updates on the ps itself. In-process servers on 127.0.0.1 for the step.
"""

import numpy as np
import pytest

import nbdist as tf
from nbdist.graph.graph_def import NodeDef
from nbdist.runtime.partition import bypass_relays

PS, WORKER = "/job:ps/replica:0/task:0/device:CPU:0", "/job:worker/replica:0/task:0/device:CPU:0"


def _nodes(*specs):
    """``(name, op, inputs, device)`` -> NodeDefs in order, and their placement."""
    nodes = [NodeDef(name, op, inputs) for name, op, inputs, _ in specs]
    return nodes, {name: device for name, _, _, device in specs}


def test_the_update_group_of_ps_ops_on_the_worker_is_bypassed():
    nodes, placement = _nodes(
        ("update_w", "ApplyGradientDescent", [], PS),
        ("update_b", "ApplyGradientDescent", [], PS),
        ("update", "NoOp", ["^update_w", "^update_b"], WORKER),
        ("increment", "AssignAdd", ["step", "one", "^update"], PS),
    )
    out = bypass_relays(nodes, placement, kept={"increment"})
    assert [n.name for n in out] == ["update_w", "update_b", "increment"]
    assert out[2].input == ["step", "one", "^update_w", "^update_b"]
    assert nodes[3].input == ["step", "one", "^update"]  # the session's node is not changed


@pytest.mark.parametrize(
    ("specs", "kept", "why"),
    [
        (
            [
                ("a", "Assign", [], WORKER),
                ("b", "Assign", [], WORKER),
                ("g", "NoOp", ["^a", "^b"], WORKER),
                ("c", "Identity", ["^g"], PS),
            ],
            set(),
            "two crossings instead of one",
        ),
        (
            [("a", "Assign", [], PS), ("g", "NoOp", ["^a"], WORKER), ("c", "Identity", ["^g"], PS)],
            {"g"},
            "a target runs",
        ),
        (
            [(f"a{i}", "Assign", [], f"/job:ps/task:{i % 2}") for i in range(3)]
            + [("g", "NoOp", ["^a0", "^a1", "^a2"], WORKER)]
            + [(f"c{i}", "Identity", ["^g"], f"/job:ps/task:{2 + i % 2}") for i in range(3)],
            set(),
            "3 x 3 edges instead of 3 + 3, and as many pairs of tasks (4) to message",
        ),
    ],
)
def test_a_noop_is_kept_when_bypassing_it_saves_no_crossing_or_adds_edges(specs, kept, why):
    nodes, placement = _nodes(*specs)
    assert [n.name for n in bypass_relays(nodes, placement, kept)] == [n.name for n in nodes], why


def test_adams_update_group_is_bypassed_though_its_edges_multiply():
    """An optimizer's ``update`` group orders N updates before the increment and its constant
    (N x 2 edges against N + 2): TF's edge rule keeps it from 3 variables on, which cost every
    step a round trip ps -> worker -> ps. Bypassed, no control message leaves the ps."""
    updates = [f"update_{v}" for v in ("hid_w", "hid_b", "sm_w", "sm_b")] + ["Assign", "Assign_1"]
    nodes, placement = _nodes(
        *[(u, "ApplyAdam", [], PS) for u in updates],
        ("update", "NoOp", [f"^{u}" for u in updates], WORKER),
        ("Const", "Const", ["^update"], PS),
        ("Adam", "AssignAdd", ["step", "Const", "^update"], PS),
    )
    out = bypass_relays(nodes, placement, kept={"Adam"})
    assert "update" not in [n.name for n in out]
    assert out[-1].input == ["step", "Const", *[f"^{u}" for u in updates]]
    assert out[-2].input == [f"^{u}" for u in updates]


def test_a_relay_between_big_groups_stays():
    ins = [(f"a{i}", "Assign", [], PS) for i in range(100)]
    outs = [(f"c{i}", "Identity", ["^g"], PS) for i in range(50)]  # 5,000 edges > MAX_BYPASS_EDGES
    nodes, placement = _nodes(*ins, ("g", "NoOp", [f"^a{i}" for i in range(100)], WORKER), *outs)
    assert "g" in [n.name for n in bypass_relays(nodes, placement, set())]


def test_a_chain_of_relays_is_bypassed_whole():
    nodes, placement = _nodes(
        ("a", "Assign", [], PS),
        ("g1", "NoOp", ["^a"], WORKER),
        ("g2", "NoOp", ["^g1"], WORKER),
        ("c", "Identity", ["x", "^g2"], PS),
    )
    out = bypass_relays(nodes, placement, kept={"c"})
    assert [(n.name, n.input) for n in out] == [("a", []), ("c", ["x", "^a"])]


def test_a_training_step_sends_no_control_round_trip_and_trains_as_before(in_process_servers):
    worker = in_process_servers["worker"]
    spec = tf.train.ClusterSpec(worker.server_def.cluster)
    graph = tf.Graph()
    with graph.as_default():
        setter = tf.train.replica_device_setter(worker_device="/job:worker/task:0", cluster=spec)
        with tf.device(setter):
            step = tf.train.get_or_create_global_step()
            x = tf.constant(np.ones((4, 3), np.float32))
            w = tf.get_variable("w", [3, 1], initializer=tf.ones_initializer())
            b = tf.get_variable("b", [1], initializer=tf.zeros_initializer())
            c = tf.get_variable("c", [1], initializer=tf.zeros_initializer())
            loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + b + c - 1.0))
            # Adam: 3 updates and 2 power assignments ordered before the increment and its constant
            train = tf.train.AdamOptimizer(0.1).minimize(loss, global_step=step)
            init = tf.global_variables_initializer()
    meta = tf.RunMetadata()
    with tf.Session(worker.target, graph=graph) as sess:
        sess.run(init)
        for _ in range(3):
            sess.run(train)
        sess.run(train, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE), run_metadata=meta)
        got = sess.run([w, step])
    nodes = [n["name"] for part in meta.partition_graphs for n in part["node"]]
    assert not [n for n in nodes if n.startswith("_send/ctrl_")], nodes  # no control crosses
    assert "Adam/update" not in nodes  # the relay is gone; the increment waits on the ps
    with tf.Session(graph=graph) as local:  # the same 4 steps in one process
        local.run(init)
        for _ in range(4):
            local.run(train)
        want = local.run([w, step])
    np.testing.assert_allclose(got[0], want[0], rtol=1e-6)
    assert got[1] == want[1] == 4


def test_a_noop_whose_edges_stay_on_one_task_is_left_alone():
    nodes, placement = _nodes(
        ("a", "Assign", [], PS), ("g", "NoOp", ["^a"], PS), ("c", "Identity", ["^g"], PS)
    )
    assert bypass_relays(nodes, placement, set()) is nodes
