"""Queues and accumulators as lanes of a traced step's timeline.

Every op on a *watched* resource (a queue, an accumulator) is logged by the task that holds
it, whichever step ran it. A traced step then carries, per task, the logged ops that
overlapped it: its own (the worker's ``apply_grad`` and token ``dequeue``) and the others'
(the other worker's gradient, the chief's ``take_grad`` and token ``enqueue_many``). So the
timeline shows who a synchronous step waited for, which TF's timeline never does.
"""

import threading
import time

import numpy as np
import pytest

import nbdist as tf
from nbdist.notebook import trace
from nbdist.runtime.server_lib import Server
from procs import free_port

LAST_STEP = 12


def test_a_local_trace_shows_the_queue_lane_with_its_size(graph):
    q = tf.FIFOQueue(3, tf.float32, shapes=[[]], name="q")
    enqueue, dequeue = q.enqueue_many([[1.0, 2.0]]), q.dequeue()
    with tf.Session() as sess:
        sess.run(enqueue)
        md = tf.RunMetadata()
        sess.run(dequeue, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE), run_metadata=md)
    (event,) = md.step_stats.dev_stats[0].resource_events
    assert event["kind"] == "queue" and event["resource"] == "q" and event["op"] == "QueueDequeueV2"
    assert event["state"] == {"size": 1} and event["this_step"]  # the enqueue ran in an earlier step
    lanes = {lane: [s["name"] for s in spans] for _, lane, spans in trace.lanes(trace.step_events(md))}
    assert lanes["queue q"] == ["dequeue"]
    svg = trace.timeline_svg(trace.step_events(md))
    assert "queue q" in svg and "size: 1" in svg and "Queue and accumulator lanes" in svg


def test_an_untraced_step_logs_nothing_but_watched_ops(graph):
    q = tf.FIFOQueue(3, tf.float32, shapes=[[]], name="q")
    v = tf.Variable(1.0)
    with tf.Session() as sess:
        sess.run(v.initializer)
        sess.run([q.enqueue([2.0]), v.assign_add(1.0)])
        ops = [r[4] for r in sess._backend.resources.activity]
    assert ops == ["QueueEnqueueV2"]  # variables are not watched: they would flood the log


def _worker(servers, cluster, task, results):
    try:
        _train(servers, cluster, task, results)
    except Exception as e:  # noqa: BLE001 - re-raised by the test, which shows it
        results[f"error {task}"] = e


def _train(servers, cluster, task, results):
    """One worker's client: 2-of-2 sync training; worker 1 traces every step it runs."""
    graph = tf.Graph()
    with graph.as_default():
        device = tf.train.replica_device_setter(worker_device=f"/job:worker/task:{task}", cluster=cluster)
        with tf.device(device):
            global_step = tf.train.get_or_create_global_step()
            x = tf.placeholder(tf.float32, [None, 3], name="x")
            w = tf.get_variable("w", [3, 1], initializer=tf.zeros_initializer())
            loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - 1.0))
            opt = tf.train.SyncReplicasOptimizer(
                tf.train.GradientDescentOptimizer(0.1), replicas_to_aggregate=2, total_num_replicas=2
            )
            train = opt.minimize(loss, global_step=global_step)
        hooks = [opt.make_session_run_hook(task == 0), tf.train.StopAtStepHook(last_step=LAST_STEP)]
        feed = {x: np.ones((4, 3), np.float32)}
        traced = results.setdefault("traced", [])
        with tf.train.MonitoredTrainingSession(
            master=servers[("worker", task)].target, is_chief=task == 0, hooks=hooks
        ) as sess:
            while not sess.should_stop():
                if task == 0:
                    sess.run(train, feed)
                    time.sleep(0.02)  # a slower chief: worker 1 runs steps of its own
                    continue
                md = tf.RunMetadata()
                options = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE, timeout_in_ms=60_000)
                try:
                    sess.run(train, feed, options=options, run_metadata=md)
                except tf.errors.OutOfRangeError:
                    break  # the chief ended training while this step waited for a token
                traced.append(md)


def _ps_events(md):
    """``{(kind, resource): [records]}`` of the ps's resource events in one traced step."""
    by_resource = {}
    for d in md.step_stats.dev_stats:
        if d.device.startswith("/job:ps/"):
            for r in d.resource_events:
                by_resource.setdefault((r["kind"], r["resource"]), []).append(r)
    return by_resource


@pytest.mark.slow
def test_traced_sync_steps_show_the_accumulator_and_token_queue_on_the_ps():
    cluster = {"ps": [f"localhost:{free_port()}"], "worker": [f"localhost:{free_port()}" for _ in range(2)]}
    servers = {
        (job, i): Server(cluster, job_name=job, task_index=i)
        for job in cluster
        for i in range(len(cluster[job]))
    }
    results, threads = {}, []
    try:
        for task in (0, 1):
            t = threading.Thread(target=_worker, args=(servers, cluster, task, results), daemon=True)
            threads.append(t)
            t.start()
        for t in threads:
            t.join(timeout=120)
        assert not any(t.is_alive() for t in threads), "sync training did not end within 120 s"
    finally:
        for s in servers.values():
            s.stop()
    for task in (0, 1):
        if f"error {task}" in results:
            raise results[f"error {task}"]
    traced = results["traced"]
    assert traced, "worker 1 ran no step"
    seen = set()
    for md in traced:
        by_resource = _ps_events(md)
        assert ("accumulator", "w:0/grad_accum") in by_resource, sorted(by_resource)
        assert len([k for k in by_resource if k[0] == "queue" and "sync_token_q" in k[1]]) == 1
        own = sorted(r["op"] for k in by_resource for r in by_resource[k] if r["this_step"])
        # Each of worker 1's steps: its gradient into the accumulator, then its token.
        assert own == ["AccumulatorApplyGradient", "QueueDequeueV2"], own
        (apply,) = [r for r in by_resource[("accumulator", "w:0/grad_accum")] if r["this_step"]]
        assert apply["result"] in (True, False) and {"holds", "time_step", "dropped"} <= set(apply["state"])
        seen |= {r["op"] for k in by_resource for r in by_resource[k] if not r["this_step"]}
    # Over the steps, the other side shows up too: the chief's gradients, its queue runner's
    # take_grad and the tokens it enqueued for the workers.
    assert {"AccumulatorTakeGradient", "QueueEnqueueManyV2"} & seen, seen
    svg = trace.timeline_svg(trace.step_events(traced[-1]))
    assert "accumulator w:0/grad_accum" in svg and "dequeue" in svg and "apply_grad" in svg
