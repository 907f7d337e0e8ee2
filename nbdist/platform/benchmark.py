"""`tf.test.Benchmark`: timing code and reporting the result as TF 1.x's benchmarks do.

A benchmark is a method named ``benchmark*`` of a `Benchmark` subclass; it calls
`report_benchmark(...)` (or `run_op_benchmark(sess, op)`, which times `sess.run`). Each
report is logged at INFO (``Benchmark [Class.method] iters: ..., wall_time: ...``) and,
when ``$TEST_REPORT_FILE_PREFIX`` is set, written to ``<prefix><name>`` as one JSON object
(TF writes a `BenchmarkEntries` protocol buffer there; nbdist has no protobufs).
``python file.py --benchmarks=REGEX`` (`tf.test.main`) runs the matching benchmarks
instead of the tests.
"""

import inspect
import json
import os
import re
import time

import numpy as np

from nbdist.platform import tf_logging

_BENCHMARK_CLASSES = []


def _benchmark_name(instance):
    """``Class.method`` of the ``benchmark*`` method of `instance` on the call stack."""
    for frame_info in inspect.stack()[2:]:
        if frame_info.frame.f_locals.get("self") is instance and frame_info.function.startswith("benchmark"):
            return f"{type(instance).__name__}.{frame_info.function}"
    return type(instance).__name__


class Benchmark:
    """Base class of benchmarks; subclasses are found by `tf.test.main(--benchmarks=...)`."""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        _BENCHMARK_CLASSES.append(cls)

    def report_benchmark(
        self,
        iters=None,
        cpu_time=None,
        wall_time=None,
        throughput=None,
        extras=None,
        name=None,
        metrics=None,
    ):
        """Reports one benchmark result (times in seconds); see the module docstring."""
        name = name or _benchmark_name(self)
        entry = {
            "name": name,
            "iters": iters,
            "cpu_time": cpu_time,
            "wall_time": wall_time,
            "throughput": throughput,
            "extras": dict(extras or {}),
            "metrics": list(metrics or []),
        }
        tf_logging.info(
            "Benchmark [%s] iters: %d, wall_time: %g, cpu_time: %g, throughput: %g, extras: %s",
            name,
            -1 if iters is None else iters,
            -1 if wall_time is None else wall_time,
            -1 if cpu_time is None else cpu_time,
            -1 if throughput is None else throughput,
            entry["extras"] or "None",
        )
        prefix = os.environ.get("TEST_REPORT_FILE_PREFIX")
        if prefix:
            path = f"{prefix}{name.replace('/', '__')}"
            with open(path, "w") as f:
                json.dump(entry, f, default=float)

    def run_op_benchmark(
        self,
        sess,
        op_or_tensor,
        feed_dict=None,
        burn_iters=2,
        min_iters=10,
        store_trace=False,
        store_memory_usage=True,
        name=None,
        extras=None,
        mbs=0,
    ):
        """Runs `op_or_tensor` `burn_iters` times untimed, then `min_iters` times timed.

        Reports and returns ``{"name", "iters", "wall_time", "extras"}``; `wall_time` is the
        median of the timed runs (seconds), as TF's. `store_trace` and
        `store_memory_usage` are accepted; `mbs` (megabytes moved per run) adds a
        ``throughput`` in MB/s.
        """
        for _ in range(burn_iters):
            sess.run(op_or_tensor, feed_dict=feed_dict)
        deltas = []
        for _ in range(min_iters):
            start = time.perf_counter()
            sess.run(op_or_tensor, feed_dict=feed_dict)
            deltas.append(time.perf_counter() - start)
        wall_time = float(np.median(deltas))
        throughput = mbs / wall_time if mbs and wall_time > 0 else None
        name = name or _benchmark_name(self)
        self.report_benchmark(
            iters=min_iters, wall_time=wall_time, throughput=throughput, extras=extras, name=name
        )
        return {"name": name, "iters": min_iters, "wall_time": wall_time, "extras": dict(extras or {})}


def run_benchmarks(regex):
    """Runs every ``Class.benchmark*`` method whose name matches `regex` (search)."""
    pattern = re.compile(regex)
    for cls in _BENCHMARK_CLASSES:
        methods = [m for m in sorted(dir(cls)) if m.startswith("benchmark") and callable(getattr(cls, m))]
        for method in methods:
            if pattern.search(f"{cls.__module__}.{cls.__name__}.{method}"):
                getattr(cls(), method)()


def benchmark_filter(argv):
    """The regex of ``--benchmarks=R`` / ``--benchmark_filter=R`` in `argv` (removed), or None."""
    for arg in list(argv):
        for flag in ("--benchmarks=", "--benchmark_filter="):
            if arg.startswith(flag):
                argv.remove(arg)
                return arg[len(flag) :]
    return None
