"""The layer rule, read from the source: every module of nbdist/ imports only its own or
earlier layers, reads no other module's private names, and graph.py / graph_def.py do not
import each other both ways.

Imports are read with `ast` from every ``.py`` file, the ones inside functions (lazy
imports) included; imports made from a string (``importlib.import_module(name)``, the
facade's lazy ``tf.X`` names) are not visible and not checked. The order is
docs/architecture.md's (and /work/shared/STYLE.md's module map):

    base (errors, platform, _facade) -> graph -> ops -> runtime -> in_task -> train
        -> tf facade (nbdist, nbdist.nn, nbdist.train, nbdist.summary, and
           nbdist.server, the task process's entry point) -> notebook -> programs (demo, k8s, __main__)
"""

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

import nbdist

PACKAGE = Path(nbdist.__file__).resolve().parent

# Layer of each module, by the longest dotted prefix that is listed. Rank = index in LAYERS.
LAYERS = ["base", "graph", "ops", "runtime", "in_task", "train", "facade", "notebook", "programs"]
LAYER_OF = {
    "nbdist.errors": "base",  # OpError and its subclasses: importable from anywhere
    "nbdist.platform": "base",  # tf.app / tf.flags / tf.logging: absl and the stdlib only
    # tf.test: TestCase's sessions and create_local_cluster's servers stand on the runtime.
    "nbdist.platform.test": "train",
    "nbdist.platform.test_util": "train",
    "nbdist.platform.benchmark": "train",
    "nbdist.platform.graph_def_diff": "train",  # tf.test.assert_equal_graph_def: reads GraphDefs
    "nbdist.platform.test_helpers": "train",  # tf.test.benchmark_config: a runtime ConfigProto
    "nbdist._facade": "base",  # the facades' helpers (export_all, unsupported); stdlib only
    "nbdist.file_errors": "base",  # errno -> TF's error class (apart from tf.errors' names)
    "nbdist.graph": "graph",
    "nbdist.ops": "ops",
    "nbdist.runtime": "runtime",
    "nbdist.in_task": "in_task",
    "nbdist.train": "train",
    "nbdist.summary": "train",  # tf.summary (lands with the summary work): graph and ops only
    # Graduation to real TensorFlow: reads graphs, the op registry, sessions and checkpoints;
    # the notebook's views read TF's protos through it.
    "nbdist.export": "train",
    "nbdist.notebook": "notebook",
    # The `tf` namespaces: re-exports of every layer below the notebook (whose names the
    # facade loads lazily, from strings).
    "nbdist": "facade",
    "nbdist.nn": "facade",
    "nbdist.layers": "facade",  # tf.layers: re-exports of ops/layers_*.py
    "nbdist.train.__init__": "facade",
    "nbdist.summary.__init__": "facade",
    # ``python -m nbdist.server``: one task's process. Its cells see the facade as `tf`; it
    # must not load the notebook (the notebook is the client side).
    "nbdist.server": "facade",
    "nbdist.demo": "programs",
    "nbdist.k8s": "programs",  # `nbdist k8s`: Kubernetes manifests (stdlib only)
    "nbdist.__main__": "programs",
}

# Reads of another module's private name that are allowed, each with its reason. Empty: keep it so.
PRIVATE_ALLOWED = {}


@dataclass(frozen=True)
class Import:
    module: str  # the importing module
    line: int
    target: str  # the imported module (a name taken from a package's namespace: the package)
    name: str  # the name as written: "nbdist.ops.registry", "errors", "_REGISTRY"


def _module_name(path):
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts)  # packages keep their ".__init__" so that they can have their own layer


def _is_module(dotted):
    path = PACKAGE.parent.joinpath(*dotted.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _canonical(dotted):
    """``nbdist.train`` (a package, imported) is its ``__init__`` module."""
    path = PACKAGE.parent.joinpath(*dotted.split("."))
    return f"{dotted}.__init__" if (path / "__init__.py").is_file() else dotted


def layer_of(module):
    dotted = module
    while dotted:
        if dotted in LAYER_OF:
            return LAYER_OF[dotted]
        dotted = dotted.rpartition(".")[0]
    raise AssertionError(f"{module} has no layer: add it (or its package) to LAYER_OF in {__file__}")


def _resolve_from(module, node):
    """The absolute module that ``from ... import`` names, relative forms included."""
    if not node.level:
        return node.module
    package = module.split(".")[: -node.level]
    return ".".join(package + ([node.module] if node.module else []))


def _sources():
    files = sorted(PACKAGE.rglob("*.py"))
    assert len(files) > 50, f"only {len(files)} modules found under {PACKAGE}"
    return [(_module_name(f), f, ast.parse(f.read_text(), str(f))) for f in files]


SOURCES = _sources()


def nbdist_imports(module, tree):
    """Every import of an nbdist module in `tree`, at any depth (lazy imports included)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "nbdist":
                    found.append(Import(module, node.lineno, _canonical(alias.name), alias.name))
        elif isinstance(node, ast.ImportFrom):
            source = _resolve_from(module, node)
            if source.split(".")[0] != "nbdist":
                continue
            for alias in node.names:
                # `from nbdist.ops import registry` imports a module; `from nbdist import summary`
                # names a package listed in LAYER_OF even before it exists in this checkout.
                sub = f"{source}.{alias.name}"
                is_module = _is_module(sub) or (source == "nbdist" and sub in LAYER_OF)
                found.append(
                    Import(module, node.lineno, _canonical(sub if is_module else source), alias.name)
                )
    return found


ALL_IMPORTS = [imp for module, _, tree in SOURCES for imp in nbdist_imports(module, tree)]


def test_every_module_has_a_layer_and_the_entry_points_are_read():
    modules = {module for module, _, _ in SOURCES}
    assert {"nbdist.server", "nbdist.__main__", "nbdist.demo", "nbdist.in_task.exec_service"} <= modules
    for module in modules:
        assert layer_of(module) in LAYERS


def test_lazy_imports_inside_functions_are_read():
    lazy = [
        i for i in ALL_IMPORTS if i.module == "nbdist.server" and i.target == "nbdist.in_task.exec_service"
    ]
    assert lazy, "nbdist/server.py imports nbdist.in_task.exec_service inside main(); the walk missed it"


def later_layer_imports(imports):
    """One line per import of a later layer: module, line, imported name and both layers."""
    rank = {name: i for i, name in enumerate(LAYERS)}
    return [
        f"{i.module} (line {i.line}, layer {layer_of(i.module)}) imports {i.name!r} from {i.target} "
        f"(layer {layer_of(i.target)})"
        for i in imports
        if rank[layer_of(i.target)] > rank[layer_of(i.module)]
    ]


def test_no_module_imports_a_later_layer():
    bad = later_layer_imports(ALL_IMPORTS)
    assert not bad, "imports of a later layer (order: " + " -> ".join(LAYERS) + "):\n" + "\n".join(bad)


def test_the_task_process_never_loads_the_notebook():
    task_side = ("nbdist.server", "nbdist.in_task", "nbdist.runtime")
    bad = [
        f"{i.module} (line {i.line}) imports {i.target}"
        for i in ALL_IMPORTS
        if i.module.startswith(task_side) and i.target.startswith("nbdist.notebook")
    ]
    assert not bad, "\n".join(bad)


def test_graph_and_graph_def_do_not_import_each_other_both_ways():
    def imports(a, b):
        return [i.line for i in ALL_IMPORTS if i.module == a and i.target == b]

    graph, graph_def = "nbdist.graph.graph", "nbdist.graph.graph_def"
    assert imports(graph_def, graph), "graph_def.py is expected to build on graph.py"
    assert not imports(graph, graph_def), (
        f"graph.py imports graph_def.py at lines {imports(graph, graph_def)}"
    )


# -- private names --------------------------------------------------------------------------------
def _is_private(name):
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _private_imports():
    """``from m import _x`` where ``_x`` is a name of another module (not a private module)."""
    return [
        (i.module, i.line, f"from {i.target} import {i.name}")
        for i in ALL_IMPORTS
        if _is_private(i.name) and not _is_module(f"{i.target.removesuffix('.__init__')}.{i.name}")
    ]


def _module_aliases(module, tree):
    """Local name -> nbdist module, for every name an import binds to a module."""
    aliases = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "nbdist":
                    aliases[alias.asname or alias.name.split(".")[0]] = (
                        alias.asname and alias.name
                    ) or "nbdist"
        elif isinstance(node, ast.ImportFrom):
            source = _resolve_from(module, node)
            for alias in node.names:
                if source.split(".")[0] == "nbdist" and _is_module(f"{source}.{alias.name}"):
                    aliases[alias.asname or alias.name] = f"{source}.{alias.name}"
    return aliases


def _private_module_attributes(module, tree):
    """``mod._x`` where `mod` names another nbdist module (``registry._REGISTRY``,
    ``nbdist.ops.registry._REGISTRY``)."""
    aliases, found = _module_aliases(module, tree), []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Attribute) and _is_private(node.attr)):
            continue
        chain, value = [], node.value
        while isinstance(value, ast.Attribute):
            chain.insert(0, value.attr)
            value = value.value
        if not isinstance(value, ast.Name) or value.id not in aliases:
            continue
        owner = ".".join([aliases[value.id], *chain])
        if _is_module(owner) and _canonical(owner) != module:
            found.append((module, node.lineno, f"{owner}.{node.attr}"))
    return found


def _private_attributes_defined(tree):
    """Private names a module defines on its own objects: ``self._x = ...``, ``def _x``, and
    private class attributes."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) and _is_private(node.attr):
            names.add(node.attr)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and _is_private(node.name):
            names.add(node.name)
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                targets = item.targets if isinstance(item, ast.Assign) else []
                targets += [item.target] if isinstance(item, ast.AnnAssign) else []
                names.update(t.id for t in targets if isinstance(t, ast.Name) and _is_private(t.id))
    return names


def _foreign_private_attributes(module, tree, defined_by):
    """``obj._x`` on an object that is not ``self``/``cls`` where only *other* modules define
    ``_x`` (``graph._ops`` in runtime/session.py): reading another module's object's insides."""
    own = _private_attributes_defined(tree)
    found = []
    for node in ast.walk(tree):
        if not (
            isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load) and _is_private(node.attr)
        ):
            continue
        if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
            continue
        owners = defined_by.get(node.attr, set()) - {module}
        if owners and node.attr not in own:
            found.append(
                (module, node.lineno, f"{ast.unparse(node)} (defined in {', '.join(sorted(owners))})")
            )
    return found


def test_no_module_reads_another_modules_private_names():
    defined_by = {}
    for module, _, tree in SOURCES:
        for name in _private_attributes_defined(tree):
            defined_by.setdefault(name, set()).add(module)
    found = _private_imports()
    for module, _, tree in SOURCES:
        found += _private_module_attributes(module, tree)
        found += _foreign_private_attributes(module, tree, defined_by)
    bad = [f"{m} (line {line}) reads {what}" for m, line, what in found if (m, what) not in PRIVATE_ALLOWED]
    assert not bad, "private names read across modules (make them public or add an API):\n" + "\n".join(
        sorted(bad)
    )


# -- the checker itself -----------------------------------------------------------------------------
def _check_source(module, source):
    tree = ast.parse(source)
    return nbdist_imports(module, tree), _private_module_attributes(module, tree)


def test_the_walk_sees_a_lazy_import_of_a_later_layer():
    imports, _ = _check_source(
        "nbdist.ops.fake_ops",
        "def f():\n    if True:\n        from nbdist.runtime import executor\n    return executor\n",
    )
    assert [(i.line, i.target) for i in imports] == [(3, "nbdist.runtime.executor")]
    assert later_layer_imports(imports) == [
        "nbdist.ops.fake_ops (line 3, layer ops) imports 'executor' from nbdist.runtime.executor (layer runtime)"
    ]


def test_the_task_entry_point_importing_the_notebook_is_a_later_layer():
    imports, _ = _check_source("nbdist.server", "import nbdist\nfrom nbdist.notebook import local_cluster\n")
    assert later_layer_imports(imports) == [
        "nbdist.server (line 2, layer facade) imports 'local_cluster' from nbdist.notebook.local_cluster (layer notebook)"
    ]


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("from nbdist.ops import registry\nregistry._REGISTRY\n", "nbdist.ops.registry._REGISTRY"),
        ("import nbdist.ops.registry\nnbdist.ops.registry._REGISTRY\n", "nbdist.ops.registry._REGISTRY"),
        ("from nbdist.ops import registry as r\nr._REGISTRY\n", "nbdist.ops.registry._REGISTRY"),
    ],
)
def test_the_walk_sees_a_private_module_attribute(source, expected):
    _, private = _check_source("nbdist.runtime.fake", source)
    assert [what for _, _, what in private] == [expected]


# -- size, seams and cycles -------------------------------------------------------------------------
MAX_MODULE_LINES = 600  # STYLE.md: "Split modules near 600 lines"


def test_no_module_is_over_600_lines():
    long = {
        module: n
        for module, path, _ in SOURCES
        if (n := len(path.read_text().splitlines())) > MAX_MODULE_LINES
    }
    assert not long, (
        f"modules over {MAX_MODULE_LINES} lines (split them where their responsibilities part): "
        + ", ".join(f"{m} ({n})" for m, n in sorted(long.items()))
    )


# What the plumbing below the services (nbdist/runtime/net/) may import of nbdist: itself, the
# base layer and the scheduling policy of background threads. Never a service (master, worker,
# server_lib, remote, session, executor...): the services stand on the plumbing, not the reverse.
NET_MAY_IMPORT = ("nbdist.runtime.net", "nbdist.runtime.sched", "nbdist.errors")


def test_the_net_package_imports_no_service():
    bad = [
        f"{i.module} (line {i.line}) imports {i.target}"
        for i in ALL_IMPORTS
        if i.module.startswith("nbdist.runtime.net") and not i.target.startswith(NET_MAY_IMPORT)
    ]
    assert not bad, (
        "nbdist/runtime/net/ may import only " + ", ".join(NET_MAY_IMPORT) + ":\n" + "\n".join(bad)
    )


def import_cycles(imports):
    """The groups of modules that import each other (directly or around a loop), lazy imports
    included: each a sorted list, from Tarjan's strongly connected components."""
    edges = {}
    for i in imports:
        if i.target != i.module:
            edges.setdefault(i.module, set()).add(i.target)
    index, low, stack, on_stack, cycles = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while not group or group[-1] != v:
                group.append(stack.pop())
                on_stack.discard(group[-1])
            if len(group) > 1:
                cycles.append(sorted(group))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return cycles


def test_no_import_cycle_between_modules():
    cycles = import_cycles(ALL_IMPORTS)
    assert not cycles, "modules that import each other (give what both need one owner):\n" + "\n".join(
        " <-> ".join(c) for c in cycles
    )


def test_the_cycle_check_sees_a_cycle_through_a_lazy_import():
    a, _ = _check_source("nbdist.ops.fake_a", "from nbdist.ops import fake_b\n")
    b, _ = _check_source("nbdist.ops.fake_b", "def f():\n    from nbdist.ops import fake_a\n")
    # (neither module exists, so each import names the package; name the modules instead)
    a = [Import(i.module, i.line, "nbdist.ops.fake_b", i.name) for i in a]
    b = [Import(i.module, i.line, "nbdist.ops.fake_a", i.name) for i in b]
    assert import_cycles(a + b) == [["nbdist.ops.fake_a", "nbdist.ops.fake_b"]]
