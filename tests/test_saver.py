"""`tf.train.Saver`, the checkpoint files and the ``checkpoint`` state file (local sessions)."""

import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import nbdist as tf
from nbdist.ops import checkpoint_format
from procs import REPO
from tmpfs import fill, mounted_tmpfs

pytestmark = pytest.mark.usefixtures("fresh_graph")


def _model():
    w = tf.Variable(np.arange(6.0).reshape(2, 3), name="w")
    n = tf.Variable(np.int32(7), name="n")
    s = tf.Variable(np.array([b"a", b"bc"], dtype=object), name="s")
    step = tf.train.get_or_create_global_step()
    return w, n, s, step


def test_save_returns_the_prefix_and_writes_tf_layout(tmp_path):
    _model()
    saver = tf.train.Saver()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        path = saver.save(sess, str(tmp_path / "model.ckpt"), global_step=42)
    assert path == str(tmp_path / "model.ckpt-42")
    assert sorted(os.listdir(tmp_path)) == [
        "checkpoint",
        "model.ckpt-42.data-00000-of-00001",
        "model.ckpt-42.index",
        "model.ckpt-42.meta",  # the meta graph, as TF writes it (tf.train.import_meta_graph)
    ]
    assert checkpoint_format.read_index(path)["tensors"].keys() == {"w", "n", "s", "global_step"}


def test_save_takes_a_fetched_global_step_number(tmp_path):
    """`global_step` may be a number just fetched from a session (numpy's int64), as in TF."""
    _model()
    saver = tf.train.Saver()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        step = sess.run(tf.train.get_global_step())
        path = saver.save(sess, str(tmp_path / "model.ckpt"), global_step=np.int64(step) + 7)
    assert path == str(tmp_path / "model.ckpt-7")


def test_restore_brings_back_every_dtype(tmp_path):
    w, n, s, step = _model()
    saver = tf.train.Saver()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(tf.assign_add(step, 5))
        path = saver.save(sess, str(tmp_path / "m"), global_step=step)
        assert path.endswith("m-5")
        sess.run([tf.assign(w, np.zeros((2, 3))), tf.assign(n, np.int32(0)), tf.assign(step, 0)])
        saver.restore(sess, path)
        got_w, got_n, got_s, got_step = sess.run([w, n, s, step])
    np.testing.assert_array_equal(got_w, np.arange(6.0).reshape(2, 3))
    assert got_n == 7 and got_n.dtype == np.int32
    assert list(got_s) == [b"a", b"bc"]
    assert got_step == 5


def test_restore_into_a_fresh_session_initializes_the_variables(tmp_path):
    w, *_ = _model()
    saver = tf.train.Saver()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        path = saver.save(sess, str(tmp_path / "m"))
    with tf.Session() as sess:
        saver.restore(sess, path)
        np.testing.assert_array_equal(sess.run(w), np.arange(6.0).reshape(2, 3))


def test_max_to_keep_deletes_the_oldest(tmp_path):
    _model()
    saver = tf.train.Saver(max_to_keep=2)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        paths = [saver.save(sess, str(tmp_path / "m"), global_step=i) for i in range(4)]
    assert saver.last_checkpoints == paths[2:]
    assert not os.path.exists(paths[0] + ".index")
    assert not os.path.exists(paths[1] + ".data-00000-of-00001")
    assert tf.train.checkpoint_exists(paths[2]) and tf.train.checkpoint_exists(paths[3])
    state = tf.train.get_checkpoint_state(str(tmp_path))
    assert state.model_checkpoint_path == paths[3]
    assert state.all_model_checkpoint_paths == paths[2:]
    assert tf.train.latest_checkpoint(str(tmp_path)) == paths[3]


def test_state_file_is_tf_text_format(tmp_path):
    _model()
    saver = tf.train.Saver()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        saver.save(sess, str(tmp_path / "m"), global_step=1)
        saver.save(sess, str(tmp_path / "m"), global_step=2)
    lines = (tmp_path / "checkpoint").read_text().splitlines()
    assert lines[:3] == [
        f'model_checkpoint_path: "{tmp_path}/m-2"',
        f'all_model_checkpoint_paths: "{tmp_path}/m-1"',
        f'all_model_checkpoint_paths: "{tmp_path}/m-2"',
    ]
    assert [line.split(":")[0] for line in lines[3:]] == ["all_model_checkpoint_timestamps"] * 2


def test_relative_save_dir_writes_relative_paths(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    os.mkdir("run")
    _model()
    saver = tf.train.Saver()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert saver.save(sess, "run/model.ckpt", global_step=3) == "run/model.ckpt-3"
    assert (tmp_path / "run" / "checkpoint").read_text().startswith('model_checkpoint_path: "model.ckpt-3"\n')
    assert tf.train.latest_checkpoint("run") == os.path.join("run", "model.ckpt-3")


def test_var_list_dict_renames_checkpoint_keys(tmp_path):
    w, *_ = _model()
    saver = tf.train.Saver({"weights": w})
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        path = saver.save(sess, str(tmp_path / "m"))
    assert list(checkpoint_format.read_index(path)["tensors"]) == ["weights"]


def test_restore_of_a_missing_key_names_it(tmp_path):
    w, *_ = _model()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        path = tf.train.Saver([w]).save(sess, str(tmp_path / "m"))
    extra = tf.Variable(1.0, name="extra")
    saver = tf.train.Saver([w, extra])
    with (
        tf.Session() as sess,
        pytest.raises(tf.errors.NotFoundError, match="Key extra not found in checkpoint"),
    ):
        saver.restore(sess, path)


def test_restore_of_no_checkpoint_is_a_value_error(tmp_path):
    _model()
    saver = tf.train.Saver()
    with tf.Session() as sess:
        with pytest.raises(ValueError, match="not a valid checkpoint"):
            saver.restore(sess, str(tmp_path / "nothing"))
        with pytest.raises(ValueError, match="save_path when it is None"):
            saver.restore(sess, None)


def test_save_into_a_missing_directory_is_a_value_error(tmp_path):
    _model()
    saver = tf.train.Saver()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        with pytest.raises(ValueError, match=r"Parent directory of .* doesn't exist"):
            saver.save(sess, str(tmp_path / "no" / "m"))


def test_corrupted_data_is_data_loss_not_garbage(tmp_path):
    _model()
    saver = tf.train.Saver()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        path = saver.save(sess, str(tmp_path / "m"))
        data = tmp_path / "m.data-00000-of-00001"
        raw = bytearray(data.read_bytes())
        raw[3] ^= 0xFF
        data.write_bytes(bytes(raw))
        with pytest.raises(tf.errors.DataLossError, match="truncated or corrupted"):
            saver.restore(sess, path)


def test_no_variables_is_an_error_unless_allowed():
    with pytest.raises(ValueError, match="No variables to save"):
        tf.train.Saver()
    assert tf.train.Saver(allow_empty=True).save(None, "unused") is None


def test_one_shard_per_device_and_restore_reads_any_shard_count(tmp_path):
    with tf.device("/job:ps/task:0"):
        a = tf.Variable(np.ones(3), name="a")
    with tf.device("/job:ps/task:1"):
        b = tf.Variable(np.full(2, 2.0), name="b")
    saver = tf.train.Saver()
    graph = tf.get_default_graph()
    save_ops = [op for op in graph.get_operations() if op.type == "SaveV2"]
    assert [(op.name, op.device) for op in save_ops] == [
        ("save/SaveV2", a.op.device),
        ("save/SaveV2_1", b.op.device),
    ]
    restores = [op for op in graph.get_operations() if op.type == "RestoreV2"]
    assert [op.device for op in restores] == [a.op.device, b.op.device]
    with tf.Session() as sess:  # a local session runs every device in-process
        sess.run(tf.global_variables_initializer())
        path = saver.save(sess, str(tmp_path / "m"))
    assert sorted(p for p in os.listdir(tmp_path) if ".data-" in p) == [
        "m.data-00000-of-00002",
        "m.data-00001-of-00002",
    ]
    tf.reset_default_graph()
    a2 = tf.Variable(np.zeros(3), name="a")
    b2 = tf.Variable(np.zeros(2), name="b")
    saver2 = tf.train.Saver()
    with tf.Session() as sess:
        saver2.restore(sess, path)
        np.testing.assert_array_equal(sess.run(a2), np.ones(3))
        np.testing.assert_array_equal(sess.run(b2), np.full(2, 2.0))


_CRASH = textwrap.dedent(
    """
    import os, sys
    import numpy as np
    import nbdist as tf
    from nbdist.ops import checkpoint_format
    w = tf.Variable(np.zeros(3), name="w")
    saver = tf.train.Saver()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        saver.save(sess, sys.argv[1], global_step=1)
        sess.run(tf.assign(w, np.ones(3)))
        os.environ[checkpoint_format.PAUSE_ENV] = sys.argv[2]
        saver.save(sess, sys.argv[1], global_step=2)  # the test kills us inside this save
        print("not killed", flush=True)
    """
)


def test_a_crash_mid_save_leaves_latest_restorable(tmp_path):
    marker = tmp_path / "paused"
    env = dict(os.environ, PYTHONPATH=REPO)
    proc = subprocess.Popen(
        [sys.executable, "-c", _CRASH, str(tmp_path / "model"), str(marker)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not marker.exists():
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the saving process never reached the pause point"
            time.sleep(0.02)
        # Paused between writing step 2's data and renaming it: kill it there.
        assert any(".tmp-" in p for p in os.listdir(tmp_path))
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
        proc.stdout.close()
        proc.stderr.close()
    latest = tf.train.latest_checkpoint(str(tmp_path))
    assert latest == str(tmp_path / "model-1")
    assert not tf.train.checkpoint_exists(str(tmp_path / "model-2"))
    w = tf.Variable(np.full(3, 9.0), name="w")
    with tf.Session() as sess:
        tf.train.Saver().restore(sess, latest)
        np.testing.assert_array_equal(sess.run(w), np.zeros(3))


def test_a_save_deletes_temporary_files_no_save_owns(tmp_path):
    """A task killed mid-save leaves its ``.tmp`` shard: the next save of that basename deletes it."""
    _model()
    tmp = ".tmp-0123456789ab"
    stale = ["model.ckpt-1.data-00000-of-00002" + tmp, "model.ckpt-1.index" + tmp]
    kept = ["other.ckpt-1.data-00000-of-00001" + tmp, "model.ckpt-1.data-00000-of-00001"]
    for name in stale + kept:
        (tmp_path / name).write_bytes(b"x")
    saver = tf.train.Saver()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        saver.save(sess, str(tmp_path / "model.ckpt"), global_step=2)
    left = set(os.listdir(tmp_path))
    assert not left & set(stale)
    assert set(kept) <= left


def test_a_shard_keeps_the_other_shards_of_its_own_save(tmp_path):
    """Another task may still be writing shard 1 of step 2 while shard 0 is written: it stays."""
    other = tmp_path / "model.ckpt-2.data-00001-of-00002.tmp-0123456789ab"
    older = tmp_path / "model.ckpt-1.data-00001-of-00002.tmp-0123456789ab"
    other.write_bytes(b"x")
    older.write_bytes(b"x")
    checkpoint_format.write_shard(str(tmp_path / "model.ckpt-2"), 0, 2, ["w"], [np.zeros(3)])
    assert other.exists()
    assert not older.exists()


@pytest.fixture
def full_disk(tmp_path):
    """A 64 KiB tmpfs (CI runs as root; skipped where mounting is not permitted)."""
    with mounted_tmpfs(tmp_path / "disk") as disk:
        yield str(disk)
        tf.summary.FileWriterCache.clear()  # close event files on the disk before it is unmounted


def test_a_full_disk_is_resource_exhausted_and_leaves_no_tmp(full_disk):
    _model()
    saver = tf.train.Saver()
    prefix = os.path.join(full_disk, "model.ckpt")
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        saver.save(sess, prefix, global_step=1)
        fill(full_disk)
        with pytest.raises(tf.errors.ResourceExhaustedError, match=r"No space left on device \[ENOSPC\]"):
            saver.save(sess, prefix, global_step=2)
    assert not [name for name in os.listdir(full_disk) if ".tmp" in name]
    assert tf.train.latest_checkpoint(full_disk) == prefix + "-1"


def test_a_full_disk_is_no_preemption_and_rolls_nothing_back(full_disk, in_process_servers):
    """The chief's monitored session stops with the save's error; the shared variables keep their
    values (a preemption would restore step 0's checkpoint into the ps)."""
    with tf.device("/job:ps/task:0"):
        step = tf.train.get_or_create_global_step()
        w = tf.Variable(0.0, name="w")
    train = tf.group(tf.assign_add(step, 1), tf.assign_add(w, 1.0))
    target = in_process_servers["worker"].target
    with (
        pytest.raises(tf.errors.ResourceExhaustedError, match="ENOSPC"),
        tf.train.MonitoredTrainingSession(
            target,
            checkpoint_dir=full_disk,
            save_checkpoint_steps=3,
            save_summaries_steps=None,
            save_summaries_secs=None,
            max_wait_secs=10,  # bounds the recover-restore-fail loop a preemption would start
        ) as sess,
    ):
        fill(full_disk)  # after the first checkpoint (step 0)
        for _ in range(10):
            sess.run(train)
    with tf.Session(target) as sess:
        assert sess.run([step, w]) == [3, 3.0]
    assert tf.train.latest_checkpoint(full_disk) == os.path.join(full_disk, "model.ckpt-0")
    assert not [name for name in os.listdir(full_disk) if ".tmp" in name]


def test_state_file_parser_ignores_a_damaged_file(tmp_path, caplog):
    (tmp_path / "checkpoint").write_text("model_checkpoint_path: unquoted\n")
    assert tf.train.get_checkpoint_state(str(tmp_path)) is None
    assert "Checkpoint ignored" in caplog.text
    assert tf.train.get_checkpoint_state(str(tmp_path / "none")) is None


def test_state_file_quotes_round_trip(tmp_path):
    odd = str(tmp_path / 'we"ird\\name\tx')
    tf.train.update_checkpoint_state(str(tmp_path), odd)
    assert tf.train.get_checkpoint_state(str(tmp_path)).model_checkpoint_path == odd


# -- real TensorFlow reads nbdist's state file, and nbdist reads TF's ------------------------------
@pytest.mark.tf
def test_real_tf_reads_nbdist_state_file(tf1, tmp_path):
    _model()
    saver = tf.train.Saver(max_to_keep=3)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        paths = [saver.save(sess, str(tmp_path / "model.ckpt"), global_step=i) for i in (10, 20)]
    assert tf1.train.latest_checkpoint(str(tmp_path)) == paths[-1]
    state = tf1.train.get_checkpoint_state(str(tmp_path))
    assert state.model_checkpoint_path == paths[-1]
    assert list(state.all_model_checkpoint_paths) == paths
    assert tf1.train.checkpoint_exists(paths[0])


@pytest.mark.tf
def test_nbdist_reads_real_tf_state_file(tf1, tmp_path):
    graph = tf1.Graph()
    with graph.as_default():
        tf1.Variable(1.0, name="v")
        saver = tf1.train.Saver()
        with tf1.Session() as sess:
            sess.run(tf1.global_variables_initializer())
            paths = [saver.save(sess, str(tmp_path / "model.ckpt"), global_step=i) for i in (1, 2)]
    state = tf.train.get_checkpoint_state(str(tmp_path))
    assert state.model_checkpoint_path == paths[-1]
    assert state.all_model_checkpoint_paths == paths
    assert tf.train.latest_checkpoint(str(tmp_path)) == paths[-1]  # TF V2 also writes .index


@pytest.mark.tf
def test_real_tf_raises_the_same_class_on_a_full_disk_and_leaves_no_tmp(tf1, full_disk):
    """What nbdist's full-disk save copies: TF's errno mapping and its deleted temporary file."""
    with tf1.Graph().as_default():
        tf1.Variable(np.zeros(64, np.float32), name="w")
        saver = tf1.train.Saver()
        with tf1.Session() as sess:
            sess.run(tf1.global_variables_initializer())
            saver.save(sess, os.path.join(full_disk, "model.ckpt"), global_step=1, write_meta_graph=False)
            fill(full_disk)
            with pytest.raises(tf1.errors.ResourceExhaustedError, match="No space left on device"):
                saver.save(sess, os.path.join(full_disk, "model.ckpt"), global_step=2, write_meta_graph=False)
    assert not [name for name in os.listdir(full_disk) if "tmp" in name or "tempstate" in name]
