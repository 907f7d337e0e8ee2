"""A tutorial-style trainer with a queue-based input pipeline (TF 1.x's "Reading data" how-to).

One process per task; the ps only serves (``server.join()``). Each worker writes its own CSV
files (``x0,x1,x2,y`` with ``y = x . TRUE_W + 1``, a header line) into ``--data_dir``, then
reads them on its own device: `tf.train.string_input_producer(num_epochs=...)` ->
`tf.TextLineReader(skip_header_lines=1)` -> `tf.decode_csv` -> `tf.train.shuffle_batch`, and
fits a linear model whose variables live on the ps (`replica_device_setter`), asynchronously
(between-graph replication). With ``--format=tfrecord`` the files are TFRecord files of
`tf.train.Example`s (written with `tf.python_io.TFRecordWriter`), read with `tf.TFRecordReader`
and `tf.parse_single_example` instead. The loop is TF's standard one: a `Coordinator`,
`start_queue_runners`, ``while not coord.should_stop(): sess.run(train_op)`` until the input
ends with `OutOfRangeError` after ``--num_epochs``. Each worker prints one JSON line.

``--tf`` runs the same program on real TensorFlow; nothing else differs::

    python csv_queue_replica.py --job_name=ps --task_index=0 --ps_hosts=localhost:2222 \
        --worker_hosts=localhost:2223,localhost:2224 --data_dir=/tmp/csv [--tf]
    python csv_queue_replica.py --job_name=worker --task_index=0 ...   # and 1
"""

import json
import os
import sys
import time

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
flags.DEFINE_string("data_dir", "", "Where each worker writes its CSV files")
flags.DEFINE_integer("num_epochs", 3, "Passes over the files")
flags.DEFINE_integer("batch_size", 8, "Records per batch")
flags.DEFINE_string(
    "format", "csv", "csv (TextLineReader + decode_csv) or tfrecord (TFRecordReader + Example)"
)
FLAGS = flags.FLAGS

TRUE_W = np.array([[2.0], [-1.0], [0.5]], np.float32)
FILES, ROWS = 2, 32


def write_csv_files(task_index):
    rng = np.random.RandomState(10 + task_index)
    paths = []
    for f in range(FILES):
        xs = rng.uniform(-1, 1, size=(ROWS, 3)).astype(np.float32)
        ys = xs @ TRUE_W + 1.0
        path = os.path.join(FLAGS.data_dir, f"worker{task_index}_part{f}.csv")
        with open(path, "w") as out:
            out.write("x0,x1,x2,y\n")
            out.writelines(",".join(f"{v:.6f}" for v in row) + "\n" for row in np.hstack([xs, ys]))
        paths.append(path)
    return paths


def write_tfrecord_files(task_index):
    """The same rows as `write_csv_files`, as `tf.train.Example`s in TFRecord files."""
    rng = np.random.RandomState(10 + task_index)
    paths = []
    for f in range(FILES):
        xs = rng.uniform(-1, 1, size=(ROWS, 3)).astype(np.float32)
        ys = xs @ TRUE_W + 1.0
        path = os.path.join(FLAGS.data_dir, f"worker{task_index}_part{f}.tfrecord")
        with tf.python_io.TFRecordWriter(path) as writer:
            for x, y in zip(xs, ys):
                feature = {
                    "x": tf.train.Feature(float_list=tf.train.FloatList(value=x.tolist())),
                    "y": tf.train.Feature(float_list=tf.train.FloatList(value=y.tolist())),
                }
                writer.write(
                    tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()
                )
        paths.append(path)
    return paths


def read_record(filenames):
    """One (features [3], label [1]) record of the files the `filenames` queue names."""
    if FLAGS.format == "tfrecord":
        _, serialized = tf.TFRecordReader().read(filenames)
        parsed = tf.parse_single_example(
            serialized, {"x": tf.FixedLenFeature([3], tf.float32), "y": tf.FixedLenFeature([1], tf.float32)}
        )
        return parsed["x"], parsed["y"]
    _, line = tf.TextLineReader(skip_header_lines=1).read(filenames)
    x0, x1, x2, y = tf.decode_csv(line, [[0.0], [0.0], [0.0], [0.0]])
    return tf.stack([x0, x1, x2]), tf.expand_dims(y, 0)


def main(_):
    cluster = tf.train.ClusterSpec({"ps": FLAGS.ps_hosts.split(","), "worker": FLAGS.worker_hosts.split(",")})
    config = tf.ConfigProto(device_filters=["/job:ps", f"/job:worker/task:{FLAGS.task_index}"])
    server = tf.train.Server(cluster, job_name=FLAGS.job_name, task_index=FLAGS.task_index, config=config)
    if FLAGS.job_name == "ps":
        server.join()
        return
    is_chief = FLAGS.task_index == 0
    worker = f"/job:worker/task:{FLAGS.task_index}"

    with tf.device(worker):  # the input pipeline runs where the files are
        write = write_tfrecord_files if FLAGS.format == "tfrecord" else write_csv_files
        filenames = tf.train.string_input_producer(
            write(FLAGS.task_index), num_epochs=FLAGS.num_epochs, seed=FLAGS.task_index + 1
        )
        features, label = tf.train.shuffle_batch(
            list(read_record(filenames)),
            batch_size=FLAGS.batch_size,
            capacity=40,
            min_after_dequeue=10,
            seed=FLAGS.task_index + 1,
        )
    with tf.device(tf.train.replica_device_setter(worker_device=worker, cluster=cluster)):
        global_step = tf.train.get_or_create_global_step()
        w = tf.get_variable("w", [3, 1], initializer=tf.zeros_initializer())
        b = tf.get_variable("b", [1], initializer=tf.zeros_initializer())
        loss = tf.reduce_mean(tf.square(tf.matmul(features, w) + b - label))
        train_op = tf.train.GradientDescentOptimizer(0.2).minimize(loss, global_step=global_step)

    uninitialized = tf.report_uninitialized_variables(tf.global_variables())
    sess = tf.Session(server.target, config=config)
    if is_chief:
        sess.run(tf.global_variables_initializer())
    else:  # wait for the chief to initialize the shared model
        deadline = time.monotonic() + 60
        while len(sess.run(uninitialized)) and time.monotonic() < deadline:
            time.sleep(0.1)
    sess.run(tf.local_variables_initializer())  # the epoch counter (num_epochs)

    coord = tf.train.Coordinator()
    threads = tf.train.start_queue_runners(sess, coord)
    losses, records = [], 0
    try:
        while not coord.should_stop():
            _, batch_loss = sess.run([train_op, loss])
            losses.append(float(batch_loss))
            records += FLAGS.batch_size
    except tf.errors.OutOfRangeError:
        ended = "OutOfRangeError"
    else:
        ended = "should_stop"
    finally:
        coord.request_stop()
        coord.join(threads, stop_grace_period_secs=10)
    print(
        json.dumps(
            {
                "task_index": FLAGS.task_index,
                "local_steps": len(losses),
                "records": records,
                "ended": ended,
                "should_stop": coord.should_stop(),
                "first_loss": float(np.mean(losses[:2])),
                "last_loss": float(np.mean(losses[-2:])),
            }
        ),
        flush=True,
    )
    sess.close()


if __name__ == "__main__":
    tf.app.run()
