"""README.md's code blocks work as written: a newcomer pastes them into a notebook.

Every ``python`` block is pasted, in order, as the cells of one notebook and executed in a
real kernel (nbclient), which must show no error. Every other block (shell commands, and
the several-machines client that needs other hosts) is listed in `LEFT_OUT` with the reason
it is not run there; a block that is in neither fails the test, so a new README block is
either run or explicitly left out. The several-machines recipe runs here too, with
127.0.0.1 for its hosts; and every picture the README shows exists and is small.
"""

import json
import os
import re
import select
import shlex
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from browser import execute_notebook
from nbdist.runtime.net import security
from procs import REPO, free_port, wait_gone
from test_notebooks import errors_of, outputs_text

README = Path(REPO) / "README.md"
RUN_LANGUAGES = ("python", "ipython")
# First line of each block that is not run -> why.
LEFT_OUT = {
    "python3 -m venv .venv && .venv/bin/pip install -e . && .venv/bin/nbdist demo": (
        "installs nbdist into a new venv (the Binder test builds one); the demo itself is tests/test_demo.py"
    ),
    ".venv/bin/pip install -e '.[notebook]' && .venv/bin/jupyter lab notebooks/": (
        "installs the [notebook] extra and starts JupyterLab (the notebooks run in "
        "tests/test_notebooks.py, in JupyterLab in tests/test_browser_widgets.py)"
    ),
    "bash .ci/run": "runs CI: apt installs, a new venv and the whole suite",
    "nbdist keys new ~/.nbdist/mycluster   # cluster.key (signing) and curve.key_secret (CURVE), mode 0600": (
        "starts servers on other hosts (run below with 127.0.0.1 for the hosts)"
    ),
    "# client.py, on any host that reaches the cluster": (
        "needs the servers on other hosts (run below with 127.0.0.1 for the hosts)"
    ),
}
MAX_PICTURE_BYTES = 200 * 1024
_FENCE = re.compile(r"^```([\w+-]*)[^\n]*\n(.*?)^```", re.MULTILINE | re.DOTALL)


def readme_blocks():
    """``[(language, source)]`` of README.md's fenced code blocks, in order."""
    return [(m.group(1).lower(), m.group(2)) for m in _FENCE.finditer(README.read_text())]


def is_run(lang, src):
    """Whether a README block is pasted into the notebook (a Python block not left out)."""
    return lang in RUN_LANGUAGES and src.splitlines()[0] not in LEFT_OUT


def readme_block(first_line):
    """The source of the README block that starts with `first_line`."""
    (src,) = [src for _, src in readme_blocks() if src.splitlines()[0] == first_line]
    return src


def test_every_readme_block_is_run_or_left_out_with_a_reason():
    blocks = readme_blocks()
    assert any(is_run(lang, src) for lang, src in blocks)
    others = [src.splitlines()[0] for lang, src in blocks if not is_run(lang, src)]
    unlisted = [first for first in others if first not in LEFT_OUT]
    assert unlisted == [], f"README blocks neither run nor listed in LEFT_OUT (with a reason): {unlisted}"
    stale = [first for first in LEFT_OUT if first not in others]
    assert stale == [], f"LEFT_OUT names README blocks that are gone: {stale}"


@pytest.mark.slow
def test_readme_python_blocks_run_pasted_into_one_notebook(tmp_path):
    sources = [src for lang, src in readme_blocks() if is_run(lang, src)]
    cells = [nbformat.v4.new_code_cell(src) for src in sources]
    cells.append(nbformat.v4.new_code_cell("%dtf_cluster stop"))  # the test's clean-up, not the README's
    nb = nbformat.v4.new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    execute_notebook(nb, tmp_path)
    assert errors_of(nb) == []
    assert "[[6.]]" in outputs_text(nb)  # what the first block says it prints


def test_readme_lists_every_notebook():
    text = README.read_text()
    missing = [
        p.stem for p in sorted((Path(REPO) / "notebooks").glob("*.ipynb")) if f"`{p.stem}`" not in text
    ]
    assert missing == [], f"README.md does not list the notebooks {missing}"


def test_the_binder_badge_opens_a_notebook_that_exists():
    (path,) = re.findall(r"https://mybinder\.org/v2/gh/[^)\s]*urlpath=lab/tree/([^)\s]+)", README.read_text())
    assert (Path(REPO) / path).is_file(), path


def test_every_picture_the_readme_shows_exists_and_is_small():
    shown = re.findall(r"!\[[^\]]*\]\(([^)\s]+)\)", README.read_text())
    pictures = [p for p in shown if "://" not in p]  # (the Binder badge is Binder's)
    assert {"docs/img/dashboard.png", "docs/img/partitioned_graph.png", "docs/img/architecture.png"} <= set(
        pictures
    )
    for path in pictures:
        data = (Path(REPO) / path).read_bytes()
        assert data.startswith(b"\x89PNG\r\n\x1a\n"), f"{path} is not a PNG"
        assert len(data) < MAX_PICTURE_BYTES, f"{path} is {len(data) // 1024} KB; keep README pictures small"


@pytest.mark.slow
def test_servers_on_several_machines_recipe_runs_with_local_addresses(tmp_path):
    """The README's several-machines section, as written, with 127.0.0.1 for host0..host2."""
    shell = readme_block(next(k for k in LEFT_OUT if k.startswith("nbdist keys new")))
    client = readme_block("# client.py, on any host that reaches the cluster")
    hosts = {h: f"127.0.0.1:{free_port()}" for h in sorted(set(re.findall(r"host\d:2222", shell + client)))}

    def local(text):
        return re.sub(r"host\d:2222", lambda m: hosts[m.group(0)], text)

    cluster = json.loads(local(re.search(r"^CLUSTER='(.*)'$", shell, re.M).group(1)))
    keys = security.new_cluster_keys(tmp_path / "mycluster")  # what `nbdist keys new` writes
    env = {k: v for k, v in os.environ.items() if not k.startswith("NBDIST_")}
    env.update(NBDIST_CLUSTER_KEY_FILE=keys["signing"], PYTHONPATH=REPO)
    if "curve" in keys:
        env["NBDIST_CURVE_KEY_FILE"] = keys["curve"]
    commands = [
        shlex.split(line.split("#")[0]) for line in shell.splitlines() if line.startswith("nbdist server ")
    ]
    assert len(commands) == 3
    servers = []
    try:
        for argv in commands:
            argv = [
                sys.executable,
                "-m",
                "nbdist",
                *(json.dumps(cluster) if a == "$CLUSTER" else a for a in argv[1:]),
            ]
            servers.append(
                subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            )
        for proc in servers:
            assert select.select([proc.stdout], [], [], 60)[0], "a server did not start within 60 s"
            line = proc.stdout.readline()
            assert line.startswith("nbdist-server ready "), (line, proc.stderr.read() if proc.poll() else "")
        ran = subprocess.run(
            [sys.executable, "-c", local(client)],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert ran.returncode == 0, ran.stderr
        assert ran.stdout.strip() == "[1. 1.]"
    finally:
        for proc in servers:
            proc.terminate()
        for proc in servers:
            try:
                proc.communicate(timeout=10)  # waits, and closes its pipes
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.communicate(timeout=10)
    assert [p.returncode for p in servers] == [0, 0, 0]  # SIGTERM stops a server cleanly
    assert wait_gone([p.pid for p in servers], 5.0)
