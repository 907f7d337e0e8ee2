"""Fixtures shared by the test files.

Helpers that test files import live beside this file: `local_run.py` (one local run of a
fetch), `gradcheck.py`, `procs.py` (server processes), `browser.py` (Jupyter front ends,
headless Chromium, the nbclient runner).
"""

import os

import pytest


@pytest.fixture(scope="session")
def tf1_graph_mode():
    """Real TensorFlow's TF 1.x API in graph mode with ref variables (``VariableV2``, as nbdist
    has), for parity tests; the test is skipped where `tensorflow` is not installed."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    tensorflow = pytest.importorskip("tensorflow")
    tensorflow.compat.v1.disable_v2_behavior()
    return tensorflow.compat.v1


@pytest.fixture
def fresh_graph():
    """A new, empty global default graph for the test (threads the test starts see it too);
    replaced again afterwards. Files whose every test needs it say
    ``pytestmark = pytest.mark.usefixtures("fresh_graph")``."""
    import nbdist as tf

    tf.reset_default_graph()
    yield tf.get_default_graph()
    tf.reset_default_graph()


@pytest.fixture(scope="module")
def browser():
    """Headless Chromium (tests/browser.py's `chromium`), one per test file."""
    from browser import chromium

    with chromium() as b:
        yield b
