"""`tf.test`: what TF 1.x test files stand on.

`TestCase` (`nbdist.platform.test_util`), `main`, `Benchmark`, `get_temp_dir`,
`create_local_cluster` (in-process servers, as TF's), and the device queries a CPU-only
runtime answers (`is_gpu_available()` is False).
"""

import sys
import unittest
from unittest import mock

from nbdist.platform import benchmark as _benchmark
from nbdist.platform.benchmark import Benchmark
from nbdist.platform.graph_def_diff import assert_equal_graph_def
from nbdist.platform.test_helpers import (
    StubOutForTesting,
    benchmark_config,
    disable_with_predicate,
    is_built_with_rocm,
    is_built_with_xla,
    is_cpu_target_available,
    test_src_dir_path,
    with_eager_op_as_function,
)
from nbdist.platform.test_util import TestCase, get_temp_dir


def main(argv=None):
    """Runs the tests of the ``__main__`` module (unittest), or its benchmarks.

    ``--benchmarks=REGEX`` (also ``--benchmark_filter=``) runs the matching
    ``Class.benchmark*`` methods instead of the tests. Exits with unittest's status.
    """
    argv = list(sys.argv if argv is None else argv)
    regex = _benchmark.benchmark_filter(argv)
    if regex is not None:
        _benchmark.run_benchmarks(regex)
        return
    unittest.main(module="__main__", argv=argv)


def create_local_cluster(num_workers, num_ps, protocol="grpc", worker_config=None, ps_config=None):
    """Starts a cluster of in-process servers on localhost, as TF's `create_local_cluster`.

    Args:
        num_workers: tasks of job ``worker``.
        num_ps: tasks of job ``ps``.
        protocol: ``"grpc"`` (accepted; nbdist speaks ZeroMQ) or ``"zmq"``.
        worker_config, ps_config: `tf.ConfigProto` defaults for sessions on each job's masters.

    Returns:
        ``(workers, ps_servers)``: lists of started `tf.train.Server`; connect with
        ``tf.Session(workers[0].target)``. They stop when the process ends (or with
        ``server.stop()``).

    Raises:
        ValueError: a negative count.
    """
    from nbdist.runtime.net.samehost import free_ports  # noqa: PLC0415 - zmq loads only when a cluster starts
    from nbdist.runtime.server_lib import Server  # noqa: PLC0415

    if num_workers < 0 or num_ps < 0:
        raise ValueError(f"num_workers and num_ps must be >= 0, got {num_workers} and {num_ps}")
    ports = free_ports(num_workers + num_ps)
    cluster = {
        "worker": [f"localhost:{p}" for p in ports[:num_workers]],
        "ps": [f"localhost:{p}" for p in ports[num_workers:]],
    }
    workers = [
        Server(cluster, job_name="worker", task_index=i, protocol=protocol, config=worker_config)
        for i in range(num_workers)
    ]
    ps_servers = [
        Server(cluster, job_name="ps", task_index=i, protocol=protocol, config=ps_config)
        for i in range(num_ps)
    ]
    return workers, ps_servers


def is_gpu_available(cuda_only=False, min_cuda_compute_capability=None):
    """False: nbdist runs on CPUs."""
    return False


def gpu_device_name():
    """``""``: there is no GPU device."""
    return ""


def is_built_with_cuda():
    return False


def is_built_with_gpu_support():
    return False


__all__ = [
    "Benchmark",
    "StubOutForTesting",
    "TestCase",
    "assert_equal_graph_def",
    "benchmark_config",
    "create_local_cluster",
    "disable_with_predicate",
    "get_temp_dir",
    "gpu_device_name",
    "is_built_with_cuda",
    "is_built_with_gpu_support",
    "is_built_with_rocm",
    "is_built_with_xla",
    "is_cpu_target_available",
    "is_gpu_available",
    "main",
    "mock",
    "test_src_dir_path",
    "with_eager_op_as_function",
]


def __getattr__(name):
    if name in ("compute_gradient", "compute_gradient_error"):  # (ops load on first use)
        from nbdist.ops import gradient_checker  # noqa: PLC0415

        return getattr(gradient_checker, name)
    from nbdist._facade import unsupported  # noqa: PLC0415

    return unsupported("tf.test", name)
