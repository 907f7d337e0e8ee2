"""Synchronous training of an embedding table (sparse gradients) with moving averages.

Each worker is its own client: the table lives on the ps (`replica_device_setter`), each
step looks up a batch of ids, `SyncReplicasOptimizer` aggregates the workers' `IndexedSlices`
in a `SparseConditionalAccumulator` and the chief applies them and the moving average.
Prints one JSON line: the table's and the average's largest error against the true table.
"""

import argparse
import json
import sys

import numpy as np

import nbdist as tf

ROWS, DIM, BATCH = 50, 8, 16


def main(argv):
    p = argparse.ArgumentParser()
    for flag in ("--ps_hosts", "--worker_hosts", "--job_name"):
        p.add_argument(flag, required=True)
    p.add_argument("--task_index", type=int, required=True)
    p.add_argument("--existing_servers", action="store_true")
    p.add_argument("--train_steps", type=int, default=150)
    args = p.parse_args(argv)
    workers = args.worker_hosts.split(",")
    cluster = tf.train.ClusterSpec({"ps": args.ps_hosts.split(","), "worker": workers})
    is_chief = args.task_index == 0
    true_table = np.random.default_rng(0).normal(size=(ROWS, DIM)).astype(np.float32)
    data = np.random.default_rng(100 + args.task_index)

    device = tf.train.replica_device_setter(
        worker_device=f"/job:worker/task:{args.task_index}", cluster=cluster
    )
    with tf.device(device):
        step = tf.train.get_or_create_global_step()
        table = tf.get_variable("table", [ROWS, DIM], initializer=tf.zeros_initializer())
        ids = tf.placeholder(tf.int32, [BATCH], name="ids")
        targets = tf.placeholder(tf.float32, [BATCH, DIM], name="targets")
        rows = tf.nn.embedding_lookup(table, ids)
        loss = tf.reduce_sum(tf.square(rows - targets)) / BATCH
        ema = tf.train.ExponentialMovingAverage(0.9, num_updates=step)
        opt = tf.train.SyncReplicasOptimizer(
            tf.train.GradientDescentOptimizer(1.0),
            replicas_to_aggregate=len(workers),
            variable_averages=ema,
            variables_to_average=[table],
        )
        train_op = opt.minimize(loss, global_step=step)
    hooks = [opt.make_session_run_hook(is_chief), tf.train.StopAtStepHook(last_step=args.train_steps)]
    out = None
    with tf.train.MonitoredTrainingSession(
        master="grpc://" + workers[args.task_index], is_chief=is_chief, hooks=hooks
    ) as sess:
        while not sess.should_stop():
            batch = data.integers(0, ROWS, BATCH)
            out = sess.run(
                {"train": train_op, "table": table, "average": ema.average(table), "step": step},
                {ids: batch, targets: true_table[batch]},
            )
    if out is None:  # joined after the last step (the chief can aggregate its own gradients)
        print(json.dumps({"task_index": args.task_index, "step": None}), flush=True)
        return
    print(
        json.dumps(
            {
                "task_index": args.task_index,
                "step": int(out["step"]),
                "table_error": float(np.abs(out["table"] - true_table).max()),
                "average_error": float(np.abs(out["average"] - true_table).max()),
                "accumulator": [
                    op.type for op in tf.get_default_graph().get_operations() if "Accumulator" in op.type
                ],
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    main(sys.argv[1:])
