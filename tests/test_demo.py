"""The README's main job: `python -m nbdist.demo` trains across a real local cluster."""

import io

import pytest

from nbdist import demo

pytestmark = pytest.mark.slow


def test_demo_trains_across_the_cluster_and_shows_progress():
    out = io.StringIO()
    assert demo.main(["--steps", "100"], out=out) == 0
    text = out.getvalue()
    assert "cluster ready in" in text
    progress = [line for line in text.splitlines() if line.startswith("step ")]
    assert len(progress) >= 4 and "worker:1" in progress[-1] and "steps/s" in progress[-1]
    assert "/job:ps/replica:0/task:0/device:CPU:0:" in text and "sent" in text
    assert "cluster stopped" in text
