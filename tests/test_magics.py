"""Tests for nbdist/notebook/magics.py: %dtf_cluster and %%dtf_worker on a real IPython shell."""

import json
import os
import re
import sys

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

from nbdist.notebook import local_cluster as cluster_lib
from nbdist.notebook import magics
from nbdist.runtime.net import samehost

sys.path.insert(0, os.path.dirname(__file__))
from procs import wait_gone


@pytest.fixture(scope="module")
def ip():
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "nbdist")
    yield shell
    running = cluster_lib.current()
    if running is not None:
        running.stop()


@pytest.fixture
def stop_after(ip):
    yield
    running = cluster_lib.current()
    if running is not None:
        running.stop()


# ---------------------------------------------------------------- loading and help


def test_load_ext_registers_both_magics(ip):
    magics = ip.magics_manager.magics
    assert "dtf_cluster" in magics["line"]
    assert "dtf_worker" in magics["cell"]


def test_help_shows_the_usage_from_magic_arguments(ip):
    doc = ip.magics_manager.magics["line"]["dtf_cluster"].__doc__
    assert "%dtf_cluster [--spec JSON] [--spec-file PATH] [--attach] [--timeout S]" in doc
    assert "--tasks I,J" in ip.magics_manager.magics["cell"]["dtf_worker"].__doc__


@pytest.mark.parametrize("flag", ["--help", "-h", "ps=1 --help   # a comment"])
def test_dtf_cluster_help_flag_prints_the_usage(ip, flag):
    with capture_output() as out:
        result = ip.run_cell(f"%dtf_cluster {flag}")
    assert result.success, result.error_in_exec
    assert out.stdout.startswith(
        "usage:\n\n  %dtf_cluster [--spec JSON] [--spec-file PATH] [--attach] [--timeout S]"
    )
    assert "--timeout S           how long each task may take to start" in out.stdout
    assert cluster_lib.current() is None  # nothing started


def test_dtf_worker_help_flag_prints_the_usage_and_runs_nothing(ip):
    with capture_output() as out:
        result = ip.run_cell("%%dtf_worker --help\nraise SystemExit('the cell ran')")
    assert result.success, result.error_in_exec
    assert out.stdout.startswith("usage:\n\n  %dtf_worker [--job JOB] [--tasks I,J] [--timeout S]")


def test_unload_removes_the_magics():
    shell = InteractiveShell.instance()
    shell.run_line_magic("unload_ext", "nbdist")
    try:
        assert "dtf_cluster" not in shell.magics_manager.magics["line"]
    finally:
        shell.run_line_magic("load_ext", "nbdist")
    assert "dtf_cluster" in shell.magics_manager.magics["line"]


# ---------------------------------------------------------------- comments (no processes)


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("ps=1 worker=2   # three server processes, a live status table", "ps=1 worker=2"),
        ("# only a comment", ""),
        ("stop#not-a-comment", "stop#not-a-comment"),
        (
            """--spec '{"a#b": ["localhost:1"]}'  # a # inside quotes stays""",
            """--spec '{"a#b": ["localhost:1"]}'""",
        ),
        ("""--spec "{'x': ['h #1:2']}" """, """--spec "{'x': ['h #1:2']}" """),
        ("local=2", "local=2"),
    ],
)
def test_strip_comment_drops_a_trailing_comment_outside_quotes(line, expected):
    assert magics.strip_comment(line) == expected


def test_a_trailing_comment_is_not_read_as_arguments(ip):
    # "status" in the comment used to be read as the `status` command (UsageError).
    with capture_output() as out:
        result = ip.run_cell("%dtf_cluster   # show the status of the running cluster, if any")
    assert result.success, result.error_in_exec
    assert "No cluster is running" in out.stdout


def test_a_hash_inside_a_quoted_spec_reaches_the_spec(ip):
    with pytest.raises(UsageError, match="job name 'a#b' is invalid"):
        ip.run_line_magic("dtf_cluster", """--spec '{"a#b": ["localhost:1"]}'   # comment""")


# ---------------------------------------------------------------- misuse (no processes)


def test_a_word_that_is_not_job_equals_count_is_a_usage_error(ip):
    with pytest.raises(UsageError, match=r"'ps' is not JOB=N .* e.g. `%dtf_cluster local=2`"):
        ip.run_line_magic("dtf_cluster", "ps worker=2")


@pytest.mark.parametrize(
    ("word", "command"), [("stauts", "status"), ("stpo", "stop"), ("restrat", "restart")]
)
def test_a_misspelt_command_gets_a_did_you_mean(ip, word, command):
    with pytest.raises(
        UsageError, match=rf"'{word}' is not a command or JOB=N; did you mean `%dtf_cluster {command}`\?"
    ):
        ip.run_line_magic("dtf_cluster", word)


def test_a_zero_count_is_a_usage_error(ip):
    with pytest.raises(UsageError, match="'worker=0' is not JOB=N"):
        ip.run_line_magic("dtf_cluster", "worker=0")


def test_an_invalid_job_name_is_a_usage_error(ip):
    with pytest.raises(UsageError, match="job name '1x' is invalid"):
        ip.run_line_magic("dtf_cluster", "1x=2")


def test_jobs_and_spec_together_are_a_usage_error(ip):
    with pytest.raises(UsageError, match=r"job sizes .* or --spec/--spec-file, not both"):
        ip.run_line_magic("dtf_cluster", """worker=1 --spec '{"a": ["localhost:1"]}'""")


def test_bad_spec_json_is_a_usage_error(ip):
    with pytest.raises(UsageError, match="--spec is not valid JSON"):
        ip.run_line_magic("dtf_cluster", "--spec '{oops'")


def test_missing_spec_file_is_a_usage_error(ip, tmp_path):
    with pytest.raises(UsageError, match=r"cannot read .*nope\.json"):
        ip.run_line_magic("dtf_cluster", f"--spec-file {tmp_path / 'nope.json'}")


def test_stop_takes_no_other_arguments(ip):
    with pytest.raises(UsageError, match="%dtf_cluster stop takes no other arguments"):
        ip.run_line_magic("dtf_cluster", "stop worker=1")


def test_dtf_worker_needs_a_running_cluster(ip):
    assert cluster_lib.current() is None
    with pytest.raises(UsageError, match="needs a running cluster: run `%dtf_cluster ps=1 worker=2` first"):
        ip.run_cell_magic("dtf_worker", "", "print(1)")


def test_status_without_a_cluster_says_how_to_start_one(ip):
    with capture_output() as out:
        assert ip.run_line_magic("dtf_cluster", "") is None
    assert "start one with `%dtf_cluster local=2`" in out.stdout


# ---------------------------------------------------------------- real clusters


@pytest.mark.slow
def test_dtf_cluster_starts_binds_and_returns_the_cluster(ip, stop_after):
    with capture_output() as out:
        assert ip.run_line_magic("dtf_cluster", "local=2") is None
    cluster = ip.user_ns["dtf"]
    assert cluster.running
    assert sorted(cluster.pids) == [("local", 0), ("local", 1)]
    # Shown once, as one rich display: the text table (outside a kernel) and the HTML table.
    assert len(out.outputs) == 1 and out.stdout == ""
    shown = out.outputs[0].data
    assert "local  0" in shown["text/plain"] and shown["text/plain"].startswith("<LocalCluster local=2")
    assert "<table>" in shown["text/html"]


@pytest.mark.slow
def test_a_second_dtf_cluster_stops_the_first(ip, stop_after):
    with capture_output():
        ip.run_line_magic("dtf_cluster", "local=1")
        first = ip.user_ns["dtf"]
        pids = list(first.pids.values())
        ip.run_line_magic("dtf_cluster", "ps=1 worker=2")
        second = ip.user_ns["dtf"]
    assert not first.running
    assert wait_gone(pids, 1.0)
    assert second.cluster_spec.jobs == ["ps", "worker"]
    assert ip.user_ns["dtf"] is second


@pytest.mark.slow
def test_spec_file_starts_the_local_tasks(ip, stop_after, tmp_path):
    spec = {"local": [f"localhost:{p}" for p in samehost.free_ports(2)]}
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps(spec))
    with capture_output():
        ip.run_line_magic("dtf_cluster", f"--spec-file {path}")
    cluster = ip.user_ns["dtf"]
    assert cluster.cluster_spec.as_dict() == spec
    assert len(cluster.pids) == 2


@pytest.mark.slow
def test_a_near_miss_of_a_usual_job_name_warns_and_still_starts(ip, stop_after):
    with capture_output() as out:
        ip.run_line_magic("dtf_cluster", "ps=1 wroker=1")
    assert ip.user_ns["dtf"].cluster_spec.jobs == ["ps", "wroker"]
    assert out.stderr.count("warning") == 1  # ps is a usual name
    assert "job 'wroker' is not a usual job name; did you mean 'worker'?" in out.stderr
    assert "`%dtf_cluster worker=1` starts 'worker'" in out.stderr


@pytest.mark.slow
def test_an_unusual_job_name_far_from_the_usual_ones_is_started_quietly(ip, stop_after):
    with capture_output() as out:
        ip.run_line_magic("dtf_cluster", "trainer=1")
    assert ip.user_ns["dtf"].cluster_spec.jobs == ["trainer"]
    assert out.stderr == ""


@pytest.mark.slow
def test_status_stop_and_restart(ip, stop_after):
    with capture_output() as out:
        ip.run_line_magic("dtf_cluster", "local=1")
        cluster = ip.user_ns["dtf"]
        ip.run_line_magic("dtf_cluster", "status")
        old = list(cluster.pids.values())
        ip.run_line_magic("dtf_cluster", "restart")
        assert ip.user_ns["dtf"] is cluster
        assert wait_gone(old, 1.0)
        assert cluster.running
        ip.run_line_magic("dtf_cluster", "stop")
    assert not cluster.running
    assert "Stopped <LocalCluster local=1 (stopped)" in out.stdout
    assert len(out.outputs) == 3  # start, status, restart: each shows the cluster once


@pytest.mark.slow
def test_dtf_worker_runs_on_every_worker_with_prefixed_output(ip, stop_after):
    with capture_output() as out:
        ip.run_line_magic("dtf_cluster", "ps=1 worker=2")
        results = ip.run_cell_magic("dtf_worker", "", "print('I am', job_name, task_index)\ntask_index * 2")
    assert "[worker:0] I am worker 0" in out.stdout
    assert "[worker:1] I am worker 1" in out.stdout
    assert results == {"worker:0": 0, "worker:1": 2}


@pytest.mark.slow
def test_dtf_worker_selects_job_and_tasks(ip, stop_after):
    with capture_output() as out:
        ip.run_line_magic("dtf_cluster", "ps=1 worker=2")
        results = ip.run_cell_magic("dtf_worker", "--job worker --tasks 1", "task_index")
        ps = ip.run_cell_magic("dtf_worker", "--job ps", "job_name")
    assert results == {"worker:1": 1}
    assert ps == {"ps:0": "ps"}
    assert out.stdout.count("[worker:0]") == 0


@pytest.mark.slow
def test_dtf_worker_rejects_an_unknown_task(ip, stop_after):
    with capture_output():
        ip.run_line_magic("dtf_cluster", "worker=2")
    with pytest.raises(UsageError, match=r"job 'worker' has tasks \[0, 1\], not \[5\]"):
        ip.run_cell_magic("dtf_worker", "--tasks 0,5", "1")


@pytest.mark.slow
def test_dtf_worker_raises_the_remote_error(ip, stop_after):
    with capture_output():
        ip.run_line_magic("dtf_cluster", "worker=1")
    with pytest.raises(KeyError, match=r"\[worker:0\] KeyError: 'missing'"):
        ip.run_cell_magic("dtf_worker", "", "{}['missing']")


@pytest.mark.slow
def test_dtf_worker_timeout(ip, stop_after):
    with capture_output():
        ip.run_line_magic("dtf_cluster", "worker=1")
    with pytest.raises(TimeoutError, match=r"worker:0 still running after 0\.3 s"):
        ip.run_cell_magic("dtf_worker", "--timeout 0.3", "import time\ntime.sleep(20)")


def _examples(magic_name, kind):
    """The example lines of a magic's docstring (what `%dtf_cluster?` shows)."""
    doc = InteractiveShell.instance().magics_manager.magics[kind][magic_name].__doc__
    block = doc.split("Example", 1)[1].split("::", 1)[1].split("\n\n")[1]  # the indented block
    return [line[4:] for line in block.splitlines()]


@pytest.mark.slow
def test_every_dtf_cluster_help_example_runs_as_pasted(ip, stop_after):
    examples = _examples("dtf_cluster", "line")
    assert len(examples) == 6 and any("#" in e for e in examples)
    ports = iter(samehost.free_ports(2))
    with capture_output():
        for line in examples:
            line = re.sub(r"localhost:\d+", lambda _: f"localhost:{next(ports)}", line)
            result = ip.run_cell(line)
            assert result.success, f"{line!r}: {result.error_in_exec!r}"
    # The last two stop the cluster, then restart it (`restart` brings back the stopped `dtf`).
    assert cluster_lib.current() is ip.user_ns["dtf"] and ip.user_ns["dtf"].running


@pytest.mark.slow
def test_the_dtf_worker_help_example_runs_as_pasted(ip, stop_after):
    example = "\n".join(_examples("dtf_worker", "cell"))
    assert example.startswith("%%dtf_worker")
    with capture_output() as out:
        ip.run_line_magic("dtf_cluster", "ps=1 worker=2")
        result = ip.run_cell(example)
    assert result.success, result.error_in_exec
    assert "[worker:0] task 0 computed 4.0 with w0 on /job:ps/task:0" in out.stdout
    assert "[worker:1] task 1 computed 8.0 with w1 on /job:ps/task:0" in out.stdout


@pytest.mark.slow
def test_quoted_spec_json_starts_the_cluster(ip, stop_after):
    port = samehost.free_ports(1)[0]
    with capture_output():
        ip.run_line_magic("dtf_cluster", f"""--spec '{{"solo": ["localhost:{port}"]}}'""")
    cluster = ip.user_ns["dtf"]
    assert cluster.cluster_spec.as_dict() == {"solo": [f"localhost:{port}"]}
    assert cluster.running


# Loaded on first use only: the notebook layer, and the libraries some ops need (ml_dtypes alone
# took 0.7 s: every task process of a cluster paid it until bfloat16 was made lazily).
NOT_AT_IMPORT = (
    "IPython",
    "ipywidgets",
    "nbdist.notebook.magics",
    "ml_dtypes",
    "scipy",
    "tensorboardX",
    "PIL",
    "matplotlib",
    "tensorflow",
)


def test_import_nbdist_does_not_load_ipython_or_the_notebook_layer_or_heavy_libraries():
    import subprocess

    from procs import REPO

    code = f"import sys, nbdist; print(sorted(m for m in {NOT_AT_IMPORT!r} if m in sys.modules))"
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": REPO, "PATH": "/usr/bin:/bin"},
    ).stdout
    assert out.strip() == "[]"


def test_load_ext_works_through_the_lazy_package_attribute():
    import nbdist
    from nbdist.notebook import magics

    assert nbdist.load_ipython_extension is magics.load_ipython_extension
