"""docs/make_pictures.py makes the README's pictures from a real local cluster.

The README's own check (every picture it shows exists and is small) is in test_readme.py.
"""

import importlib.util
import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from procs import REPO

SCRIPT = Path(REPO) / "docs" / "make_pictures.py"
needs_dot = pytest.mark.skipif(shutil.which("dot") is None, reason="needs Graphviz's dot (apt graphviz)")


def load_script():
    spec = importlib.util.spec_from_file_location("make_pictures", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def png_size(data):
    """``(width, height)`` of PNG bytes (from the IHDR chunk)."""
    assert data.startswith(b"\x89PNG\r\n\x1a\n") and data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


@needs_dot
def test_the_architecture_picture_shows_every_task_with_both_services():
    pictures = load_script()
    source = pictures.architecture_dot()
    for task in ("/job:ps/task:0", "/job:worker/task:0", "/job:worker/task:1"):
        assert f'label="{task}  localhost:' in source, task
    assert source.count('"master service\\nplace') == 3 and source.count('"worker service\\nruns') == 3
    assert "RunStep" in source and "RunGraph" in source and "_Send/_Recv" in source
    width, height = png_size(pictures.dot_to_png(source, pictures.GRAPH_DPI))
    assert width > 800 and height > 300


@pytest.mark.slow
@needs_dot
def test_the_script_trains_on_a_real_cluster_and_writes_small_pngs(tmp_path):
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--out", str(tmp_path)],
        env={**os.environ, "PYTHONPATH": REPO},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr and "Exception ignored" not in proc.stderr, proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(load_script().PICTURES)
    for path in tmp_path.iterdir():
        data = path.read_bytes()
        width, height = png_size(data)
        assert width > 500 and height > 250, (path.name, width, height)
        assert len(data) < 200 * 1024, f"{path.name}: {len(data) // 1024} KB"
        assert f"{path}  " in proc.stdout


@pytest.mark.slow
@needs_dot
def test_the_graph_picture_is_a_traced_step_across_the_cluster():
    dashboard_png, graph_dot = load_script().run_cluster()
    png_size(dashboard_png)
    assert "Placed &amp; partitioned: 2 tasks" in graph_dot  # (the caption is an HTML-like label)
    assert "/job:ps/task:0" in graph_dot and "/job:worker/task:0" in graph_dot
    assert graph_dot.count('class="nbdist-transfer"') >= 4  # the variables' reads and the gradients
