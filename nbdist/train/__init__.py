"""`tf.train`: optimizers, global step, and (lazily) the distributed runtime's entry points."""

from nbdist._facade import unsupported as _unsupported
from nbdist.train.adam import AdamOptimizer
from nbdist.train.device_setter import replica_device_setter
from nbdist.train.gradient_descent import GradientDescentOptimizer
from nbdist.train.momentum import MomentumOptimizer
from nbdist.train.optimizer import Optimizer
from nbdist.train.queue_runner import QueueRunner, add_queue_runner, start_queue_runners
from nbdist.train.sync_replicas_optimizer import SyncReplicasOptimizer
from nbdist.train.training_util import (
    assert_global_step,
    create_global_step,
    get_global_step,
    get_or_create_global_step,
    global_step,
)

__all__ = [
    "AdamOptimizer",
    "ClusterSpec",
    "GradientDescentOptimizer",
    "MomentumOptimizer",
    "Optimizer",
    "QueueRunner",
    "Server",
    "SyncReplicasOptimizer",
    "add_queue_runner",
    "assert_global_step",
    "create_global_step",
    "get_global_step",
    "get_or_create_global_step",
    "global_step",
    "replica_device_setter",
    "start_queue_runners",
]


_RUNTIME = {
    "Server": ("nbdist.runtime.server", "Server"),
    "ClusterSpec": ("nbdist.runtime.cluster", "ClusterSpec"),
}


def __getattr__(name):
    # The distributed runtime (zmq, msgpack) loads only when a program asks for it.
    if name in _RUNTIME:
        import importlib  # noqa: PLC0415

        module, attr = _RUNTIME[name]
        value = getattr(importlib.import_module(module), attr)
        globals()[name] = value
        return value
    return _unsupported("tf.train", name)
