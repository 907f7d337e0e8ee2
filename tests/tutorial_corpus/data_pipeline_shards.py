"""Pattern: the input-pipeline guide's between-graph trainer - `tf.data.TextLineDataset` over
CSV files, each worker reading its own shard (`shard(num_workers, task_index)`), `map(decode_csv)`,
`shuffle`, `repeat`, `batch`, a one-shot iterator feeding the model in a `MonitoredTrainingSession`.

One process per task; the ps tasks only serve (``server.join()``). The data are CSV files of
``x0,x1,x2,x3,y`` rows (``y = x . TRUE_W + 1``) in ``--data_dir``, written by whichever process
gets there first (same bytes from every task: written to a temporary name, then renamed; by
default a fixed directory under the system's temporary one, so runs reuse it). Each
worker builds the input pipeline as TF's guides write it::

    tf.data.TextLineDataset(files).shard(num_workers, task_index)
        .map(parse_csv).shuffle(256, seed=task_index).repeat().batch(32)

and trains a linear regression (`tf.nn.xw_plus_b`, Adagrad) under
`replica_device_setter(cluster=...)` in a `MonitoredTrainingSession` until
`StopAtStepHook(last_step=--train_steps)`. Each worker then measures R^2 of the shared model on
held-out rows (target >= 0.99) and prints one JSON line (the corpus' format, corpus.py).

``--tf`` runs the same program on real TensorFlow; nothing else differs::

    python data_pipeline.py --job_name=ps --task_index=0 --ps_hosts=localhost:2222 \
        --worker_hosts=localhost:2223,localhost:2224 --data_dir=/tmp/data [--tf]
    python data_pipeline.py --job_name=worker --task_index=0 ...   # and 1
"""

import json
import os
import sys
import tempfile

import numpy as np

if "--tf" in sys.argv:
    sys.argv.remove("--tf")
    import tensorflow.compat.v1 as tf

    tf.disable_v2_behavior()
else:
    import nbdist as tf

flags = tf.app.flags
flags.DEFINE_string("ps_hosts", "", "Comma-separated list of hostname:port pairs")
flags.DEFINE_string("worker_hosts", "", "Comma-separated list of hostname:port pairs")
flags.DEFINE_string("job_name", "", "One of 'ps', 'worker'")
flags.DEFINE_integer("task_index", 0, "Index of task within the job")
flags.DEFINE_integer("train_steps", 200, "Global step to stop at")
flags.DEFINE_string(
    "data_dir",
    os.path.join(tempfile.gettempdir(), "nbdist-corpus-data_pipeline_shards"),
    "Where the CSV files are (written there if absent)",
)
flags.DEFINE_integer("batch_size", 32, "Rows per batch")
FLAGS = flags.FLAGS

FEATURES = 4
FILES = 4
ROWS_PER_FILE = 250
TRUE_W = np.array([[2.0], [-1.0], [0.5], [3.0]], np.float32)
TARGET_R2 = 0.99


def write_files(data_dir):
    """The CSV files (the same bytes from every process; each appears whole, by a rename)."""
    os.makedirs(data_dir, exist_ok=True)
    rng = np.random.RandomState(7)
    paths = []
    for i in range(FILES):
        xs = rng.normal(size=(ROWS_PER_FILE, FEATURES)).astype(np.float32)
        rows = np.hstack([xs, xs @ TRUE_W + 1.0])
        path = os.path.join(data_dir, f"part-{i}.csv")
        if not os.path.exists(path):
            tmp = f"{path}.{os.getpid()}.tmp"
            with open(tmp, "w") as f:
                f.writelines(",".join(f"{v:.5f}" for v in row) + "\n" for row in rows)
            os.replace(tmp, path)
        paths.append(path)
    return paths


def parse_csv(line):
    columns = tf.decode_csv(line, [[0.0]] * (FEATURES + 1))
    return tf.stack(columns[:FEATURES]), tf.stack(columns[FEATURES:])


def main(_):
    ps_hosts, worker_hosts = FLAGS.ps_hosts.split(","), FLAGS.worker_hosts.split(",")
    cluster = tf.train.ClusterSpec({"ps": ps_hosts, "worker": worker_hosts})
    config = tf.ConfigProto(device_filters=["/job:ps", f"/job:worker/task:{FLAGS.task_index}"])
    server = tf.train.Server(cluster, job_name=FLAGS.job_name, task_index=FLAGS.task_index, config=config)
    if FLAGS.job_name == "ps":
        server.join()
        return
    files = write_files(FLAGS.data_dir)
    is_chief = FLAGS.task_index == 0

    with tf.device(
        tf.train.replica_device_setter(worker_device=f"/job:worker/task:{FLAGS.task_index}", cluster=cluster)
    ):
        global_step = tf.train.get_or_create_global_step()
        dataset = (
            tf.data.TextLineDataset(files)
            .shard(len(worker_hosts), FLAGS.task_index)
            .map(parse_csv)
            .shuffle(256, seed=FLAGS.task_index)
            .repeat()
            .batch(FLAGS.batch_size)
        )
        x, y = dataset.make_one_shot_iterator().get_next()
        w = tf.get_variable("w", [FEATURES, 1], initializer=tf.zeros_initializer())
        b = tf.get_variable("b", [1], initializer=tf.zeros_initializer())
        loss = tf.reduce_mean(tf.square(tf.nn.xw_plus_b(x, w, b) - y))
        train_op = tf.train.AdagradOptimizer(0.5).minimize(loss, global_step=global_step)

    sess = tf.train.MonitoredTrainingSession(
        master=server.target,
        is_chief=is_chief,
        hooks=[tf.train.StopAtStepHook(last_step=FLAGS.train_steps)],
        config=config,
        save_checkpoint_secs=None,
        log_step_count_steps=0,
        stop_grace_period_secs=5,
        max_wait_secs=60,
    )
    losses = []
    while not sess.should_stop():
        _, batch_loss = sess.run([train_op, loss])
        losses.append(float(batch_loss))
    sess.close()
    held_out = np.random.RandomState(99).normal(size=(200, FEATURES)).astype(np.float32)
    truth = held_out @ TRUE_W + 1.0
    with tf.Session(
        server.target, config=config
    ) as plain:  # the trained shared model, after the hook stopped
        w_value, b_value = plain.run([w, b])
    r2 = 1.0 - float(np.mean((held_out @ w_value + b_value - truth) ** 2) / np.var(truth))
    result = {
        "deterministic": False,
        "task_index": FLAGS.task_index,
        "local_steps": len(losses),
        "first_loss": float(np.mean(losses[:3])) if losses else None,
        "last_loss": float(np.mean(losses[-3:])) if losses else None,
        "values": {"held_out_r2": r2},
        "target": {"held_out_r2": TARGET_R2},
    }
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    tf.app.run()
