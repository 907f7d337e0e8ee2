"""README.md's code blocks work as written: a newcomer pastes them into a notebook.

Every ``python`` block is pasted, in order, as the cells of one notebook and executed in a
real kernel (nbclient), which must show no error. Every other block (shell commands) is
listed in `LEFT_OUT` with the reason it is not run here; a block that is in neither fails
the test, so a new README block is either run or explicitly left out.
"""

import re
from pathlib import Path

import nbformat
import pytest

from browser import execute_notebook
from procs import REPO
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
}
_FENCE = re.compile(r"^```([\w+-]*)[^\n]*\n(.*?)^```", re.MULTILINE | re.DOTALL)


def readme_blocks():
    """``[(language, source)]`` of README.md's fenced code blocks, in order."""
    return [(m.group(1).lower(), m.group(2)) for m in _FENCE.finditer(README.read_text())]


def test_every_readme_block_is_run_or_left_out_with_a_reason():
    blocks = readme_blocks()
    assert any(lang in RUN_LANGUAGES for lang, _ in blocks)
    others = [src.splitlines()[0] for lang, src in blocks if lang not in RUN_LANGUAGES]
    unlisted = [first for first in others if first not in LEFT_OUT]
    assert unlisted == [], f"README blocks neither run nor listed in LEFT_OUT (with a reason): {unlisted}"
    stale = [first for first in LEFT_OUT if first not in others]
    assert stale == [], f"LEFT_OUT names README blocks that are gone: {stale}"


@pytest.mark.slow
def test_readme_python_blocks_run_pasted_into_one_notebook(tmp_path):
    sources = [src for lang, src in readme_blocks() if lang in RUN_LANGUAGES]
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
