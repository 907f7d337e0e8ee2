"""`tf.app.flags` / `tf.flags`, `tf.app.run` and `tf.logging`, as TF 1.x scripts use them."""

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

import nbdist as tf

SCRIPT = str(Path(__file__).parent / "scripts" / "flags_script.py")
ARGS = [
    "--job_name=ps",
    "--task_index",
    "1",
    "--ps_hosts=localhost:2222,localhost:2223",
    "--worker_hosts",
    "localhost:2224",
    "--nosync_replicas",
    "--learning_rate=0.5",
    "--layers=3,2",
    "--unknown=7",
    "extra",
]


def _run(*extra):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    out = subprocess.run(
        [sys.executable, SCRIPT, *extra, *ARGS],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1]), out.stderr


def test_a_flags_driven_script_parses_its_command_line():
    parsed, _ = _run()
    assert parsed == {
        "job": "ps",
        "task": 1,
        "ps": ["localhost:2222", "localhost:2223"],
        "workers": ["localhost:2224"],
        "lr": 0.5,
        "sync": False,
        "layers": ["3", "2"],
        "argv": ["--unknown=7", "extra"],  # unknown flags are left to the program, as in TF
    }


@pytest.mark.tf
def test_the_same_script_parses_exactly_as_under_tensorflow():
    pytest.importorskip("tensorflow")
    assert _run()[0] == _run("--tf")[0]


def test_flags_are_parsed_on_first_read():
    values = tf.flags.FlagValues()
    tf.flags.DEFINE_integer("steps", 10, "steps", flag_values=values)
    wrapper = type(tf.flags.FLAGS)(values)
    saved = sys.argv
    sys.argv = ["prog", "--steps=25", "--other=1"]
    try:
        assert wrapper.steps == 25  # parsed from sys.argv now, the unknown flag tolerated
    finally:
        sys.argv = saved


def test_app_run_passes_the_remaining_argv_and_exits_with_mains_result():
    seen = []

    def main(argv):
        seen.append(argv)
        return 3

    with pytest.raises(SystemExit) as e:
        tf.app.run(main=main, argv=["prog", "--undefined_flag=1", "positional"])
    assert e.value.code == 3
    assert seen == [["prog", "--undefined_flag=1", "positional"]]


def test_logging_levels_and_verbosity(caplog):
    logger = tf.logging.get_logger()
    old = logger.level
    logger.propagate = True  # so caplog sees it
    try:
        tf.logging.set_verbosity(tf.logging.INFO)
        assert tf.logging.get_verbosity() == logging.INFO
        with caplog.at_level(logging.INFO, logger="nbdist"):
            tf.logging.info("step %d", 5)
            tf.logging.debug("hidden")
            for i in range(5):
                tf.logging.log_every_n(tf.logging.INFO, "every %d", 2, i)
            for i in range(5):
                tf.logging.log_first_n(tf.logging.WARN, "first %d", 2, i)
        messages = [r.getMessage() for r in caplog.records if r.name == "nbdist"]
        assert messages == ["step 5", "every 0", "every 2", "every 4", "first 0", "first 1"]
        assert (tf.logging.DEBUG, tf.logging.INFO, tf.logging.WARN, tf.logging.ERROR, tf.logging.FATAL) == (
            10,
            20,
            30,
            40,
            50,
        )
    finally:
        logger.setLevel(old)
