"""`tf.train.SyncReplicasOptimizer`: synchronous data parallelism over between-graph replicas.

The mechanism, as in TF (see ``shared/docs/training-design.md``):

1. Each worker's `train_op` puts its gradient of every variable into a
   `ConditionalAccumulator` (a `SparseConditionalAccumulator` for an `IndexedSlices`
   gradient, e.g. an embedding's) on that variable's ps (``shared_name = var.name +
   "/grad_accum"``), stamped with its *local step* — the global step it read. A gradient
   stamped with an older step than the accumulator's is dropped there.
2. The chief's sync op (run by a `QueueRunner` thread on the chief) takes the mean of
   `replicas_to_aggregate` fresh gradients from every accumulator, applies them with the
   wrapped optimizer (incrementing the global step) and puts `tokens_per_step` copies of the
   new global step into the token queue (on the global step's ps).
3. After its `apply_grad`s, each worker's `train_op` dequeues one token into its local step:
   the barrier that keeps replicas within one step of each other.

With ``total_num_replicas > replicas_to_aggregate`` the slowest workers are *backup
workers*: their late gradients are dropped by rule 1. TF drops them silently; nbdist
counts them (`tf.train.staleness.dropped_of(train_op)` is 1 when this worker's gradient
of a step was dropped).

Where TF hangs, nbdist ends cleanly: when the chief's hook ends (its session closes or
`StopAtStepHook` stops it), it closes the token queue (cancelling pending enqueues) and
the accumulators, so the other workers' blocked `dequeue` ends with `OutOfRangeError`,
which `MonitoredTrainingSession`, `Supervisor` and `Coordinator` treat as a clean stop.
"""

import logging

from nbdist.graph.graph import GraphKeys, get_default_graph
from nbdist.ops import array_ops, control_flow_ops, math_ops, reduction_ops, state_ops
from nbdist.ops.accumulator_ops import ConditionalAccumulator, SparseConditionalAccumulator
from nbdist.ops.indexed_slices import IndexedSlices
from nbdist.ops.queue_ops import FIFOQueue
from nbdist.train import staleness
from nbdist.train.optimizer import Optimizer
from nbdist.train.queue_runner import QueueRunner

_log = logging.getLogger(__name__)


def _new_step(update_op, global_step):
    if update_op.type == "AssignAdd" and update_op.outputs:
        return update_op.outputs[0]
    return global_step


class SyncReplicasOptimizer(Optimizer):
    """Wraps `opt` to aggregate `replicas_to_aggregate` gradients per global step.

    Args:
        opt: the optimizer that applies the averaged gradients (on the chief).
        replicas_to_aggregate: gradients averaged per variable and step.
        total_num_replicas: workers that compute gradients (default: `replicas_to_aggregate`);
            more than `replicas_to_aggregate` means backup workers.
        variable_averages: an `ExponentialMovingAverage` updated after each step, or None.
        variables_to_average: the variables it averages.
        use_locking: accepted for TF's signature.
        name: the name scope of the ops it adds.

    Raises:
        ValueError: (from `apply_gradients`) without a `global_step` or with no gradients.
    """

    def __init__(
        self,
        opt,
        replicas_to_aggregate,
        total_num_replicas=None,
        variable_averages=None,
        variables_to_average=None,
        use_locking=False,
        name="sync_replicas",
    ):
        super().__init__(use_locking, name)
        if total_num_replicas is None:
            total_num_replicas = replicas_to_aggregate
        self._opt = opt
        self._replicas_to_aggregate = int(replicas_to_aggregate)
        self._total_num_replicas = int(total_num_replicas)
        self._tokens_per_step = max(self._total_num_replicas, self._replicas_to_aggregate)
        self._variable_averages = variable_averages
        self._variables_to_average = variables_to_average
        self._gradients_applied = False
        self._global_step = None
        self._sync_token_queue = None
        self._chief_queue_runner = None
        self._accumulator_list = []
        self._local_step = None
        self.local_step_init_op = None
        self.chief_init_op = None
        self.ready_for_local_init_op = None
        _log.info(
            "SyncReplicasOptimizer: replicas_to_aggregate=%d; total_num_replicas=%d",
            self._replicas_to_aggregate,
            self._total_num_replicas,
        )

    def compute_gradients(self, *args, **kwargs):
        """The wrapped optimizer's gradients (each worker computes its own)."""
        return self._opt.compute_gradients(*args, **kwargs)

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        """Builds the accumulators, the chief's sync op and the token queue; returns `train_op`.

        `train_op` (run by every worker) applies this worker's gradients to the
        accumulators and waits for a token: it returns once the chief applied the step.
        """
        grads_and_vars = list(grads_and_vars)
        if not grads_and_vars:
            raise ValueError("Must supply at least one variable")
        if global_step is None:
            raise ValueError("Global step is required to check staleness")
        self._global_step = global_step
        graph = get_default_graph()
        local_anchor = control_flow_ops.no_op(name="local_anchor")  # on this worker (device setter)
        with graph.colocate_with(local_anchor):
            self._local_step = state_ops.Variable(
                0,
                trainable=False,
                collections=[GraphKeys.LOCAL_VARIABLES],
                dtype=global_step.dtype,
                name="sync_rep_local_step",
            )
        self.local_step_init_op = state_ops.assign(self._local_step, global_step)
        chief_init_ops = [self.local_step_init_op]
        self.ready_for_local_init_op = state_ops.report_uninitialized_variables(state_ops.global_variables())

        with graph.name_scope(None), graph.name_scope(self._name):
            train_ops, aggregated, var_list, accepted = self._accumulate(grads_and_vars)
            with graph.device(global_step.device), graph.name_scope(None):
                update_op = self._opt.apply_gradients(zip(aggregated, var_list), global_step)
                self._sync_token_queue = FIFOQueue(
                    -1, global_step.dtype, shapes=(), name="sync_token_q", shared_name="sync_token_q"
                )
                # The queue runner's own queue (TF's dummy_queue): closing it never touches the
                # token queue, which lives on a ps and is shared by every worker.
                dummy_queue = FIFOQueue(1, "int32", shapes=(), name="dummy_queue", shared_name="dummy_queue")
                with graph.control_dependencies(train_ops):
                    token = self._sync_token_queue.dequeue()
                train_op = state_ops.assign(self._local_step, token)
                with graph.control_dependencies([update_op]):
                    # The tokens carry the *new* global step. TF reads it through the variable's
                    # snapshot, which aliases the variable's buffer and so sees the in-place
                    # increment; nbdist's reads are copy-on-write snapshots, so the increment's
                    # own output (the new value) is used instead.
                    tokens = array_ops.fill([self._tokens_per_step], _new_step(update_op, global_step))
                    sync_op = self._sync_token_queue.enqueue_many((tokens,))
                if self._variable_averages is not None:
                    with graph.control_dependencies([sync_op]):
                        sync_op = self._variable_averages.apply(self._variables_to_average)
                self._sync_op = sync_op
                self._dummy_queue = dummy_queue

            for accum, device in self._accumulator_list:
                with graph.device(device):
                    chief_init_ops.append(accum.set_global_step(global_step, name="SetGlobalStep"))
            self.chief_init_op = control_flow_ops.group(*chief_init_ops, name="chief_init")
            with graph.device(global_step.device):
                self._close_ops = [self._sync_token_queue.close(cancel_pending_enqueues=True)] + [
                    accum.close() for accum, _ in self._accumulator_list
                ]
            # When the chief's coordinator stops (its session closes, for whatever reason), the
            # queue runner's cancel op ends synchronous training for everyone: the token queue
            # and the accumulators close (TF cancels only its dummy queue, and the chief's
            # take_grad and the other workers' dequeues then wait for ever).
            self._chief_queue_runner = QueueRunner(
                self._dummy_queue, [self._sync_op], cancel_op=self.get_close_op()
            )
        self._gradients_applied = True
        # 1 when this worker's gradient of the step came too late and was dropped, else 0.
        with graph.colocate_with(local_anchor):
            all_accepted = reduction_ops.reduce_all(array_ops.stack(accepted))
            dropped = math_ops.subtract(1, math_ops.cast(all_accepted, "int32"), name="dropped_gradients")
        staleness.record_dropped(train_op.op, dropped)
        return train_op

    def _accumulate(self, grads_and_vars):
        """One accumulator per variable, on its device: this worker's apply, the chief's take."""
        graph = get_default_graph()
        train_ops, aggregated, var_list, accepted = [], [], [], []
        for grad, var in grads_and_vars:
            var_list.append(var)
            if grad is None:
                aggregated.append(None)
                continue
            with graph.device(var.device):
                if isinstance(grad, IndexedSlices):  # only the touched rows travel and add up
                    accum = SparseConditionalAccumulator(
                        grad.dtype, shape=(), shared_name=var.name + "/grad_accum"
                    )
                    apply = accum.apply_indexed_slices_grad(grad, local_step=self._local_step)
                    aggregated.append(accum.take_indexed_slices_grad(self._replicas_to_aggregate))
                else:
                    accum = ConditionalAccumulator(
                        grad.dtype, shape=var.shape, shared_name=var.name + "/grad_accum"
                    )
                    apply = accum.apply_grad(grad, local_step=self._local_step)
                    aggregated.append(accum.take_grad(self._replicas_to_aggregate))
                train_ops.append(apply)
                accepted.append(apply.outputs[0])
                self._accumulator_list.append((accum, var.device))
        return train_ops, aggregated, var_list, accepted

    # -- what the hook and the chief use ---------------------------------------------------------
    def get_chief_queue_runner(self):
        """The `QueueRunner` that runs the sync op (start it on the chief only).

        Raises:
            ValueError: before `apply_gradients`.
        """
        if not self._gradients_applied:
            raise ValueError("Should be called after apply_gradients().")
        return self._chief_queue_runner

    def get_init_tokens_op(self, num_tokens=-1):
        """The op that seeds the token queue (run once, on the chief).

        Raises:
            ValueError: before `apply_gradients`, or for fewer tokens than the backup workers need.
        """
        if not self._gradients_applied:
            raise ValueError("get_init_tokens_op() should be called after apply_gradients().")
        tokens_needed = self._replicas_to_aggregate - self._total_num_replicas
        if num_tokens == -1:
            num_tokens = self._replicas_to_aggregate
        elif num_tokens < tokens_needed:
            raise ValueError(
                f"Too few tokens to finish the first step: {num_tokens} (given) vs {tokens_needed} (needed)"
            )
        graph = get_default_graph()
        if num_tokens > 0:
            with graph.device(self._global_step.device), graph.name_scope(None):
                tokens = array_ops.fill([num_tokens], self._global_step)
                return self._sync_token_queue.enqueue_many((tokens,))
        return control_flow_ops.no_op(name="no_init_tokens")

    def get_close_op(self):
        """nbdist: closes the token queue and the accumulators, ending every waiting replica."""
        return control_flow_ops.group(*self._close_ops, name="sync_replicas_close")

    def make_session_run_hook(self, is_chief, num_tokens=-1):
        """The hook `MonitoredTrainingSession` needs: local init, tokens, the chief's queue runner."""
        from nbdist.train.sync_replicas_hook import SyncReplicasOptimizerHook  # noqa: PLC0415

        return SyncReplicasOptimizerHook(self, is_chief, num_tokens)

    # -- delegated -------------------------------------------------------------------------------
    def get_slot(self, *args, **kwargs):
        return self._opt.get_slot(*args, **kwargs)

    def get_slot_names(self, *args, **kwargs):
        return self._opt.get_slot_names(*args, **kwargs)

    def variables(self):
        return self._opt.variables()

    def _apply_dense(self, grad, var):  # never called: apply_gradients is overridden
        raise TypeError("SyncReplicasOptimizer applies gradients through the optimizer it wraps")
