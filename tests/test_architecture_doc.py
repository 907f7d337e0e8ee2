"""docs/architecture.md shows what the code has: every service's RPC table, the worker stub,
every resource kind and where task identity lives (issue 8's documentation check).

The lists come from the code, so a new request type or resource kind fails here until the
document names it.
"""

from pathlib import Path

import pytest

import nbdist as tf  # noqa: F401 - loads every op module, so every resource kind is declared
from nbdist.graph import device
from nbdist.in_task.exec_service import ExecService
from nbdist.ops import registry
from nbdist.runtime import worker
from nbdist.runtime.server_lib import Server
from procs import REPO, free_port

DOC = (Path(REPO) / "docs" / "architecture.md").read_text()


@pytest.fixture(scope="module")
def server():
    return Server({"local": [f"localhost:{free_port()}"]}, start=False)  # never binds: no stop needed


def _section(title):
    start = DOC.index(title)
    end = DOC.find("\n#", start + len(title))
    return DOC[start : end if end > 0 else None]


def test_every_rpc_of_every_service_is_in_the_services_table(server):
    section = _section("**Services and their RPC tables.**")
    services = {
        "MasterService": server.master.rpc_table(),
        "WorkerService": server.worker.rpc_table(),
        "the `Server` itself": server.rpc_table(),
        "ExecService": ExecService(server).rpc_table(),
    }
    for name, table in services.items():
        assert name in section, f"the services table does not name {name}"
        missing = [rpc for rpc in table if f"`{rpc}`" not in section]
        assert not missing, f"{name}'s {missing} are not in docs/architecture.md's services table"


def test_the_worker_stub_is_shown_with_its_methods():
    section = _section("**The worker stub.**")
    for stub in (worker.LocalWorker, worker.RemoteWorker):
        assert f"`{stub.__name__}`" in section
        methods = [m for m in vars(stub) if not m.startswith("_")]
        assert methods and all(f"stub.{m}(" in section for m in methods), methods


def test_every_resource_kind_is_in_the_kinds_table():
    section = _section("**Resource kinds.**")
    # nbdist's own kinds (other tests in this process may have declared a toy one).
    kinds = [
        k
        for k in registry.resource_kinds()
        if registry.resource_kind_of(k).factory.__module__.startswith("nbdist.")
    ]
    assert {"variable", "queue", "accumulator"} <= set(kinds), kinds
    for kind in kinds:
        assert f"| `{kind}` |" in section, f"resource kind {kind!r} is not in the kinds table"
    assert "ResourceManager.get_or_create" in section and "tests/test_resource_kinds.py" in section


def test_task_identity_is_placed_in_graph_device_with_every_spelling():
    section = _section("**Task identity**")
    assert "`graph/device.py`" in section and "`Task(job, index)`" in section
    spellings = [p for p, v in vars(device.Task).items() if isinstance(v, property)]
    assert spellings and all(f"`.{p}`" in section for p in spellings), spellings
    assert "`Task.parse(device)`" in section
