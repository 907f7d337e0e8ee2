"""Writes docs/api.md: the TF 1.x names `import nbdist as tf` supports, read off the facade itself.

    python docs/gen_api.py           # rewrite docs/api.md
    python docs/gen_api.py --check   # exit 1 if docs/api.md is out of date

Each namespace lists its ``__all__`` when it has one (so lazily loaded names such as
``tf.train.Server`` appear), else its public non-module attributes.
"""

import argparse
import inspect
import os
import pathlib
import re
import sys
import types

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import nbdist as tf  # noqa: E402 - after the path set-up, so the checkout's nbdist is documented

OUT = ROOT / "docs" / "api.md"
TESTS = ROOT / "tests"
# The modules of tensorflow.compat.v1 the coverage table counts (issue 32's list).
COVERAGE = (
    "",
    "nn",
    "train",
    "layers",
    "losses",
    "metrics",
    "data",
    "math",
    "linalg",
    "random",
    "initializers",
    "image",
    "io",
    "gfile",
    "summary",
    "test",
    "sparse",
    "strings",
)
# Names nbdist leaves out on purpose; they stay in the denominator.
EXCLUDED = {
    "GPU, TPU or XLA only": re.compile(
        r"(?i)gpu|tpu|cuda|xla|mlir|device_placement_logging|^generate_bounding_box_proposals$"
    ),
    "TF 2 behaviours (nbdist is TF 1.x; the disable_* switches are no-ops)": re.compile(
        r"^enable_(v2|eager|control_flow_v2|tensor_equality|resource_variables|v2_behavior|v2_tensorshape)"
    ),
    "TF 2's eager and object APIs (GradientTape, tf.Module, tf.function, object checkpoints)": re.compile(
        r"^(GradientTape|Module|function|wrap_function|Checkpoint|CheckpointManager|CheckpointOptions|"
        r"NumpyIterator|CriticalSection)$"
    ),
    "quantized types and ops (nbdist computes in float, int, bool, complex and string)": re.compile(
        r"(?i)quantiz|^q(u)?int\d+$|fake_quant|^dequantize$"
    ),
    "ragged tensors (nbdist has dense and sparse tensors)": re.compile(
        r"(?i)ragged|^bytes_split$|^unicode_decode|^unicode_split"
    ),
    "C++ op and file-system libraries": re.compile(r"^load_(file_system_|op_)?library$"),
    "tf.contrib-era linear solvers": re.compile(r"^sdca_"),
    "JPEG XL (Pillow, nbdist's image codec, cannot read it)": re.compile(r"^decode_jxl$"),
}
COVERAGE_START = "<!-- coverage table: docs/gen_api.py writes it when TensorFlow is importable -->"
COVERAGE_END = "<!-- end of the coverage table -->"
NAMESPACES = (
    "",
    "nn",
    "train",
    "errors",
    "summary",
    "test",
    "data",
    "metrics",
    "losses",
    "layers",
    "python_io",
    "sparse",
    "gfile",
    "math",
    "linalg",
    "random",
    "initializers",
    "io",
    "image",
    "strings",
)

HEADER = """# Supported TensorFlow 1.x API

`import nbdist as tf` gives these names at TF 1.x's paths. Any other name raises an
`AttributeError` saying it is not supported (for example `tf.contrib`). Names behave as in
TF 1.x unless `docs/architecture.md` says otherwise.

Out of scope for this wave: `tf.estimator` and `tf.distribute`. `tf.data`'s `map`, `filter`,
`flat_map` and `interleave` trace their function once into a subgraph (as TF 1.x does) that runs
on the iterator's task; it may read outer tensors and variables (their values when the
iterator starts), not update them. `prefetch` and `num_parallel_calls` are accepted (elements
are made when asked for, one at a time); `cache(filename)` keeps the elements in memory.
Control flow (`tf.cond`, `tf.case`, `tf.switch_case`, `tf.while_loop`, `tf.map_fn`, `tf.scan`,
`tf.foldl`, `tf.foldr`) behaves as TF 1.x's, gradients included, with these differences
(docs/architecture.md, "Control flow"): a `while_loop` runs whole on the task its op is placed
on (a body op of another task is refused when the step is partitioned, naming it); its body
reads variables but does not update them or other resources (refused when it is built); its
iterations run one after another (`parallel_iterations` and `swap_memory` are accepted and
unused); the gradient of a loop whose body draws random numbers is refused (it recomputes
the body; the loop itself runs). A TF 1.x GraphDef's `tf.cond` imports; its `while_loop`
(Enter/Exit frames) does not.
Random numbers are nbdist's own, seeded by TF 1.x's rules but not TF's streams: the random
ops, the stateless draws (the same seed gives the same numbers), `tf.random.Generator` and
shuffled orders (one permutation per epoch). The special functions (`tf.lgamma`, `tf.igamma`,
`tf.math.bessel_i0`, ...) and `tf.linalg`'s matrix functions compute with SciPy.
`tf.fftnd` / `ifftnd` / `rfftnd` / `irfftnd` run on the CPU (TF's CPU build has no kernels for
them). `tf.py_func` / `numpy_function` / `py_function` run their Python function only in the
process that built the graph; a graph that would run one on another process is refused, naming
the op. `tf.train.export_meta_graph` / `Saver.save` write nbdist's own meta graph (plain data);
`import_meta_graph` reads it, and a TF-written `.meta` whose ops nbdist has and which holds no
saver. `tf.data.Options` are recorded and merged as TF's, and change nothing in how a pipeline
runs.
`tf.app`, `tf.flags` (absl's flags, as in TF 1.x) and `tf.logging` are modules: every
name of TF's is there.

nbdist's own additions, outside TF's names: `tf.train.staleness.of(train_op)` and
`tf.train.staleness.dropped_of(train_op)` (what asynchronous and synchronous training lose),
`ConditionalAccumulator.num_dropped()` / `.close()`, `SyncReplicasOptimizer.get_close_op()` /
`.get_release_token_op()`,
`tf.train.in_graph.replicate(model_fn, optimizer, num_towers)` and
`tf.train.in_graph.average_gradients(tower_grads)` (in-graph replication: a tower per worker
task, gradients averaged on the ps),
`nbdist.train.device_setter.GreedyLoadBalancingStrategy` / `byte_size_load_fn` (TF 1.x:
`tf.contrib.training`), and `tf.train.ReportHook(tensors, every_n_steps=1, train_op=None)`, a
session-run hook that feeds the notebook's live dashboard (it calls `tf.report` with the
tensors, the global step, steps/s and the staleness or dropped gradients of `train_op`).
`tf.export.to_tensorflow(graph, session=..., checkpoint=..., keep=..., clear_devices=...)`
builds the graph in real TensorFlow (`tensorflow.compat.v1`, the `[tf]` extra;
`docs/export.md`), `tf.import_graph_def` also takes TF's `GraphDef` protos, and the views
below take real TF's `RunMetadata` / `GraphDef` protos.
`tf.summary` writes event files with tensorboardX, one of the package's dependencies.
The notebook side (loaded on first use) adds `tf.LocalCluster`,
`tf.report`, `tf.show_graph` / `show_placement` / `show_timeline`, `tf.Dashboard`,
`tf.export_chrome_trace` and `tf.Playground()`: the distributed-training playground widget
(choose ps and worker tasks, in-graph / async / sync, backup workers and a straggler, train a
real local cluster, compare with the previous run in grey; `notebooks/playground.ipynb` is its
Voila app).

Generated by `python docs/gen_api.py` from the facade itself; do not edit by hand.
"""


def _public_names(module):
    names = getattr(module, "__all__", None)
    if names is None:
        names = [
            n
            for n in dir(module)
            if not n.startswith("_") and not isinstance(getattr(module, n), types.ModuleType)
        ]
    return sorted(names, key=lambda n: (n.lower(), n))


def _kind(obj):
    if isinstance(obj, tf.DType):
        return "dtype"
    if inspect.isclass(obj):
        return "exception" if issubclass(obj, BaseException) else "class"
    if callable(obj):
        return "function"
    if isinstance(obj, types.ModuleType):
        return "namespace"
    return "constant"


def _summary(obj):
    if isinstance(obj, tf.DType):
        return f"numpy `{obj.np}`"
    if isinstance(obj, (set, frozenset)):  # (in a stable order: a set's varies from run to run)
        return f"`{type(obj).__name__}({{{', '.join(sorted(map(repr, obj)))}}})`"
    if not (inspect.isclass(obj) or callable(obj) or isinstance(obj, types.ModuleType)):
        return f"`{obj!r}`"
    doc = inspect.getdoc(obj) or ""
    line = doc.strip().splitlines()[0] if doc.strip() else ""
    return line.replace("|", "\\|")


def _signature(obj):
    if not callable(obj) or isinstance(obj, tf.DType):
        return ""
    try:
        sig = str(inspect.signature(obj))
    except (TypeError, ValueError):
        return ""
    sig = sig.replace("|", "\\|")
    return f"`{sig}`" if len(sig) <= 80 else f"`{sig[:77]}...`"


def _module(root, path):
    module = root
    for part in filter(None, path.split(".")):
        module = getattr(module, part, None)
        if module is None:
            return None
    return module


def _spelled(text):
    """Every dotted path the tests spell after a library's name (``tf.nn.relu`` -> ``nn.relu``,
    ``relu``'s prefixes too), and every ``<word>.<name>`` pair (``gfile.Exists``): read once."""
    paths = set()
    for match in re.finditer(r"\b(?:tf|t|lib|tf1|nbdist)\.([A-Za-z_][\w.]*)", text):
        parts = match.group(1).split(".")
        paths.update(".".join(parts[: i + 1]) for i in range(len(parts)))
    pairs = set(re.findall(r"\b([A-Za-z_]\w*\.[A-Za-z_]\w*)\b", text))
    return paths, pairs


def _tested(prefix, name, spelled):
    """Whether some test calls ``<lib>.<prefix><name>`` (``tf.nn.relu``, ``t.nn.relu``, ...), or
    ``<module>.<name>`` for a module whose name no standard module has (``gfile.Exists``)."""
    paths, pairs = spelled
    if f"{prefix}{name}" in paths:
        return True
    last = prefix.rstrip(".").rpartition(".")[2]
    return bool(last) and last not in sys.stdlib_module_names and f"{last}.{name}" in pairs


def coverage_table():
    """The Markdown coverage table against ``tensorflow.compat.v1``, or None without TensorFlow.

    A name counts when ``import nbdist as tf`` has it at the same path and a test under
    tests/ spells a call of it (``tf.<module>.<name>``, or ``t.``/``lib.``/``tf1.`` for the
    parity tests' library); a name that only raises counts for nothing.
    """
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
    try:
        import tensorflow  # noqa: PLC0415 - only to count its names
    except ImportError:
        return None
    tf1 = tensorflow.compat.v1
    spelled = _spelled("\n".join(p.read_text(encoding="utf-8") for p in sorted(TESTS.rglob("*.py"))))
    rows, total, excluded = [], [0, 0, 0], {reason: [] for reason in EXCLUDED}
    for path in COVERAGE:
        theirs, ours = _module(tf1, path), _module(tf, path)
        names = sorted(
            n
            for n in dir(theirs)
            if not n.startswith("_") and not isinstance(getattr(theirs, n, None), types.ModuleType)
        )
        prefix = f"{path}." if path else ""
        has = [n for n in names if ours is not None and _has(ours, n)]
        tested = [n for n in has if _tested(prefix, n, spelled)]
        for n in names:
            for reason, pattern in EXCLUDED.items():
                if pattern.search(n) and n not in has:
                    excluded[reason].append(f"tf.{prefix}{n}")
        share = 100 * len(tested) / max(len(names), 1)
        rows.append(f"| `tf.{prefix}*` | {len(names)} | {len(has)} | {len(tested)} | {share:.0f}% |")
        for i, v in enumerate((len(names), len(has), len(tested))):
            total[i] += v
    out = [
        COVERAGE_START,
        f"\n## Coverage of `tensorflow.compat.v1` {tensorflow.__version__}\n",
        "Public names (not modules) of each module; *nbdist has* the same path; *tested* a test",
        "under tests/ calls it (`tf.<module>.<name>`, or `t.` / `lib.` / `tf1.` in the parity",
        "tests). Excluded names stay in the denominator.\n",
        "| module | TF names | nbdist has | tested | tested / TF |",
        "| --- | --- | --- | --- | --- |",
        *rows,
        f"| **pooled** | {total[0]} | {total[1]} | {total[2]} | **{100 * total[2] / total[0]:.0f}%** |",
        "",
    ]
    for reason, names in excluded.items():
        out.append(f"Excluded, {reason}: {', '.join(f'`{n}`' for n in names) or 'none'}.\n")
    out.append(COVERAGE_END)
    return "\n".join(out)


def _has(module, name):
    try:
        getattr(module, name)
    except (AttributeError, NotImplementedError):
        return False
    return True


def _committed_coverage():
    """The coverage table in the committed docs/api.md (kept when TensorFlow is missing)."""
    if not OUT.exists():
        return None
    text = OUT.read_text(encoding="utf-8")
    start, end = text.find(COVERAGE_START), text.find(COVERAGE_END)
    if start < 0 or end < 0:
        return None
    return text[start : end + len(COVERAGE_END)]


def render():
    parts = [HEADER]
    table = coverage_table() or _committed_coverage()
    if table:
        parts.append(table)
    for ns in NAMESPACES:
        module = tf
        for part in filter(None, ns.split(".")):
            module = getattr(module, part)
        prefix = f"tf.{ns}." if ns else "tf."
        names = _public_names(module)
        parts.append(f"\n## `{prefix}*` ({len(names)} names)\n")
        parts.append("| name | kind | arguments | summary |\n| --- | --- | --- | --- |")
        for name in names:
            obj = getattr(module, name)
            parts.append(f"| `{prefix}{name}` | {_kind(obj)} | {_signature(obj)} | {_summary(obj)} |")
    return "\n".join(parts) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if docs/api.md is out of date")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        if not OUT.exists() or OUT.read_text(encoding="utf-8") != text:
            sys.stderr.write("docs/api.md is out of date: run python docs/gen_api.py\n")
            return 1
        return 0
    OUT.write_text(text, encoding="utf-8")
    sys.stdout.write(f"wrote {OUT.relative_to(ROOT)}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
