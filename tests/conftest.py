"""Fixtures shared by the test files.

Helpers that test files import live beside this file: `local_run.py` (one local run of a
fetch), `gradcheck.py`, `procs.py` (server processes), `browser.py` (Jupyter front ends,
headless Chromium, the nbclient runner).

Graphs: `graph` (a new graph, the default of the test's thread inside the test) and
`fresh_graph` (the global default graph replaced, so threads the test starts see it too).
Files whose every test needs one say ``pytestmark = pytest.mark.usefixtures("graph")``.

Server processes (`procs.ServerProcs`, killed by PID): `servers` for one test and
`module_servers` for all the tests of a file; the jobs come from a ``servers(**jobs)`` mark,
e.g. ``@pytest.mark.servers(ps=1, worker=1)`` on the test or in the file's ``pytestmark``
(`servers` also takes them from indirect parametrization). `in_process_servers`: a ps and a
worker `Server` in the test's own process.
"""

import os

import pytest

# Under TF >= 2.16, tf.compat.v1.layers (the tf.layers parity tests) needs Keras 2 (the tf-keras
# package of the [tf] extra); TF reads this once, when it is first imported.
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
# TF's CPU kernels refuse a dilated convolution ("Current CPU implementations do not yet support
# dilation rates larger than 1") unless oneDNN runs them, and TF turns oneDNN on by itself only on
# CPUs with AVX-512 VNNI, BF16 or AMX: on an AVX2 machine the dilated parity tests (and one
# BatchMatMul message) had nothing to compare with. nbdist's kernels are the same either way.
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "servers(**jobs): the tasks per job of the `servers` / `module_servers` fixtures' cluster, "
        "e.g. servers(ps=1, worker=1)",
    )


@pytest.fixture(scope="session")
def tf1_graph_mode():
    """Real TensorFlow's TF 1.x API in graph mode with ref variables (``VariableV2``, as nbdist
    has), for parity tests; the test is skipped where `tensorflow` is not installed."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    tensorflow = pytest.importorskip("tensorflow")
    tensorflow.compat.v1.disable_v2_behavior()
    return tensorflow.compat.v1


@pytest.fixture(scope="session")
def tf1(tf1_graph_mode):
    """`tf1_graph_mode` under the name parity tests give TF's module (``tf1.Graph()``)."""
    return tf1_graph_mode


@pytest.fixture
def graph():
    """A new graph, the default graph of the test's thread for the length of the test."""
    import nbdist as tf

    with tf.Graph().as_default() as g:
        yield g


@pytest.fixture
def fresh_graph():
    """A new, empty global default graph for the test (threads the test starts see it too);
    replaced again afterwards. Files whose every test needs it say
    ``pytestmark = pytest.mark.usefixtures("fresh_graph")``."""
    import nbdist as tf

    tf.reset_default_graph()
    yield tf.get_default_graph()
    tf.reset_default_graph()


def _server_procs(request):
    """`ServerProcs` for the jobs of ``request.param`` (indirect parametrization) or, without
    one, of the ``servers(**jobs)`` mark nearest the requesting node."""
    from procs import ServerProcs, cluster_dict

    jobs = getattr(request, "param", None)
    if jobs is None:
        mark = request.node.get_closest_marker("servers")
        if mark is None:
            pytest.fail(f"{request.fixturename} needs a servers(**jobs) mark, e.g. servers(ps=1, worker=1)")
        jobs = mark.kwargs
    return ServerProcs(cluster_dict(**jobs))


@pytest.fixture
def servers(request):
    """Server processes for one test (`procs.ServerProcs`), stopped by PID after it."""
    procs = _server_procs(request)
    yield procs
    procs.stop()


@pytest.fixture(scope="module")
def module_servers(request):
    """Server processes shared by a file's tests (jobs from its ``pytestmark``), stopped by PID
    after its last test."""
    procs = _server_procs(request)
    yield procs
    procs.stop()


@pytest.fixture
def in_process_servers():
    """``{"ps": Server, "worker": Server}``: one task each, in this process, on 127.0.0.1;
    stopped after the test."""
    from nbdist.runtime.server_lib import Server
    from procs import free_port

    spec = {"ps": [f"localhost:{free_port()}"], "worker": [f"localhost:{free_port()}"]}
    started = {job: Server(spec, job_name=job, task_index=0) for job in spec}
    yield started
    for s in started.values():
        s.stop()


@pytest.fixture(scope="module")
def browser():
    """Headless Chromium (tests/browser.py's `chromium`), one per test file."""
    from browser import chromium

    with chromium() as b:
        yield b
