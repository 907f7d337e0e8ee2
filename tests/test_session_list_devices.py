"""`Session.list_devices()` against real TF: TF's ``_DeviceAttributes`` of the local CPU, and of
every task's CPU for a session on a cluster target (the master's first), with incarnations
that stay while the task (or local session) lives."""

import pytest

import nbdist as tf


def _described(devices):
    return [(d.name, d.device_type, d.memory_limit_bytes, type(d.incarnation)) for d in devices]


def test_a_local_session_lists_its_cpu_as_tf(tf1):
    with tf.Session() as ours, tf1.Session() as theirs:
        assert _described(ours.list_devices()) == _described(theirs.list_devices())
        assert _described(ours.list_devices()) == [
            ("/job:localhost/replica:0/task:0/device:CPU:0", "CPU", 268435456, int)
        ]
        first = ours.list_devices()[0]
        assert first.incarnation == ours.list_devices()[0].incarnation != 0
        assert repr(first) == (
            f"_DeviceAttributes(/job:localhost/replica:0/task:0/device:CPU:0, CPU, 268435456, {first.incarnation})"
        )
        with tf.Session() as another:  # a new session's device is a new incarnation, as in TF
            assert another.list_devices()[0].incarnation != first.incarnation


def test_a_closed_session_cannot_list_devices(tf1):
    for lib in (tf, tf1):
        sess = lib.Session()
        sess.close()
        with pytest.raises(lib.errors.CancelledError, match="Session has been closed"):
            sess.list_devices()


def test_a_session_on_a_cluster_lists_every_task_cpu(in_process_servers):
    ps, worker = in_process_servers["ps"], in_process_servers["worker"]
    with tf.Session(worker.target) as on_worker, tf.Session(ps.target) as on_ps:
        from_worker, from_ps = on_worker.list_devices(), on_ps.list_devices()
    assert [d.name for d in from_worker] == [
        "/job:worker/replica:0/task:0/device:CPU:0",
        "/job:ps/replica:0/task:0/device:CPU:0",
    ]
    assert [d.name for d in from_ps] == [
        "/job:ps/replica:0/task:0/device:CPU:0",
        "/job:worker/replica:0/task:0/device:CPU:0",
    ]
    assert {(d.device_type, d.memory_limit_bytes) for d in from_worker} == {("CPU", 268435456)}
    # A task's incarnation is its own (the same whoever asks), and differs between tasks.
    by_name = {d.name: d.incarnation for d in from_worker}
    assert by_name == {d.name: d.incarnation for d in from_ps}
    assert len(set(by_name.values())) == 2


def test_device_filters_keep_the_master_and_the_tasks_they_name(in_process_servers):
    # TF lists the master's own devices and, of the others, those the filters match.
    ps, worker = in_process_servers["ps"], in_process_servers["worker"]
    only_master = tf.ConfigProto(device_filters=["/job:worker"])
    with tf.Session(worker.target, config=only_master) as sess:
        assert [d.name for d in sess.list_devices()] == ["/job:worker/replica:0/task:0/device:CPU:0"]
    with tf.Session(ps.target, config=only_master) as sess:
        assert [d.name for d in sess.list_devices()] == [
            "/job:ps/replica:0/task:0/device:CPU:0",
            "/job:worker/replica:0/task:0/device:CPU:0",
        ]
