"""TF-style test files (tests/tf_style/*_test.py) pass under nbdist and under real TensorFlow.

Each file is a `tf.test.TestCase` module run as TF's own tests are, ``python file.py``; the
import line switches on ``NBDIST_AS_TF=tensorflow``. Both runs must pass, so nbdist's
`tf.test`, servers and sessions behave as TF's do on what these files check.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

TF_STYLE = Path(__file__).parent / "tf_style"
FILES = sorted(p.name for p in TF_STYLE.glob("*_test.py"))
# Real TF takes most of this to import on a loaded machine; nbdist files take seconds.
TIMEOUT_S = 240


def _run(name, as_tf):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    env.pop("NBDIST_AS_TF", None)
    if as_tf:
        env["NBDIST_AS_TF"] = "tensorflow"
    out = subprocess.run(
        [sys.executable, str(TF_STYLE / name)],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        env=env,
        cwd=TF_STYLE,
        check=False,
    )
    return out.returncode, out.stdout + out.stderr


@pytest.mark.slow
@pytest.mark.parametrize("name", FILES)
def test_tf_style_file_passes_under_nbdist(name):
    code, output = _run(name, as_tf=False)
    assert code == 0, output[-4000:]
    assert "OK" in output


@pytest.mark.slow
@pytest.mark.tf
@pytest.mark.parametrize("name", FILES)
def test_the_same_file_passes_under_tensorflow(name):
    pytest.importorskip("tensorflow")
    pytest.importorskip("portpicker")  # TF's create_local_cluster needs it
    code, output = _run(name, as_tf=True)
    assert code == 0, output[-4000:]
