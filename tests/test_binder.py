"""`binder/` alone is enough to run every notebook: built as Binder (repo2docker) builds it.

Once per session a fixture makes what Binder would: a copy of the repository's tracked files
(Binder's clone), a fresh venv of the Python that ``binder/runtime.txt`` names, then
``pip install -r binder/requirements.txt`` and ``binder/postBuild`` run from the copy's root
with that venv first on PATH. ``binder/apt.txt``'s packages must be installed on this machine
(Binder installs them; this test does not). Nothing else is installed, and nothing of this
checkout is on the kernels' path: each notebook then runs in that venv's own kernel (nbclient
inside the venv), one test per notebook, and must show no error, within a bound.

Packages come from the package registry through pip's usual configuration and cache.
"""

import json
import os
import re
import shutil
import signal
import subprocess
import textwrap
from pathlib import Path

import nbformat
import pytest

from procs import REPO
from test_notebooks import NOTEBOOKS, errors_of

BINDER = Path(REPO) / "binder"
BUILD_STEP_TIMEOUT_S = 900  # one pip step on 2 loaded cores (about 2 minutes unloaded)
NOTEBOOK_TIMEOUT_S = 60  # as tests/test_notebooks.py: every notebook runs in under a minute
RUNNER = textwrap.dedent("""\
    import sys, time
    import nbformat
    from nbclient import NotebookClient

    import shutil
    from jupyter_client.kernelspec import KernelSpecManager

    src, out, cwd = sys.argv[1:4]
    nb = nbformat.read(src, as_version=4)
    kernel = KernelSpecManager().get_kernel_spec("python3").argv[0]
    started = time.monotonic()
    try:
        NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": cwd}}).execute()
    finally:
        nb.metadata["binder_run"] = {"elapsed_s": time.monotonic() - started, "kernel": shutil.which(kernel)}
        nbformat.write(nb, out)
""")


def _runtime_python():
    """The interpreter ``runtime.txt`` names (``python-3.11`` -> ``python3.11``), or skip."""
    text = (BINDER / "runtime.txt").read_text().strip()
    match = re.fullmatch(r"python-(\d+\.\d+)", text)
    assert match, f"binder/runtime.txt must read python-X.Y, got {text!r}"
    python = shutil.which(f"python{match.group(1)}")
    if python is None:
        pytest.skip(f"binder/runtime.txt asks for Python {match.group(1)}, not installed here")
    return python


def _missing_apt_packages():
    packages = [line.strip() for line in (BINDER / "apt.txt").read_text().splitlines() if line.strip()]
    if shutil.which("dpkg-query") is None:
        pytest.skip("binder/apt.txt holds Debian packages; this machine has no dpkg-query to check them")
    missing = []
    for package in packages:
        status = subprocess.run(
            ["dpkg-query", "-W", "-f=${Status}", package], capture_output=True, text=True, check=False
        )
        if "install ok installed" not in status.stdout:
            missing.append(package)
    return missing


def _clean_env(venv):
    """The environment Binder's build and kernels see: the venv first on PATH, no PYTHONPATH,
    no cluster key, and Jupyter's dirs of their own (no kernelspec of this machine's user)."""
    env = {
        k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "NBDIST_CLUSTER_KEY")
    }
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["VIRTUAL_ENV"] = str(venv)
    for var, sub in [
        ("JUPYTER_CONFIG_DIR", "cfg"),
        ("JUPYTER_DATA_DIR", "data"),
        ("JUPYTER_RUNTIME_DIR", "run"),
    ]:
        env[var] = str(venv.parent / "jupyter" / sub)
    env.pop("JUPYTER_PATH", None)
    return env


def _run(argv, cwd, env, what):
    try:
        done = subprocess.run(
            argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=BUILD_STEP_TIMEOUT_S, check=False
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"{what} took more than {BUILD_STEP_TIMEOUT_S} s")
    assert done.returncode == 0, (
        f"{what} failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    )


@pytest.fixture(scope="session")
def binder_env(tmp_path_factory):
    """``(repo copy, env)`` of a venv built from ``binder/`` alone, as Binder would."""
    missing = _missing_apt_packages()
    assert missing == [], f"binder/apt.txt's {missing} are not installed: apt-get install {' '.join(missing)}"
    python = _runtime_python()
    root = tmp_path_factory.mktemp("binder")
    repo, venv = root / "repo", root / "venv"
    tracked = subprocess.run(
        ["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True, timeout=60
    ).stdout.split(b"\0")
    for name in filter(None, (t.decode() for t in tracked)):
        if (Path(REPO) / name).is_file():  # tracked files deleted in the working tree are not cloned
            (repo / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(Path(REPO) / name, repo / name)
    env = _clean_env(venv)
    _run([python, "-m", "venv", str(venv)], root, env, "python -m venv")
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q"]
    _run([*pip, "-r", "binder/requirements.txt"], repo, env, "pip install -r binder/requirements.txt")
    _run(["bash", "binder/postBuild"], repo, env, "binder/postBuild")
    probe = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import json, nbdist; print(json.dumps(nbdist.__file__))"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert Path(json.loads(probe.stdout)).is_relative_to(repo), f"the venv imports nbdist from {probe.stdout}"
    return repo, env


def _run_bounded(argv, cwd, env, timeout_s, what):
    """Runs `argv` in its own process group; past `timeout_s` kills the group (the runner, its
    kernel and the kernel's cluster) and fails."""
    proc = subprocess.Popen(
        argv,
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        stdout, stderr = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        pytest.fail(f"{what} did not finish in {timeout_s} s")
    return subprocess.CompletedProcess(argv, proc.returncode, stdout, stderr)


def test_binder_files_are_all_there():
    assert {p.name for p in BINDER.iterdir()} >= {"requirements.txt", "postBuild", "apt.txt", "runtime.txt"}
    assert os.access(BINDER / "postBuild", os.X_OK), "binder/postBuild must be executable"


@pytest.mark.slow
@pytest.mark.timeout(4 * BUILD_STEP_TIMEOUT_S + 3 * NOTEBOOK_TIMEOUT_S)  # the first one builds the venv
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs_in_the_binder_environment(path, binder_env, tmp_path):
    repo, env = binder_env
    venv = Path(env["VIRTUAL_ENV"])
    runner = tmp_path / "run_notebook.py"
    runner.write_text(RUNNER)
    notebook, out = repo / "notebooks" / path.name, tmp_path / path.name
    argv = [str(venv / "bin" / "python"), str(runner), str(notebook), str(out), str(notebook.parent)]
    done = _run_bounded(argv, tmp_path, env, 3 * NOTEBOOK_TIMEOUT_S, f"{path.name} in the Binder venv")
    assert out.exists(), f"{path.name} was not run:\n{done.stderr[-3000:]}"
    nb = nbformat.read(out, as_version=4)
    assert errors_of(nb) == [], done.stderr[-3000:]
    assert done.returncode == 0, done.stderr[-3000:]
    run = nb.metadata["binder_run"]
    assert Path(run["kernel"]).parent == venv / "bin", (
        f"the kernel ran {run['kernel']}, not the Binder venv's"
    )
    assert run["elapsed_s"] < NOTEBOOK_TIMEOUT_S
