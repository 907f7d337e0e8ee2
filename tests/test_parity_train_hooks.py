"""`tf.train`'s hooks, session creators, run context/values, timer and checkpoint helpers that
nbdist had but no test used, each run as a TF 1.x program runs it (in a `MonitoredSession` over
a temporary directory) with both libraries, and the calls, files and values compared.
"""

import glob
import os

import numpy as np
import pytest

import nbdist as tf


def _steps(lib):
    step = lib.train.get_or_create_global_step()
    return lib.assign_add(step, 1)


def _events(lib, folder, tag):
    """The steps (and values) of the `tag` summaries of the event files in `folder`."""
    found = []
    for path in sorted(glob.glob(os.path.join(folder, "events.out.tfevents.*"))):
        for event in lib.train.summary_iterator(path):
            for value in event.summary.value:
                if value.tag == tag:
                    found.append((event.step, value.simple_value))
    return found


def test_second_or_step_timer_triggers_as_tensorflow(tf1):
    def run(lib):
        timer = lib.train.SecondOrStepTimer(every_steps=3)
        seen = [timer.last_triggered_step(), timer.should_trigger_for_step(0)]
        seen.append(timer.update_last_triggered_step(0))
        seen += [timer.should_trigger_for_step(s) for s in (0, 1, 2, 3, 4)]
        secs, steps = timer.update_last_triggered_step(4)
        seen += [secs is not None and secs >= 0, steps, timer.last_triggered_step()]
        timer.reset()
        seen += [timer.last_triggered_step(), timer.should_trigger_for_step(4)]
        by_time = lib.train.SecondOrStepTimer(every_secs=3600)
        by_time.update_last_triggered_step(1)
        seen += [by_time.should_trigger_for_step(2), by_time.should_trigger_for_step(1)]
        with pytest.raises(ValueError, match="Either every_secs or every_steps should be provided"):
            lib.train.SecondOrStepTimer()
        with pytest.raises(ValueError, match="Can not provide both every_secs and every_steps"):
            lib.train.SecondOrStepTimer(every_secs=1, every_steps=1)
        return seen

    expected = [
        None,
        True,
        (None, None),
        False,
        False,
        False,
        True,
        True,
        True,
        4,
        4,
        None,
        True,
        False,
        False,
    ]
    assert run(tf) == run(tf1) == expected


def test_session_run_context_and_values_as_tensorflow(tf1):
    def run(lib):
        with lib.Graph().as_default(), lib.Session() as sess:
            args = lib.train.SessionRunArgs(fetches=lib.constant(1), feed_dict=None)
            ctx = lib.train.SessionRunContext(original_args=args, session=sess)
            before = (ctx.stop_requested, ctx.original_args is args, ctx.session is sess)
            ctx.request_stop()
            values = lib.train.SessionRunValues(results=[3], options=None, run_metadata=None)
            return before, ctx.stop_requested, values.results, values.options, values._fields

    assert run(tf) == run(tf1)


def _recording_hook(lib, log):
    class Hook(lib.train.SessionRunHook):
        def before_run(self, run_context):
            assert isinstance(run_context, lib.train.SessionRunContext)
            log.append(("before_run", run_context.original_args.fetches is not None))
            return lib.train.SessionRunArgs({"double": lib.constant(2.0) * 3.0})

        def after_run(self, run_context, run_values):
            assert isinstance(run_values, lib.train.SessionRunValues)
            log.append(("after_run", run_values.results))
            if len(log) >= 6:
                run_context.request_stop()

    return Hook()


def test_monitored_session_with_own_session_creator_and_hook_as_tensorflow(tf1):
    def run(lib):
        log = []

        class Creator(lib.train.SessionCreator):
            def create_session(self):
                log.append("create_session")
                sess = lib.Session()
                sess.run(lib.global_variables_initializer())
                return sess

        with lib.Graph().as_default():
            inc = _steps(lib)
            with lib.train.MonitoredSession(Creator(), hooks=[_recording_hook(lib, log)]) as sess:
                while not sess.should_stop():
                    sess.run(inc)
        return log

    assert run(tf) == run(tf1)


def test_checkpoint_saver_hook_calls_its_listeners_and_chief_creator_restores(tf1, tmp_path):
    def run(lib):
        folder = str(tmp_path / lib.__name__)
        log = []

        class Listener(lib.train.CheckpointSaverListener):
            def begin(self):
                log.append("begin")

            def before_save(self, session, global_step_value):
                log.append(("before_save", int(global_step_value)))

            def after_save(self, session, global_step_value):
                log.append(
                    ("after_save", int(global_step_value), lib.train.latest_checkpoint(folder) is not None)
                )

            def end(self, session, global_step_value):
                log.append(("end", int(global_step_value)))

        with lib.Graph().as_default():
            inc = _steps(lib)
            w = lib.get_variable("w", [2], initializer=lib.zeros_initializer())
            add = lib.assign_add(w, [1.0, 2.0])
            hook = lib.train.CheckpointSaverHook(folder, save_steps=2, listeners=[Listener()])
            creator = lib.train.ChiefSessionCreator(checkpoint_dir=folder)
            with lib.train.MonitoredSession(creator, hooks=[hook]) as sess:
                for _ in range(3):
                    sess.run([inc, add])
        with lib.Graph().as_default():
            _steps(lib)
            w = lib.get_variable("w", [2])
            with lib.train.MonitoredSession(lib.train.ChiefSessionCreator(checkpoint_dir=folder)) as sess:
                restored = sess.run([w, lib.train.get_global_step()])
        return (
            log,
            [np.asarray(r).tolist() for r in restored],
            os.path.basename(lib.train.latest_checkpoint(folder)),
        )

    assert run(tf) == run(tf1)


def test_worker_session_creator_waits_for_nothing_and_runs_local_init(tf1):
    def run(lib):
        with lib.Graph().as_default():
            local = lib.Variable([4, 5], name="local", collections=[lib.GraphKeys.LOCAL_VARIABLES])
            scaffold = lib.train.Scaffold()
            creator = lib.train.WorkerSessionCreator(scaffold=scaffold, max_wait_secs=5)
            with lib.train.MonitoredSession(creator) as sess:
                return sess.run(local).tolist()

    assert run(tf) == run(tf1) == [4, 5]


def test_step_counter_and_summary_saver_hooks_write_the_steps_tensorflow_writes(tf1, tmp_path):
    def run(lib):
        folder = str(tmp_path / lib.__name__)
        with lib.Graph().as_default():
            inc = _steps(lib)
            loss = lib.summary.scalar("loss", lib.constant(0.25))
            hooks = [
                lib.train.StepCounterHook(every_n_steps=2, output_dir=folder),
                lib.train.SummarySaverHook(save_steps=2, output_dir=folder, summary_op=loss),
            ]
            with lib.train.MonitoredSession(hooks=hooks) as sess:
                for _ in range(5):
                    sess.run(inc)
        rates = _events(lib, folder, "global_step/sec")
        return [s for s, _ in rates], all(r > 0 for _, r in rates), _events(lib, folder, "loss")

    ours, theirs = run(tf), run(tf1)
    assert ours == theirs, (ours, theirs)
    assert ours[0] and ours[1] and ours[2], ours


def test_summary_saver_hook_needs_one_of_steps_and_secs(tf1):
    for lib in (tf, tf1):
        with pytest.raises(ValueError, match="Either every_secs or every_steps should be provided"):
            lib.train.SummarySaverHook(output_dir="unused", summary_op=lib.constant(""))


def test_checkpoint_helpers_match_tensorflow(tf1, tmp_path):
    def run(lib):
        folder = tmp_path / lib.__name__
        folder.mkdir()
        state = lib.train.generate_checkpoint_state_proto(
            str(folder), str(folder / "model-2"), all_model_checkpoint_paths=[str(folder / "model-1")]
        )
        relative = lib.train.generate_checkpoint_state_proto(str(folder), "model-3")
        with lib.Graph().as_default(), lib.Session() as sess:
            v = lib.Variable([1.0], name="v")
            sess.run(v.initializer)
            prefix = lib.train.Saver().save(sess, str(folder / "model"), global_step=7)
        mtimes = lib.train.get_checkpoint_mtimes([prefix, str(folder / "missing")])
        index_mtime = os.path.getmtime(prefix + ".index")
        written = sorted(os.path.basename(p) for p in glob.glob(prefix + ".*"))
        lib.train.remove_checkpoint(prefix, checkpoint_format_version=lib.train.SaverDef.V2)
        left = sorted(os.path.basename(p) for p in glob.glob(prefix + ".*"))
        return (
            os.path.basename(state.model_checkpoint_path),
            [os.path.basename(p) for p in state.all_model_checkpoint_paths],
            relative.model_checkpoint_path.endswith("model-3"),
            list(relative.all_model_checkpoint_paths)[-1:] == [relative.model_checkpoint_path],
            len(mtimes),
            abs(mtimes[0] - index_mtime) < 1,
            written,
            left,
        )

    assert run(tf) == run(tf1)


def test_saver_def_drives_a_saver_as_tensorflows(tf1, tmp_path):
    def run(lib):
        with lib.Graph().as_default(), lib.Session() as sess:
            v = lib.Variable([1.0, 2.0], name="v")
            saver = lib.train.Saver(max_to_keep=3)
            made = saver.as_saver_def()
            assert isinstance(made, lib.train.SaverDef)
            copy = lib.train.SaverDef(
                filename_tensor_name=made.filename_tensor_name,
                save_tensor_name=made.save_tensor_name,
                restore_op_name=made.restore_op_name,
                max_to_keep=made.max_to_keep,
                sharded=made.sharded,
                keep_checkpoint_every_n_hours=made.keep_checkpoint_every_n_hours,
                version=lib.train.SaverDef.V2,
            )
            again = lib.train.Saver(saver_def=copy)
            sess.run(v.initializer)
            prefix = again.save(sess, str(tmp_path / lib.__name__ / "m"))
            sess.run(lib.assign(v, [0.0, 0.0]))
            again.restore(sess, prefix)
            return (
                made.filename_tensor_name,
                made.save_tensor_name,
                made.restore_op_name,
                made.max_to_keep,
                made.sharded,
                made.version == lib.train.SaverDef.V2,
                sess.run(v).tolist(),
            )

    (tmp_path / "tensorflow.compat.v1").mkdir()
    (tmp_path / "nbdist").mkdir()
    assert run(tf) == run(tf1)
