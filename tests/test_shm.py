"""Large tensors between tasks on one host go through shared memory (nbdist.runtime.net.shm).

Real server processes on 127.0.0.1 (both ends loopback): feeds, Send/Recv pushes and
fetches delivered to the client carry only a signed handle; the bytes are in a segment of
the sender's pool. Each server's ``Status`` counts what went through shared memory.
"""

import contextlib
import ctypes
import gc
import os

import numpy as np
import pytest

import nbdist as tf
from nbdist.runtime.net import shm, transport, wire
from procs import ServerProcs, cluster_dict

pytestmark = pytest.mark.usefixtures("fresh_graph")
KEY = os.urandom(32)


@pytest.fixture
def keyed(monkeypatch):
    monkeypatch.setenv(wire.KEY_ENV, KEY.hex())


@pytest.fixture
def two_tasks(keyed):
    procs = ServerProcs(cluster_dict(local=2), key_hex=KEY.hex())
    yield procs
    procs.stop()


def _shm_status(procs, index):
    channel = transport.channel_to(procs.address("local", index), f"/job:local/task:{index}", KEY)
    return channel.call("Status", {}, timeout_s=10.0)["shm"]


def _pids(procs):
    return [p.pid for p in procs.procs.values()]


def _through_both_tasks(dtype, shape):
    """A fed tensor that crosses 0 -> 1 (Send/Recv) and comes back both ways."""
    p = tf.placeholder(dtype, shape)
    with tf.device("/job:local/task:0"):
        on_0 = tf.identity(p)
    with tf.device("/job:local/task:1"):
        on_1 = tf.identity(on_0)  # pushed by task 0's partition to task 1
    with tf.device("/job:local/task:0"):
        back = tf.identity(on_1)  # pushed back to task 0, fetched from the master
    return p, on_1, back


@pytest.mark.slow
def test_values_of_every_dtype_and_odd_shape_round_trip_exactly(two_tasks):
    rng = np.random.RandomState(0)
    cases = [
        (tf.float32, (1031, 1021), rng.standard_normal((1031, 1021)).astype(np.float32)),
        (tf.float64, (7, 389, 401), rng.standard_normal((7, 389, 401))),
        (tf.int64, (131075,), rng.randint(-(2**62), 2**62, 131075, dtype=np.int64)),
        (tf.bool, (1031, 1021), rng.rand(1031, 1021) < 0.5),
    ]
    graph = [(_through_both_tasks(dtype, shape), value) for dtype, shape, value in cases]
    with tf.Session(two_tasks.target("local", 0)) as sess:
        for (p, on_1, back), value in graph:
            for _ in range(2):  # the second time through reused (already touched) segments
                got_1, got_back = sess.run([on_1, back], {p: value})
                for got in (got_1, got_back):
                    assert got.dtype == value.dtype and got.shape == value.shape
                    np.testing.assert_array_equal(got, value)
                del got_1, got_back, got
    sent = {i: _shm_status(two_tasks, i).get("sent", 0) for i in (0, 1)}
    # Per run: the feed (client -> 0) is the client's; 0 -> 1 push, 1 -> client fetch,
    # 1 -> 0 push, 0 -> client fetch are the servers'.
    assert sent[0] >= 2 * len(cases) * 2 and sent[1] >= 2 * len(cases) * 2, sent
    assert shm.stats["sent"] >= 2 * len(cases) and shm.stats["received"] >= 4 * len(cases)


@pytest.mark.slow
def test_a_64_mib_fetch_and_send_recv_go_through_shared_memory(two_tasks):
    value = np.arange(16 * 2**20, dtype=np.float32) * 0.5
    with tf.device("/job:local/task:1"):
        big = tf.Variable(tf.zeros([16 * 2**20]), name="big")
        fed = tf.placeholder(tf.float32, [16 * 2**20])
        init = tf.assign(big, fed)
    with tf.device("/job:local/task:0"):
        copied = tf.identity(big)  # Send/Recv from task 1 to task 0
    with tf.device("/job:local/task:0"):
        total = tf.reduce_sum(copied[:8])
    with tf.Session(two_tasks.target("local", 0)) as sess:
        sess.run(init.op, {fed: value})
        before = {i: _shm_status(two_tasks, i) for i in (0, 1)}
        fetched = sess.run(big)
        copied_value, first8 = sess.run([copied, total])
        for _ in range(3):
            sess.run(total)
        after = {i: _shm_status(two_tasks, i) for i in (0, 1)}
        fetched[:4] = -1  # the receiver's own, as an array over a frame is
        np.testing.assert_array_equal(sess.run(big)[:4], value[:4])
        fetched[:4] = value[:4]
    # Reused step after step, without waiting for a garbage collection: one segment held by
    # `fetched`, one for the Send/Recv (and one more if task 0 dropped a step's tensor only
    # after answering); a reference cycle holding the views would add one per step.
    assert len(shm.segments_of(two_tasks.procs[("local", 1)].pid)) <= 3, shm.segments_of(
        two_tasks.procs[("local", 1)].pid
    )
    np.testing.assert_array_equal(fetched, value)
    np.testing.assert_array_equal(copied_value, value)
    assert first8 == value[:8].sum()
    # task 1 sent the fetch to the client and the variable to task 0; task 0 the copy back.
    assert after[1].get("sent", 0) - before[1].get("sent", 0) >= 2
    assert after[0].get("received", 0) - before[0].get("received", 0) >= 1
    assert after[1].get("sent_bytes", 0) - before[1].get("sent_bytes", 0) >= 2 * value.nbytes


@pytest.mark.slow
def test_without_shared_memory_tensors_travel_in_the_socket(keyed, monkeypatch):
    monkeypatch.setenv("NBDIST_SHM", "0")  # the servers inherit it
    procs = ServerProcs(cluster_dict(local=2), key_hex=KEY.hex())
    try:
        value = np.random.RandomState(1).standard_normal((1031, 1021)).astype(np.float32)
        p, on_1, back = _through_both_tasks(tf.float32, value.shape)
        client_before = shm.stats["sent"] + shm.stats["received"]
        with tf.Session(procs.target("local", 0)) as sess:
            got_1, got_back = sess.run([on_1, back], {p: value})
        np.testing.assert_array_equal(got_1, value)
        np.testing.assert_array_equal(got_back, value)
        assert all(not _shm_status(procs, i) for i in (0, 1))
        assert shm.stats["sent"] + shm.stats["received"] == client_before
    finally:
        procs.stop()


def test_a_full_pool_sends_in_the_socket(monkeypatch):
    monkeypatch.setattr(shm, "POOL_MAX_BYTES", 0)
    monkeypatch.setattr(shm, "_pool", None)
    value = np.ones((512, 1024), np.float32)
    frames = wire.encode("SendTensor", 1, {"tensor": value}, KEY, local=True)
    assert frames.segments == () and frames[1].nbytes == value.nbytes
    np.testing.assert_array_equal(wire.decode(frames, KEY)["tensor"], value)


def test_a_segment_is_reused_only_after_the_receiver_drops_the_tensor():
    value = np.arange(2**18, dtype=np.float32)
    first = wire.encode("SendTensor", 1, {"tensor": value}, KEY, local=True)
    held = wire.decode(first, KEY)["tensor"]
    second = wire.encode("SendTensor", 2, {"tensor": value + 1}, KEY, local=True)
    assert second.segments[0][0] != first.segments[0][0]  # the first one is still held
    np.testing.assert_array_equal(held, value)
    view = held[10:]
    del held
    gc.collect()
    third = wire.encode("SendTensor", 3, {"tensor": value + 2}, KEY, local=True)
    assert third.segments[0][0] != first.segments[0][0]  # a view of it is still alive
    np.testing.assert_array_equal(view, value[10:])
    del view
    gc.collect()
    fourth = wire.encode("SendTensor", 4, {"tensor": value + 3}, KEY, local=True)
    assert fourth.segments[0][0] == first.segments[0][0]
    for frames in (second, third, fourth):
        wire.discard(frames)


def test_a_stale_handle_is_refused():
    value = np.arange(2**18, dtype=np.float32)
    frames = wire.encode("SendTensor", 1, {"tensor": value}, KEY, local=True)
    wire.discard(frames)  # as if it had been received and dropped: the segment is reused
    reused = wire.encode("SendTensor", 2, {"tensor": value}, KEY, local=True)
    assert reused.segments[0][0] == frames.segments[0][0]
    with pytest.raises(wire.WireError, match=r"stale shared-memory handle .* \(from /job:ps/task:0"):
        wire.decode(frames, KEY, peer="/job:ps/task:0 at localhost:1")
    wire.discard(reused)


def _tampered(frames):
    """`frames` with the handle's nonce changed and the old signature kept."""
    head = bytearray(frames[0])  # the signature is kept: the header follows it
    _, nonce, _ = frames.segments[0]
    at = bytes(head).index(nonce.to_bytes(8, "big"))
    head[at + 7] ^= 1
    return [bytes(head), *frames[1:]]


@pytest.mark.slow
def test_a_server_refuses_a_tampered_handle_naming_itself(two_tasks):
    channel = transport.Channel(two_tasks.address("local", 1), "/job:local/task:1", KEY)
    try:
        value = np.ones((512, 1024), np.float32)
        frames = wire.encode(
            "SendTensor", 7, {"step_id": 1, "tensors": [["k", value]]}, KEY, channel.stamp, True
        )
        channel.send_encoded(_tampered(frames))
        with pytest.raises(
            tf.errors.UnauthenticatedError, match=r"\[/job:local/replica:0/task:1\] bad message signature"
        ):
            channel.recv_reply(7, None, 10.0, "the refusal")
        wire.discard(frames)
    finally:
        channel.close()


def test_a_client_refuses_a_tampered_handle_naming_the_peer():
    import zmq

    from procs import free_port

    address = f"127.0.0.1:{free_port()}"
    router = transport.context().socket(zmq.ROUTER)
    router.setsockopt(zmq.LINGER, 0)
    router.bind(f"tcp://{address}")
    channel = transport.Channel(address, "/job:ps/task:3", KEY)
    try:
        request_id = channel.send("Ping", {})
        assert router.poll(10000)
        identity = router.recv_multipart()[0]
        value = np.ones((512, 1024), np.float32)
        frames = wire.encode("Pong", request_id, {"t": value}, KEY, local=True)
        router.send_multipart([identity, *_tampered(frames)])
        with pytest.raises(
            wire.WireError, match=r"bad message signature.*\(from /job:ps/task:3 at 127\.0\.0\.1:"
        ):
            channel.recv_reply(request_id, None, 10.0, "the reply")
        wire.discard(frames)
    finally:
        channel.close()
        router.close(linger=0)


@pytest.mark.slow
def test_nothing_is_left_in_dev_shm_after_the_cluster_stops(two_tasks):
    value = np.ones(2**20, np.float32)
    p, on_1, back = _through_both_tasks(tf.float32, value.shape)
    with tf.Session(two_tasks.target("local", 0)) as sess:
        kept = sess.run([on_1, back], {p: value})  # held: their segments stay busy
    pids = _pids(two_tasks)
    assert all(shm.segments_of(pid) for pid in pids)
    two_tasks.stop()
    assert [shm.segments_of(pid) for pid in pids] == [[], []]
    np.testing.assert_array_equal(kept[0], value)  # unlinked, still mapped here


@pytest.mark.slow
def test_a_sigkilled_task_leaves_nothing_once_the_local_cluster_stops():
    cluster = tf.LocalCluster(local=2)
    try:
        value = np.ones(2**20, np.float32)
        p, on_1, _ = _through_both_tasks(tf.float32, value.shape)
        with tf.Session(cluster.target("local", 0)) as sess:
            kept = sess.run(on_1, {p: value})  # task 1's segment is busy while this is held
        pid = cluster.pids[("local", 1)]
        assert shm.segments_of(pid)
        cluster.kill("local", 1)
        assert shm.segments_of(pid)  # SIGKILL ran no cleanup
    finally:
        cluster.stop()
    assert shm.segments_of(pid) == []
    np.testing.assert_array_equal(kept, value)


def test_a_pool_segment_idle_for_longer_than_idle_s_is_unlinked():
    pool = shm.SegmentPool()
    try:
        handle = pool.put(np.ones(2**18, np.float32))
        path = os.path.join(shm.SHM_DIR, handle[0])
        pool.unlink_idle(now=0.0)  # busy (a receiver holds it): not idle
        pool.release(handle[0], handle[1])
        assert pool.unlink_idle(now=1.0) == []  # first seen free
        assert pool.unlink_idle(now=1.0 + shm.IDLE_S) == []
        assert pool.unlink_idle(now=1.1 + shm.IDLE_S) == [handle[0]]
        assert not os.path.exists(path) and pool.names() == []
    finally:
        pool.close()


def test_a_receiver_unmaps_segments_whose_sender_unlinked_them():
    pool = shm.SegmentPool()
    try:
        value = np.arange(2**18, dtype=np.float32)
        handle = pool.put(value)
        np.testing.assert_array_equal(shm.attach(handle[0], handle[1], value.dtype, value.shape), value)
        gc.collect()  # (the view is gone: the segment is free)
        assert handle[0] in shm.mapped_names()
        pool.unlink_idle(now=0.0)
        pool.unlink_idle(now=1.0 + shm.IDLE_S)
        shm.tidy()
        assert handle[0] not in shm.mapped_names()
    finally:
        pool.close()


def _driver_fds_and_rss_kib():
    """This process's open descriptors, and its RSS in KiB once the garbage is collected (a
    graph is a reference cycle: each holds its 2 MiB constant) and malloc has handed its free
    heap back (`malloc_trim`, glibc): what is held, not when the collector or allocator runs."""
    gc.collect()
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None).malloc_trim(0)
    with open("/proc/self/status") as f:
        rss_kib = next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
    return len(os.listdir("/proc/self/fd")), rss_kib


def _deleted_segments_mapped():
    with open("/proc/self/maps") as f:
        return sum(1 for line in f if "/nbdist-" in line and line.rstrip().endswith("(deleted)"))


@pytest.mark.slow
def test_cluster_cycles_leave_the_drivers_fds_and_rss_flat():
    """Issue 36 §6: each cycle's 2 MiB fetch came in a worker's segment, and the driver kept
    its mapping (a descriptor, 2 MiB of RSS) after the worker had exited: +1 fd and +2 MiB a
    cycle. Allowed: half of that, 0.5 fd and 1 MiB a cycle (fixed, measured 0.0-0.1 fd and
    0.2-0.4 MiB on 2 loaded cores; the RSS left grows as much with $NBDIST_SHM=0 and is not
    Python objects: the native heap)."""
    cycles, warmup = 20, 4  # the first cycles grow the heap once (imports, caches): not fitted
    samples = []
    for _ in range(cycles):
        with tf.Graph().as_default(), tf.LocalCluster(ps=1, worker=2) as cluster:
            with tf.device("/job:ps/task:0"):
                v = tf.Variable(np.ones(2**19, np.float32))  # 2 MiB
            with tf.device("/job:worker/task:0"):
                doubled = v * 2.0
            with tf.Session(cluster.target("worker", 0)) as sess:
                sess.run(v.initializer)
                assert sess.run(doubled).nbytes == 2**21
        samples.append(_driver_fds_and_rss_kib())
    fds, rss_kib = np.array(samples[warmup:], dtype=np.float64).T
    x = np.arange(len(fds))
    fd_slope, rss_slope_mib = np.polyfit(x, fds, 1)[0], np.polyfit(x, rss_kib / 1024, 1)[0]
    where = f"fds {samples[0][0]} -> {samples[-1][0]}, deleted segments mapped: {_deleted_segments_mapped()}"
    assert fd_slope < 0.5, f"{fd_slope:.2f} fds a cycle ({where})"
    assert rss_slope_mib < 1.0, f"{rss_slope_mib:.2f} MiB a cycle ({where})"


def test_an_unchanging_array_pushed_twice_shares_one_segment_read_only():
    stored = np.arange(2**18, dtype=np.float32)  # as a variable's value is stored: read-only, its own memory
    stored.setflags(write=False)
    first = wire.encode("SendTensor", 1, {"tensors": [["w", stored]]}, KEY, local=True)
    second = wire.encode("SendTensor", 2, {"tensors": [["w", stored]]}, KEY, local=True)
    (name, nonce, slot_1), (name_2, nonce_2, slot_2) = first.segments[0], second.segments[0]
    assert (name_2, nonce_2) == (name, nonce) and slot_1 != slot_2  # one copy, two reader slots
    one, two = (wire.decode(f, KEY)["tensors"][0][1] for f in (first, second))
    for got in (one, two):
        np.testing.assert_array_equal(got, stored)
        assert not got.flags.writeable  # another receiver views the same bytes
    del one, got
    gc.collect()
    third = wire.encode("SendTensor", 3, {"tensors": [["w", stored + 1]]}, KEY, local=True)
    assert third.segments[0][0] != name  # the second receiver still holds it
    np.testing.assert_array_equal(two, stored)
    del two
    gc.collect()
    fourth = wire.encode("SendTensor", 4, {"tensors": [["w", stored + 2]]}, KEY, local=True)
    assert fourth.segments[0][0] == name  # every slot free: reused
    for frames in (third, fourth):
        wire.discard(frames)


def test_a_fetch_or_a_writable_array_is_never_shared():
    stored = np.arange(2**18, dtype=np.float32)
    stored.setflags(write=False)
    writable = np.arange(2**18, dtype=np.float32)
    for msg_type, value in (("RunStepResponse", stored), ("SendTensor", writable)):
        first = wire.encode(msg_type, 1, {"tensors": [["w", value]]}, KEY, local=True)
        second = wire.encode(msg_type, 2, {"tensors": [["w", value]]}, KEY, local=True)
        assert first.segments[0][0] != second.segments[0][0]
        got = wire.decode(second, KEY)["tensors"][0][1]
        assert got.flags.writeable  # the receiver's own, as an array over a frame is
        del got
        wire.discard(first)
