"""Fixtures shared by the test files."""

import os

import pytest

from procs import REPO


@pytest.fixture
def kernel_env(monkeypatch):
    """Kernels (and their clusters) started by the test import this checkout of nbdist."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in (REPO, os.environ.get("PYTHONPATH")) if p))
    monkeypatch.delenv("NBDIST_CLUSTER_KEY", raising=False)


@pytest.fixture(scope="session")
def tf1_graph_mode():
    """Real TensorFlow's TF 1.x API in graph mode with ref variables (``VariableV2``, as nbdist
    has), for parity tests; the test is skipped where `tensorflow` is not installed."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    tensorflow = pytest.importorskip("tensorflow")
    tensorflow.compat.v1.disable_v2_behavior()
    return tensorflow.compat.v1
