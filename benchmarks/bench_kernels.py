"""Kernels on realistic shapes: each kernel of an MNIST-shaped training step against numpy.

Builds TF 1.x tutorial MLPs with nbdist (784 -> hidden -> 10, ReLU, softmax cross-entropy,
mean loss) for two sizes: ``mnist`` (hidden 100, batch 100) and ``large`` (hidden 1,000,
batch 256), in three variants that between them run every kernel measured:

- ``adam``: ``matmul(x, w) + b``, `softmax_cross_entropy_with_logits`, `AdamOptimizer`;
- ``momentum``: `tf.nn.bias_add`, `sparse_softmax_cross_entropy_with_logits`, two
  `MomentumOptimizer`s (plain and ``use_nesterov=True``), each with its own train op;
- ``sgd``: the beginners' tutorial loss ``reduce_mean(-reduce_sum(y_ * log(softmax(logits)), 1))``
  and `GradientDescentOptimizer`.

Each variant trains a few steps in a local `tf.Session` (warm-up), then one more step with
every kernel wrapped to record its node and arguments as the executor passes them
(``kernel(ctx, node, *inputs)``: values, or the `VariableResource`s of ref inputs). The
wrappers are then removed and each registered kernel function is called directly with
those arguments, against its *numpy floor*: the fewest numpy calls that compute the same
result on the same arrays (``a @ b`` for `MatMul`; for `ApplyAdam` TF's update with ``out=``,
one new array per updated tensor plus one scratch for its denominator). A row made of
several kernels (the gradient of the mean loss: eleven small ones) times them in turn,
as the executor runs them. Every row is checked against its floor before it is timed.
Kernel and floor alternate in rounds (the machine may be shared); each figure is the
median over the rounds of the mean time per call. BLAS runs on one thread
(`threadpoolctl.threadpool_limits(1)`), so the matrix products are stable.

    python benchmarks/bench_kernels.py                      # both models, Markdown tables
    python benchmarks/bench_kernels.py --json after.json --before before.json

(``PYTHONPATH=/some/other/checkout python benchmarks/bench_kernels.py --json before.json``
measures another checkout's kernels with this script; the header names the one it ran.)
"""

import argparse
import contextlib
import json
import os
import platform
import statistics
import sys
import time

import numpy as np
from threadpoolctl import threadpool_info, threadpool_limits

import nbdist as tf
from nbdist.ops import registry

MODELS = {"mnist": (100, 100), "large": (1000, 256)}  # name -> (hidden units, batch)


# -- the graphs ------------------------------------------------------------------------------------
def _layers(x, hidden, rng, bias_add):
    """784 -> hidden (ReLU) -> 10 logits; ops named for the rows below."""

    def var(shape, scale, name):
        return tf.Variable((rng.standard_normal(shape) * scale).astype(np.float32), name=name)

    w1, b1 = var([784, hidden], 0.05, "w1"), var([hidden], 0.01, "b1")
    w2, b2 = var([hidden, 10], 0.1, "w2"), var([10], 0.01, "b2")
    pre = tf.matmul(x, w1, name="matmul1")
    pre = tf.nn.bias_add(pre, b1, name="bias1") if bias_add else tf.add(pre, b1, name="bias1")
    h = tf.nn.relu(pre, name="relu1")
    logits = tf.matmul(h, w2, name="matmul2")
    return tf.nn.bias_add(logits, b2, name="bias2") if bias_add else tf.add(logits, b2, name="bias2")


def build(variant, hidden, seed=0):
    """``(graph, x, y, sparse, [train ops])`` of one variant (`sparse`: `y` holds class ids)."""
    rng = np.random.default_rng(seed)
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [None, 784], name="x")
        sparse = variant == "momentum"
        y = tf.placeholder(tf.int32 if sparse else tf.float32, [None] if sparse else [None, 10], name="y")
        logits = _layers(x, hidden, rng, bias_add=variant == "momentum")
        if variant == "adam":
            xent = tf.nn.softmax_cross_entropy_with_logits(labels=y, logits=logits, name="xent")
            trains = [tf.train.AdamOptimizer(1e-3).minimize(tf.reduce_mean(xent, name="loss"))]
        elif variant == "momentum":
            xent = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits, name="xent")
            loss = tf.reduce_mean(xent, name="loss")
            trains = [
                tf.train.MomentumOptimizer(0.01, 0.9).minimize(loss),
                tf.train.MomentumOptimizer(0.01, 0.9, use_nesterov=True, name="Nesterov").minimize(loss),
            ]
        else:
            log_p = tf.log(tf.nn.softmax(logits))
            loss = tf.reduce_mean(-tf.reduce_sum(y * log_p, axis=1, name="sum"), name="loss")
            trains = [tf.train.GradientDescentOptimizer(0.1).minimize(loss)]
    return graph, x, y, sparse, trains


def _batch(batch, sparse, rng):
    x = rng.random((batch, 784), dtype=np.float32)
    labels = rng.integers(0, 10, batch).astype(np.int32)
    return x, labels if sparse else np.eye(10, dtype=np.float32)[labels]


# -- recording what the executor passes each kernel -------------------------------------------------
class Recorder:
    """Wraps every registered kernel; while `on`, keeps each node's first call,
    ``calls[name] = (node, ctx, args, out)`` in the order the executor ran them, and every
    call in `sequence` (the forward pass of a second train op runs again)."""

    def __init__(self):
        self.on = False
        self.calls = {}
        self.sequence = []
        self._saved = {}

    def __enter__(self):
        for op_type in registry.registered_op_types():
            d = registry.lookup(op_type)
            if d.kernel is not None:
                self._saved[op_type] = d.kernel
                d.kernel = self._wrap(d.kernel)
        return self

    def __exit__(self, *exc):
        for op_type, kernel in self._saved.items():
            registry.lookup(op_type).kernel = kernel

    def _wrap(self, kernel):
        def recording(ctx, node, *args):
            out = kernel(ctx, node, *args)
            if self.on:
                self.calls.setdefault(node.name, (node, ctx, args, out))
                self.sequence.append((node, ctx, args, out))
            return out

        return recording


def _session(graph, trains, feeds, warmup_steps):
    sess = tf.Session(graph=graph)
    with graph.as_default():
        sess.run(tf.global_variables_initializer())
    for train in trains:
        for _ in range(warmup_steps):
            sess.run(train, feeds)
    return sess


@contextlib.contextmanager
def recorded(variant, hidden, batch, warmup_steps):
    """Yields the `Recorder` of one step of each train op, after
    `warmup_steps`, with the session still open (its variables are the ref inputs), and the
    median time of that step (`Session.run` of each train op) in a second session whose
    kernels were never wrapped."""
    graph, x, y, sparse, trains = build(variant, hidden)
    feeds = dict(zip((x, y), _batch(batch, sparse, np.random.default_rng(1))))
    with _session(graph, trains, feeds, warmup_steps) as plain:
        step_s = _median_s(lambda: [plain.run(t, feeds) for t in trains], 31)
    with Recorder() as recorder:
        sess = _session(graph, trains, feeds, warmup_steps)
        recorder.on = True
        for train in trains:
            sess.run(train, feeds)
        recorder.on = False
    with sess:
        yield recorder, step_s


def _median_s(fn, rounds):
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


# -- numpy floors: the fewest numpy calls that give the same result on the same arrays --------------
def _xent_floor(logits, labels):
    """TF's `SoftmaxCrossEntropyWithLogits` (Eigen) order: ``loss = sum(labels * (log(s) -
    shifted))``, ``backprop = exp(shifted) / s - labels``."""
    shifted = np.subtract(logits, np.maximum.reduce(logits, axis=-1, keepdims=True))
    e = np.exp(shifted)
    s = np.add.reduce(e, axis=-1, keepdims=True)
    np.divide(e, s, out=e)
    np.subtract(e, labels, out=e)
    np.log(s, out=s)
    np.subtract(s, shifted, out=shifted)
    np.multiply(labels, shifted, out=shifted)
    return np.add.reduce(shifted, axis=-1), e


def _sparse_xent_floor(logits, labels):
    """TF's `SparseSoftmaxCrossEntropyWithLogits`: ``loss = log(s) - shifted[label]``,
    ``backprop = exp(shifted) / s - one_hot(label)``."""
    shifted = np.subtract(logits, np.maximum.reduce(logits, axis=-1, keepdims=True))
    e = np.exp(shifted)
    s = np.add.reduce(e, axis=-1, keepdims=True)
    rows = np.arange(len(labels))
    loss = np.log(s[:, 0])
    loss -= shifted[rows, labels]
    np.divide(e, s, out=e)
    e[rows, labels] -= 1
    return loss, e


def _adam_floor(w, m, v, beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad):
    """TF's `ApplyAdam` with ``out=``: a new m, v and var, and one scratch (the denominator)."""
    alpha = lr * np.sqrt(1 - beta2_power) / (1 - beta1_power)
    m_new = np.subtract(grad, m)
    m_new *= 1 - beta1
    m_new += m
    v_new = np.square(grad)
    v_new -= v
    v_new *= 1 - beta2
    v_new += v
    denom = np.sqrt(v_new)
    denom += epsilon
    w_new = np.multiply(m_new, alpha)
    w_new /= denom
    np.subtract(w, w_new, out=w_new)
    return w_new, m_new, v_new


def _momentum_floor(w, accum, lr, grad, momentum, nesterov):
    """TF's `ApplyMomentum` with ``out=``: a new accum and var (Nesterov: one scratch more)."""
    a_new = np.multiply(accum, momentum)
    a_new += grad
    if nesterov:  # var -= grad * lr + accum * momentum * lr
        w_new = np.multiply(a_new, momentum)
        w_new *= lr
        w_new += np.multiply(grad, lr)
    else:
        w_new = np.multiply(a_new, lr)
    np.subtract(w, w_new, out=w_new)
    return w_new, a_new


def _gradient_descent_floor(w, alpha, delta):
    w_new = np.multiply(delta, alpha)
    np.subtract(w, w_new, out=w_new)
    return (w_new,)


# -- the rows: which recorded kernels, against which floor --------------------------------------------
class Row:
    """One line of the table: the kernels of `names` (run in that order) against `floor()`.

    `check` names the node whose output must equal the floor's first result; for an
    ``Apply*`` row, `slots` are the resources whose new values must equal its next results,
    and `floor` is made by `bind()` from the variables' values at that moment (the rows
    before it updated them).
    """

    def __init__(self, label, shape, names, floor, check=None, slots=(), bind=None):
        self.label, self.shape, self.names, self.floor = label, shape, names, floor
        self.check, self.slots = check, slots
        if bind is not None:
            self.bind = bind

    def bind(self):
        return self.floor


def _shape(a):
    return "x".join(map(str, np.shape(a))) or "scalar"


def _args(calls, name):
    return calls[name][2]


def _out(calls, name):
    return calls[name][3]


def _scope(calls, scope):
    """The recorded nodes under `scope` (``gradients/relu1_grad``), in the order they ran."""
    return [n for n in calls if n.startswith(scope + "/")]


def _matmul(calls, label, name):
    node, _, (a, b), _ = calls[name]
    ta, tb = node.attr.get("transpose_a"), node.attr.get("transpose_b")
    shape = f"{_shape(a)}{'ᵀ' if ta else ''} · {_shape(b)}{'ᵀ' if tb else ''}"
    return Row(label, shape, [name], lambda: (a.T if ta else a) @ (b.T if tb else b), check=name)


def _apply(calls, name, floor, **kw):
    """A row for the update op `name`, its floor called on the current values of its inputs."""
    node, _, args, _ = calls[name]
    refs = [a for a in args if hasattr(a, "read")]
    label = f"{node.op}{' Nesterov' if node.attr.get('use_nesterov') else ''} {refs[0].name}"

    def bind():
        values = [a.value if hasattr(a, "read") else a for a in args]
        return lambda: floor(*values, **kw)

    shape = _shape(refs[0].value)
    return Row(label, shape, [name], None, check=name, slots=refs[1:], bind=bind)


def _forward_rows(calls, bias_op):
    b1_in, h_in = _args(calls, "bias1"), _args(calls, "relu1")[0]
    bias_grad, relu_grad = _scope(calls, "gradients/bias1_grad"), _scope(calls, "gradients/relu1_grad")
    (to_bias,) = [n for n in bias_grad if np.shape(_out(calls, n)) == np.shape(b1_in[1])]
    g_pre = _args(calls, to_bias)[0]
    y, g_y = _out(calls, "relu1"), _out(calls, "gradients/matmul2_grad/MatMul")
    return [
        _matmul(calls, "MatMul x·w1", "matmul1"),
        _matmul(calls, "MatMul h·w2", "matmul2"),
        _matmul(calls, "MatMul grad g·w2ᵀ", "gradients/matmul2_grad/MatMul"),
        _matmul(calls, "MatMul grad hᵀ·g", "gradients/matmul2_grad/MatMul_1"),
        _matmul(calls, "MatMul grad xᵀ·g", "gradients/matmul1_grad/MatMul_1"),
        Row(f"{bias_op} h + b1", _shape(b1_in[0]), ["bias1"], lambda: np.add(*b1_in), check="bias1"),
        Row(
            f"{bias_op} grad",
            f"{_shape(g_pre)} → {_shape(b1_in[1])}",
            bias_grad,
            lambda: np.add.reduce(g_pre, axis=0),
            check=to_bias,
        ),
        Row("Relu", _shape(h_in), ["relu1"], lambda: np.maximum(h_in, 0), check="relu1"),
        # (TF's ReluGrad: gradients * (features > 0))
        Row("ReLU grad", _shape(g_y), relu_grad, lambda: np.multiply(g_y, y > 0), check=relu_grad[-1]),
    ]


def _loss_rows(calls, sparse):
    logits, labels = _args(calls, "xent")
    floor = _sparse_xent_floor if sparse else _xent_floor
    rows = [Row(calls["xent"][0].op, _shape(logits), ["xent"], lambda: floor(logits, labels), check="xent")]
    if sparse:
        return rows
    xent_grad, mean_grad = _scope(calls, "gradients/xent_grad"), _scope(calls, "gradients/loss_grad")
    g_loss, backprop = _out(calls, mean_grad[-1]), _out(calls, "xent")[1]
    losses, seed = _args(calls, "loss")[0], _out(calls, "gradients/grad_ys")
    n = np.asarray(losses.size, losses.dtype)
    return [
        *rows,
        Row(
            "xent grad",
            f"{_shape(g_loss)} · {_shape(backprop)}",
            xent_grad,
            lambda: np.multiply(g_loss[:, None], backprop),
            check=xent_grad[-1],
        ),
        Row(
            "Mean (loss)",
            f"{_shape(losses)} → scalar",
            ["loss"],
            lambda: np.add.reduce(losses) / n,
            check="loss",
        ),
        Row(
            "Mean grad",
            f"scalar → {_shape(losses)}",
            mean_grad,
            lambda: np.full(losses.shape, seed / n),
            check=mean_grad[-1],
        ),
    ]


def rows_of(variant, calls):
    """The table rows of one recorded `variant`."""
    if variant == "adam":
        rows = _forward_rows(calls, "Add") + _loss_rows(calls, sparse=False)
        return rows + [_apply(calls, f"Adam/update_{v}/ApplyAdam", _adam_floor) for v in ("w1", "b1")]
    if variant == "momentum":
        rows = _forward_rows(calls, "BiasAdd")
        rows = [r for r in rows if r.label.startswith("BiasAdd")] + _loss_rows(calls, sparse=True)
        return rows + [
            _apply(calls, f"{opt}/update_{v}/ApplyMomentum", _momentum_floor, nesterov=opt == "Nesterov")
            for opt in ("Momentum", "Nesterov")
            for v in ("w1", "b1")
        ]
    x = _args(calls, "sum")[0]
    rows = [
        Row(
            "Sum (axis 1)",
            f"{_shape(x)} → {_shape(x[:, 0])}",
            ["sum"],
            lambda: np.add.reduce(x, 1),
            check="sum",
        )
    ]
    return rows + [
        _apply(calls, f"GradientDescent/update_{v}/ApplyGradientDescent", _gradient_descent_floor)
        for v in ("w1", "b1")
    ]


# -- timing ---------------------------------------------------------------------------------------------
def _caller(recorded_calls):
    """Calls the registered kernels of `recorded_calls` (``(node, ctx, args, out)``) as the
    executor does: ``kernel(ctx, node, *args)``."""
    steps = [(registry.lookup(node.op).kernel, ctx, node, args) for node, ctx, args, _ in recorded_calls]

    def run():
        for kernel, ctx, node, args in steps:
            out = kernel(ctx, node, *args)
        return out

    return run


def check(row, floor, calls):
    """Runs the row's kernels once; their result must equal the floor's (float32 tolerance)."""
    expected = floor()
    expected = expected if isinstance(expected, tuple) else (expected,)
    out = None
    for name in row.names:
        node, ctx, args, _ = calls[name]
        result = registry.lookup(node.op).kernel(ctx, node, *args)
        out = result if name == row.check else out
    got = (out if isinstance(out, tuple) else (out,)) + tuple(s.value for s in row.slots)
    for a, b in zip(got, expected, strict=True):
        np.testing.assert_allclose(a, b, rtol=2e-6, atol=1e-7, err_msg=row.label)


def _per_call_s(fn, number):
    start = time.perf_counter()
    for _ in range(number):
        fn()
    return (time.perf_counter() - start) / number


def paired(fn_a, fn_b, rounds, round_s):
    """Medians of seconds per call of `fn_a` and `fn_b` (None: no floor), in alternating rounds
    of about `round_s` each (so both see the same background load)."""
    number = max(1, int(round_s / max(_per_call_s(fn_a, 3), 1e-7)))
    number_b = None if fn_b is None else max(1, int(round_s / max(_per_call_s(fn_b, 3), 1e-7)))
    a_s, b_s = [], []
    for _ in range(rounds):
        a_s.append(_per_call_s(fn_a, number))
        if fn_b is not None:
            b_s.append(_per_call_s(fn_b, number_b))
    return statistics.median(a_s), statistics.median(b_s) if b_s else None


def _kernels(recorded_calls):
    ops = [node.op for node, *_ in recorded_calls]
    return " + ".join(ops) if len(ops) <= 3 else f"{len(ops)} kernels"


def _result(variant, label, kernels, shape, kernel_s, floor_s):
    floor_us = None if floor_s is None else floor_s * 1e6
    return {
        "variant": variant,
        "label": label,
        "kernels": kernels,
        "shape": shape,
        "kernel_us": kernel_s * 1e6,
        "floor_us": floor_us,
    }


def measure(model, rounds, round_s, warmup_steps):
    """One model size's rows: dicts of variant, label, kernels, shape, kernel_us, floor_us."""
    hidden, batch = MODELS[model]
    results = []
    for variant in ("adam", "momentum", "sgd"):
        with recorded(variant, hidden, batch, warmup_steps) as (recorder, step_s):
            calls = recorder.calls
            for row in rows_of(variant, calls):
                floor = row.bind()
                check(row, floor, calls)
                row_calls = [calls[n] for n in row.names]
                kernel_s, floor_s = paired(_caller(row_calls), floor, rounds, round_s)
                results.append(_result(variant, row.label, _kernels(row_calls), row.shape, kernel_s, floor_s))
            kernel_s, _ = paired(_caller(recorder.sequence), None, rounds, round_s)
            kernels = _kernels(recorder.sequence)
            results.append(_result(variant, "all kernels of the step", kernels, "", kernel_s, None))
        results.append(_result(variant, "Session.run (the step)", "", "", step_s, None))
    return results


# -- output ---------------------------------------------------------------------------------------------
def environment():
    """What the numbers depend on: versions, BLAS (as threadpoolctl reports it, inside the limit)."""
    blas = [
        f"{i['internal_api']} {i['version']} ({i.get('architecture')} kernels, {i['num_threads']} thread)"
        for i in threadpool_info()
        if i["user_api"] == "blas"
    ]
    env = ", ".join(f"{k}={os.environ.get(k, '(unset)')}" for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"))
    checkout = os.path.dirname(os.path.dirname(tf.__file__))
    return (
        f"nbdist {tf.__version__} from {checkout}, numpy {np.__version__}, "
        f"Python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} CPUs, "
        f"load average {os.getloadavg()[0]:.2f}\n"
        f"BLAS: {'; '.join(blas) or 'none found'}, limited to 1 thread by threadpoolctl; {env}"
    )


def _fmt_us(us):
    return "" if us is None else f"{us:,.1f}" if us < 1000 else f"{us:,.0f}"


def _fmt_ratio(kernel_us, floor_us):
    return "" if floor_us is None else f"{kernel_us / floor_us:.2f}x"


def _both(before, after):
    return after if before == after else f"{before} → {after}"


def table(results, before=None):
    """Markdown rows of one model's results (with `before`, an earlier run's, side by side)."""
    old = {(r["variant"], r["label"]): r for r in before or ()}
    head = ["variant", "kernel", "nbdist kernels", "shape", "nbdist µs", "numpy floor µs", "ratio"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in results:
        cells = [
            r["variant"],
            r["label"],
            r["kernels"],
            r["shape"],
            _fmt_us(r["kernel_us"]),
            _fmt_us(r["floor_us"]),
            _fmt_ratio(r["kernel_us"], r["floor_us"]),
        ]
        b = old.get((r["variant"], r["label"]))
        if b is not None:
            then = [
                b["kernels"],
                b["shape"],
                _fmt_us(b["kernel_us"]),
                _fmt_us(b["floor_us"]),
                _fmt_ratio(b["kernel_us"], b["floor_us"]),
            ]
            cells[2:] = [_both(x, y) for x, y in zip(then, cells[2:])]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description="nbdist kernels on realistic shapes against numpy")
    parser.add_argument("--models", nargs="+", choices=sorted(MODELS), default=list(MODELS))
    parser.add_argument("--rounds", type=int, default=41, help="alternating rounds per row")
    parser.add_argument("--round-ms", type=float, default=2.0, help="length of one round")
    parser.add_argument("--warmup", type=int, default=5, help="training steps before recording")
    parser.add_argument("--json", help="write the results to this file")
    parser.add_argument("--before", help="an earlier run's --json file, shown side by side")
    args = parser.parse_args(argv)
    before = {}
    if args.before:
        with open(args.before) as f:
            before = json.load(f)["models"]
    with threadpool_limits(limits=1, user_api="blas"), np.errstate(all="ignore"):  # (as the executor)
        header = environment()
        print(f"$ python {' '.join(sys.argv)}\n{header}")
        print(f"median of {args.rounds} alternating rounds of ~{args.round_ms:g} ms per row\n")
        models = {}
        for model in args.models:
            models[model] = measure(model, args.rounds, args.round_ms / 1e3, args.warmup)
            hidden, batch = MODELS[model]
            print(f"{model}: 784 → {hidden} → 10, batch {batch}\n")
            print(table(models[model], before.get(model)), end="\n\n", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"environment": header, "argv": sys.argv, "models": models}, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1:])
