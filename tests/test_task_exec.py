"""Tests for nbdist/in_task/exec_service.py (the per-task Exec service) and nbdist/notebook/task_exec.py (its client).

The service tests run cells in real ``python -m nbdist.server --exec`` processes (a
`LocalCluster`); the pure helpers (last-expression rule, error typing, prefixing) run here.
"""

import io
import json
import os
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
from IPython.lib.pretty import pretty

import nbdist
from nbdist import errors
from nbdist.in_task import exec_service
from nbdist.notebook import task_exec
from nbdist.runtime.net import transport

sys.path.insert(0, os.path.dirname(__file__))
from procs import REPO, free_port


class Recorder(io.StringIO):
    """A stream that remembers when each write arrived."""

    def __init__(self):
        super().__init__()
        self.times = []

    def write(self, text):
        self.times.append((time.monotonic(), text))
        return super().write(text)


@pytest.fixture(scope="module")
def cluster():
    with nbdist.LocalCluster(worker=2) as c:
        yield c


@pytest.fixture
def workers(cluster):
    return [("worker", i, cluster.cluster_spec.task_address("worker", i)) for i in range(2)]


def run(cluster, tasks, code, **kwargs):
    out = Recorder()
    kwargs.setdefault("streams", {"stdout": out, "stderr": out})
    return task_exec.run_cell(tasks, code, cluster.key, **kwargs), out


# ---------------------------------------------------------------- pure helpers


def test_last_expression_is_returned():
    assert exec_service._execute("x = 2\nx * 3", "<t>", {}) == 6


def test_a_trailing_semicolon_hides_the_last_value():
    assert exec_service._execute("x = 2\nx * 3;", "<t>", {}) is None


def test_a_statement_last_returns_none():
    ns = {}
    assert exec_service._execute("y = 1", "<t>", ns) is None
    assert ns["y"] == 1


def test_plain_values_travel_and_others_come_back_as_repr():
    assert exec_service._result_body({"a": [1, 2.5, "s"]}) == {
        "repr": "{'a': [1, 2.5, 's']}",
        "value": {"a": [1, 2.5, "s"]},
    }
    assert "value" in exec_service._result_body(np.ones(3))
    assert exec_service._result_body(object) == {"repr": "<class 'object'>"}


def test_remote_error_is_typed_after_a_builtin():
    err = task_exec.remote_error(
        [
            {
                "task": "worker:1",
                "ename": "ZeroDivisionError",
                "module": "builtins",
                "evalue": "division by zero",
                "traceback": "Traceback...\nZeroDivisionError",
            }
        ]
    )
    assert isinstance(err, ZeroDivisionError)
    assert isinstance(err, task_exec.RemoteError)
    assert str(err) == "[worker:1] ZeroDivisionError: division by zero"


def test_remote_error_is_typed_after_a_tf_error():
    err = task_exec.remote_error(
        [
            {
                "task": "worker:0",
                "ename": "FailedPreconditionError",
                "module": "nbdist.errors",
                "evalue": "uninitialized w",
                "traceback": "",
            }
        ]
    )
    assert isinstance(err, errors.FailedPreconditionError)
    assert err.error_code == errors.FAILED_PRECONDITION


def test_remote_error_of_an_unknown_class_is_plain():
    err = task_exec.remote_error(
        [
            {
                "task": "worker:0",
                "ename": "MyError",
                "module": "__dtf_worker__",
                "evalue": "boom",
                "traceback": "",
            }
        ]
    )
    assert type(err) is task_exec.RemoteError


def test_remote_traceback_is_rendered_with_each_task_prefix():
    err = task_exec.remote_error(
        [
            {
                "task": "worker:0",
                "ename": "ValueError",
                "module": "builtins",
                "evalue": "a",
                "traceback": "TB0\nValueError: a",
            },
            {
                "task": "worker:1",
                "ename": "KeyError",
                "module": "builtins",
                "evalue": "b",
                "traceback": "TB1\nKeyError: b",
            },
        ]
    )
    assert err._render_traceback_() == [
        "[worker:0] Remote traceback:",
        "[worker:0] TB0",
        "[worker:0] ValueError: a",
        "[worker:1] Remote traceback:",
        "[worker:1] TB1",
        "[worker:1] KeyError: b",
    ]
    assert str(err) == "[worker:0] ValueError: a (also failed: [worker:1] KeyError)"


def test_printer_prefixes_whole_lines_and_holds_partial_ones():
    out = io.StringIO()
    printer = task_exec._Printer("worker:0", {"stdout": out})
    printer.write("stdout", "a\nb")
    assert out.getvalue() == "[worker:0] a\n"
    printer.write("stdout", "c\n")
    printer.write("stdout", "tail")
    printer.flush()
    assert out.getvalue() == "[worker:0] a\n[worker:0] bc\n[worker:0] tail\n"


def test_task_results_pretty_print_per_task():
    results = task_exec.TaskResults({"worker:0": 1, "worker:1": task_exec.RemoteValue("<obj>")})
    assert pretty(results) == "Out[worker:0]: 1\nOut[worker:1]: <obj>"


# ---------------------------------------------------------------- real tasks


@pytest.mark.slow
def test_cell_runs_on_every_task_at_once(cluster, workers):
    started = time.monotonic()
    results, _ = run(cluster, workers, "import time\ntime.sleep(1.0)\ntask_index")
    assert time.monotonic() - started < 1.8  # one after the other would take 2 s
    assert results == {"worker:0": 0, "worker:1": 1}


@pytest.mark.slow
def test_namespace_has_the_task_and_its_server(cluster, workers):
    results, _ = run(
        cluster, workers, "(job_name, task_index, server.target, sorted(cluster.jobs), tf.__name__)"
    )
    assert results["worker:1"] == ("worker", 1, cluster.target("worker", 1), ["worker"], "nbdist")


@pytest.mark.slow
def test_namespace_persists_between_cells(cluster, workers):
    run(cluster, workers, "counter = task_index * 10")
    results, _ = run(cluster, workers, "counter += 1\ncounter")
    assert results == {"worker:0": 1, "worker:1": 11}


@pytest.mark.slow
def test_each_task_is_its_own_client(cluster, workers):
    code = (
        "with tf.Graph().as_default():\n"
        "    with tf.Session(server.target) as sess:\n"
        "        value = sess.run(tf.constant(float(task_index)) + 1.0)\n"
        "value"
    )
    results, _ = run(cluster, workers, code)
    assert results == {"worker:0": 1.0, "worker:1": 2.0}


@pytest.mark.slow
def test_output_is_prefixed_per_task(cluster, workers):
    _, out = run(
        cluster, workers, "print('hello from', task_index)\nimport sys\nprint('oops', file=sys.stderr)"
    )
    lines = out.getvalue().splitlines()
    assert "[worker:0] hello from 0" in lines
    assert "[worker:1] hello from 1" in lines
    assert "[worker:1] oops" in lines


@pytest.mark.slow
def test_output_arrives_while_the_cell_still_runs(cluster, workers):
    _, out = run(
        cluster, workers[:1], "import time\nprint('first', flush=True)\ntime.sleep(1.5)\nprint('last')"
    )
    first_at = next(t for t, text in out.times if "first" in text)
    last_at = next(t for t, text in out.times if "last" in text)
    assert last_at - first_at > 1.0  # 'first' was shown while the task slept


@pytest.mark.slow
def test_an_exception_is_raised_with_the_remote_traceback(cluster, workers):
    with pytest.raises(ZeroDivisionError, match=r"\[worker:0\] ZeroDivisionError: division by zero") as info:
        run(cluster, workers, "def f():\n    return 1 / task_index\nf()")
    lines = info.value._render_traceback_()
    assert "[worker:0]     return 1 / task_index" in lines
    assert info.value.failures[0]["task"] == "worker:0"
    assert len(info.value.failures) == 1


@pytest.mark.slow
def test_a_remote_tf_error_keeps_its_class(cluster, workers):
    code = (
        "with tf.Graph().as_default():\n"
        "    v = tf.Variable(1.0, name=f'never_initialized_{task_index}')\n"
        "    tf.Session(server.target).run(v)"
    )
    with pytest.raises(errors.FailedPreconditionError, match=r"\[worker:0\] FailedPreconditionError"):
        run(cluster, workers[:1], code)


@pytest.mark.slow
def test_a_syntax_error_is_reported(cluster, workers):
    with pytest.raises(SyntaxError, match=r"\[worker:0\] SyntaxError"):
        run(cluster, workers[:1], "def (:")


@pytest.mark.slow
def test_timeout_interrupts_the_tasks_and_the_cluster_stays_usable(cluster, workers):
    started = time.monotonic()
    with pytest.raises(TimeoutError, match=r"worker:0, worker:1 still running after 0.5 s; interrupted"):
        run(cluster, workers, "import time\ntime.sleep(30)", timeout_s=0.5)
    assert time.monotonic() - started < 3.0
    results, _ = run(cluster, workers, "'alive'")
    assert results == {"worker:0": "alive", "worker:1": "alive"}


@pytest.mark.slow
def test_keyboard_interrupt_interrupts_every_task(cluster, workers):
    main = threading.get_ident()
    timer = threading.Timer(0.5, signal.pthread_kill, (main, signal.SIGINT))
    started = time.monotonic()
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        run(cluster, workers, "import time\nfor _ in range(300):\n    time.sleep(0.1)\nstate = 'finished'")
    assert time.monotonic() - started < 3.0
    results, _ = run(cluster, workers, "globals().get('state', 'interrupted')")
    assert results == {"worker:0": "interrupted", "worker:1": "interrupted"}


@pytest.mark.slow
def test_cancel_from_another_thread_interrupts_every_task(cluster, workers):
    cancel = threading.Event()
    threading.Timer(0.5, cancel.set).start()
    with pytest.raises(errors.CancelledError, match=r"cancelled while running on worker:0, worker:1"):
        run(
            cluster,
            workers,
            "import time\nfor _ in range(300):\n    time.sleep(0.1)\nstate = 'finished'",
            cancel=cancel,
        )
    results, _ = run(cluster, workers, "globals().get('state', 'interrupted')")
    assert results == {"worker:0": "interrupted", "worker:1": "interrupted"}


@pytest.mark.slow
def test_a_second_cell_on_a_busy_task_is_refused(cluster, workers):
    channel = transport.channel_to(workers[0][2], "/job:worker/task:0", cluster.key)
    channel.call("Exec", {"exec_id": "busy-1", "code": "import time\ntime.sleep(1.5)"}, timeout_s=5)
    try:
        with pytest.raises(errors.FailedPreconditionError, match="still running cell busy-1"):
            channel.call("Exec", {"exec_id": "busy-2", "code": "1"}, timeout_s=5)
    finally:
        channel.call("ExecInterrupt", {"exec_id": "busy-1"}, timeout_s=5)


@pytest.mark.slow
def test_an_unsigned_exec_is_not_run(cluster, workers, tmp_path):
    marker = tmp_path / "ran"
    channel = transport.channel_to(workers[0][2], "/job:worker/task:0", None)
    # Refused before anything is decoded; the error reply still names the request's id.
    with pytest.raises(errors.UnauthenticatedError, match="unsigned message refused"):
        channel.call("Exec", {"exec_id": "x", "code": f"open({str(marker)!r}, 'w').close()"}, timeout_s=1.0)
    transport.drop_channel(workers[0][2], None)
    status = transport.channel_to(workers[0][2], "", cluster.key).call("Status", {}, timeout_s=5)
    assert status["malformed_requests"] >= 1
    assert not marker.exists()


@pytest.mark.slow
def test_a_server_without_a_key_refuses_exec():
    address = f"localhost:{free_port()}"
    env = {k: v for k, v in os.environ.items() if k != "NBDIST_CLUSTER_KEY"}
    env["PYTHONPATH"] = REPO
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "nbdist.server",
            "--cluster",
            json.dumps({"local": [address]}),
            "--job",
            "local",
            "--task",
            "0",
            "--exec",
        ],
        stdout=subprocess.PIPE,
        env=env,
        text=True,
    )
    try:
        assert proc.stdout.readline().startswith("nbdist-server ready")
        channel = transport.channel_to(address, "/job:local/task:0", None)
        with pytest.raises(errors.PermissionDeniedError, match="server has no cluster key"):
            channel.call("Exec", {"exec_id": "x", "code": "1"}, timeout_s=5)
        transport.drop_channel(address, None)
    finally:
        proc.terminate()
        proc.wait(5)
        proc.stdout.close()


BLAS_THREADS = "from threadpoolctl import threadpool_info\n[i['num_threads'] for i in threadpool_info() if i['user_api'] == 'blas']"


def test_a_task_process_runs_blas_on_one_thread(cluster, workers):
    """Several tasks share the cores: each task's BLAS runs one thread (unless the user set one)."""
    results, _ = run(cluster, workers, BLAS_THREADS)
    assert results == {"worker:0": [1], "worker:1": [1]}


def test_the_users_blas_thread_count_rules(monkeypatch):
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "2")
    with nbdist.LocalCluster(worker=1) as c:
        tasks = [("worker", 0, c.cluster_spec.task_address("worker", 0))]
        results = task_exec.run_cell(tasks, BLAS_THREADS, c.key)
    assert results == {"worker:0": [2]}
