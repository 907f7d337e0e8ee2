"""`tf.train`: optimizers, global step, checkpoints, monitored sessions and hooks, and (lazily)
the distributed runtime's entry points."""

from nbdist._facade import unsupported as _unsupported
from nbdist.ops.example_protos import (
    BytesList,
    Example,
    Feature,
    FeatureList,
    FeatureLists,
    Features,
    FloatList,
    Int64List,
    SequenceExample,
)
from nbdist.train import in_graph  # nbdist addition: tf.train.in_graph.replicate, average_gradients
from nbdist.train.adadelta import AdadeltaOptimizer
from nbdist.train.adagrad import AdagradOptimizer
from nbdist.train.adagrad_da import AdagradDAOptimizer
from nbdist.train.adam import AdamOptimizer
from nbdist.train.basic_session_run_hooks import (
    CheckpointSaverHook,
    CheckpointSaverListener,
    FinalOpsHook,
    LoggingTensorHook,
    NanLossDuringTrainingError,
    NanTensorHook,
    SecondOrStepTimer,
    StepCounterHook,
    StopAtStepHook,
    SummarySaverHook,
)
from nbdist.train.checkpoint_management import (
    checkpoint_exists,
    generate_checkpoint_state_proto,
    get_checkpoint_mtimes,
    get_checkpoint_state,
    latest_checkpoint,
    remove_checkpoint,
    update_checkpoint_state,
)
from nbdist.train.checkpoint_utils import NewCheckpointReader, list_variables, load_checkpoint, load_variable
from nbdist.train.coordinator import Coordinator, LooperThread
from nbdist.train.device_setter import replica_device_setter
from nbdist.train.ftrl import FtrlOptimizer
from nbdist.train.gradient_descent import GradientDescentOptimizer
from nbdist.train.graph_io import summary_iterator, write_graph
from nbdist.train.input import (
    batch,
    batch_join,
    input_producer,
    limit_epochs,
    match_filenames_once,
    maybe_batch,
    maybe_batch_join,
    maybe_shuffle_batch,
    maybe_shuffle_batch_join,
    range_input_producer,
    shuffle_batch,
    shuffle_batch_join,
    slice_input_producer,
    string_input_producer,
)
from nbdist.train.learning_rate_decay import (
    cosine_decay,
    cosine_decay_restarts,
    exponential_decay,
    inverse_time_decay,
    linear_cosine_decay,
    natural_exp_decay,
    noisy_linear_cosine_decay,
    piecewise_constant,
    piecewise_constant_decay,
    polynomial_decay,
)
from nbdist.train.loops import FeedFnHook, GlobalStepWaiterHook, basic_train_loop, checkpoints_iterator
from nbdist.train.meta_graph import export_meta_graph
from nbdist.train.meta_graph_import import import_meta_graph
from nbdist.train.momentum import MomentumOptimizer
from nbdist.train.monitored_session import (
    ChiefSessionCreator,
    MonitoredSession,
    MonitoredTrainingSession,
    SessionCreator,
    SingularMonitoredSession,
    WorkerSessionCreator,
)
from nbdist.train.moving_averages import ExponentialMovingAverage
from nbdist.train.optimizer import Optimizer
from nbdist.train.proximal import ProximalAdagradOptimizer, ProximalGradientDescentOptimizer
from nbdist.train.queue_runner import QueueRunner, add_queue_runner, start_queue_runners
from nbdist.train.report_hook import ReportHook
from nbdist.train.rmsprop import RMSPropOptimizer
from nbdist.train.saver import Saver, SaverDef
from nbdist.train.scaffold import Scaffold
from nbdist.train.session_manager import SessionManager
from nbdist.train.session_run_hook import SessionRunArgs, SessionRunContext, SessionRunHook, SessionRunValues
from nbdist.train.supervisor import Supervisor
from nbdist.train.sync_replicas_optimizer import SyncReplicasOptimizer
from nbdist.train.training_util import (
    assert_global_step,
    create_global_step,
    get_global_step,
    get_or_create_global_step,
    global_step,
)
from nbdist.train.warm_starting import VocabInfo, init_from_checkpoint, warm_start

__all__ = [
    "AdadeltaOptimizer",
    "AdagradDAOptimizer",
    "AdagradOptimizer",
    "AdamOptimizer",
    "BytesList",
    "CheckpointSaverHook",
    "CheckpointSaverListener",
    "ChiefSessionCreator",
    "ClusterDef",
    "ClusterSpec",
    "Coordinator",
    "Example",
    "ExponentialMovingAverage",
    "Feature",
    "FeatureList",
    "FeatureLists",
    "Features",
    "FeedFnHook",
    "FinalOpsHook",
    "FloatList",
    "FtrlOptimizer",
    "GlobalStepWaiterHook",
    "GradientDescentOptimizer",
    "Int64List",
    "JobDef",
    "LoggingTensorHook",
    "LooperThread",
    "MomentumOptimizer",
    "MonitoredSession",
    "MonitoredTrainingSession",
    "NanLossDuringTrainingError",
    "NanTensorHook",
    "NewCheckpointReader",
    "Optimizer",
    "ProximalAdagradOptimizer",
    "ProximalGradientDescentOptimizer",
    "QueueRunner",
    "RMSPropOptimizer",
    "ReportHook",
    "Saver",
    "SaverDef",
    "Scaffold",
    "SecondOrStepTimer",
    "SequenceExample",
    "Server",
    "ServerDef",
    "SessionCreator",
    "SessionManager",
    "SessionRunArgs",
    "SessionRunContext",
    "SessionRunHook",
    "SessionRunValues",
    "SingularMonitoredSession",
    "StepCounterHook",
    "StopAtStepHook",
    "SummarySaverHook",
    "Supervisor",
    "SyncReplicasOptimizer",
    "VocabInfo",
    "WorkerSessionCreator",
    "add_queue_runner",
    "assert_global_step",
    "basic_train_loop",
    "batch",
    "batch_join",
    "checkpoint_exists",
    "checkpoints_iterator",
    "cosine_decay",
    "cosine_decay_restarts",
    "create_global_step",
    "exponential_decay",
    "export_meta_graph",
    "generate_checkpoint_state_proto",
    "get_checkpoint_mtimes",
    "get_checkpoint_state",
    "get_global_step",
    "get_or_create_global_step",
    "global_step",
    "import_meta_graph",
    "init_from_checkpoint",
    "input_producer",
    "inverse_time_decay",
    "latest_checkpoint",
    "limit_epochs",
    "linear_cosine_decay",
    "list_variables",
    "load_checkpoint",
    "load_variable",
    "match_filenames_once",
    "maybe_batch",
    "maybe_batch_join",
    "maybe_shuffle_batch",
    "maybe_shuffle_batch_join",
    "natural_exp_decay",
    "noisy_linear_cosine_decay",
    "piecewise_constant",
    "piecewise_constant_decay",
    "polynomial_decay",
    "range_input_producer",
    "remove_checkpoint",
    "replica_device_setter",
    "shuffle_batch",
    "shuffle_batch_join",
    "slice_input_producer",
    "start_queue_runners",
    "string_input_producer",
    "summary_iterator",
    "update_checkpoint_state",
    "warm_start",
    "write_graph",
]


# nbdist's additions beside TF's names (docs/api.md lists them; the parity test allows them).
_NBDIST_ADDITIONS = ("ReportHook",)

_RUNTIME = {
    "Server": ("nbdist.runtime.server_lib", "Server"),
    "ServerDef": ("nbdist.runtime.server_lib", "ServerDef"),
    "ClusterSpec": ("nbdist.runtime.cluster", "ClusterSpec"),
    "ClusterDef": ("nbdist.runtime.cluster_def", "ClusterDef"),
    "JobDef": ("nbdist.runtime.cluster_def", "JobDef"),
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
