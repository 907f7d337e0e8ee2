"""Pattern: distributed word2vec - TF's `word2vec_basic.py` made between-graph as in the distributed how-to.

Reproduces the program learners write when they take TF's `word2vec_basic.py` tutorial (a
skip-gram model: `generate_batch` sliding a `collections.deque` window over the word ids and
feeding ``train_inputs`` / ``train_labels`` placeholders, `tf.nn.embedding_lookup`,
`tf.nn.nce_loss` with its default log-uniform sampler, `GradientDescentOptimizer(1.0)`, and
the cosine-similarity nearest neighbours of a few "valid" words at the end) and run it
across a cluster the way the distributed how-to does: `tf.app.flags` for ``--ps_hosts``,
``--worker_hosts``, ``--job_name``, ``--task_index``; a `tf.train.Server` per process, the
ps tasks only joining; the model under `tf.train.replica_device_setter`, with the embedding
and the NCE weights as partitioned variables (`tf.get_variable` with
`tf.fixed_size_partitioner(2)`, one shard on each ps task, looked up with
``partition_strategy="div"`` as the shards are contiguous slices); a
`tf.train.MonitoredTrainingSession` with a `StopAtStepHook`, and the nearest neighbours read
afterwards in a plain `tf.Session` on the worker's server.

The corpus is synthetic (seeded numpy; no download): 200 words in 20 topics (word ``w`` in
topic ``w % 20``), emitted in runs of six words of one topic, each topic's words Zipf-
distributed so that word ids are roughly in frequency order as in the tutorial's
vocabulary. Words of a topic share their contexts, so their embeddings should end up close.

Between-graph asynchronous training with sampled negatives is not deterministic, so the
check is the program's stated target - the share of the valid words' TOP_K nearest
neighbours (by cosine) that are in the word's own topic at least TARGET_PRECISION (chance:
9/199) - and nbdist's and real TF's final precisions within 20% of each other. The last
stdout line is JSON.

    python word2vec_distributed.py --job_name=ps --task_index=0 \
        --ps_hosts=localhost:2222,localhost:2223 --worker_hosts=localhost:2224,localhost:2225 [--tf]
    python word2vec_distributed.py --job_name=ps --task_index=1 ...       # the second ps
    python word2vec_distributed.py --job_name=worker --task_index=0 ...   # and 1
"""

import collections
import json
import math
import os
import sys

import numpy as np

if "--tf" in sys.argv:
    sys.argv.remove("--tf")
    os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
    import tensorflow.compat.v1 as tf

    tf.disable_v2_behavior()
else:
    import nbdist as tf

flags = tf.app.flags
flags.DEFINE_string("ps_hosts", "", "Comma-separated list of hostname:port pairs")
flags.DEFINE_string("worker_hosts", "", "Comma-separated list of hostname:port pairs")
flags.DEFINE_string("job_name", "", "One of 'ps', 'worker'")
flags.DEFINE_integer("task_index", 0, "Index of task within the job")
flags.DEFINE_integer("train_steps", 1200, "Global step to stop at")
FLAGS = flags.FLAGS

VOCABULARY_SIZE = 200
TOPICS = 20
RUN_LENGTH = 6
CORPUS_WORDS = 30000

batch_size = 128
embedding_size = 32  # Dimension of the embedding vector.
skip_window = 1  # How many words to consider left and right.
num_skips = 2  # How many times to reuse an input to generate a label.
num_sampled = 16  # Number of negative examples to sample.
valid_size = 16  # Random set of words to evaluate similarity on.
valid_window = 100  # Only pick dev samples in the head of the distribution.
TOP_K = 5
TARGET_PRECISION = 0.7


def synthetic_corpus(n_words, rng):
    """Word ids: runs of RUN_LENGTH words of one topic; within a topic, Zipf-like frequencies."""
    per_topic = VOCABULARY_SIZE // TOPICS
    zipf = 1.0 / np.arange(1, per_topic + 1)
    zipf /= zipf.sum()
    topics = rng.randint(0, TOPICS, n_words // RUN_LENGTH)
    ranks = rng.choice(per_topic, size=(len(topics), RUN_LENGTH), p=zipf)
    return (topics[:, None] + TOPICS * ranks).reshape(-1)


data = synthetic_corpus(CORPUS_WORDS, np.random.RandomState(0))
data_index = 0


# Function to generate a training batch for the skip-gram model (as word2vec_basic.py's).
def generate_batch(batch_size, num_skips, skip_window):
    global data_index
    assert batch_size % num_skips == 0
    assert num_skips <= 2 * skip_window
    batch = np.ndarray(shape=(batch_size), dtype=np.int32)
    labels = np.ndarray(shape=(batch_size, 1), dtype=np.int32)
    span = 2 * skip_window + 1  # [ skip_window target skip_window ]
    buffer = collections.deque(maxlen=span)
    if data_index + span > len(data):
        data_index = 0
    buffer.extend(data[data_index : data_index + span])
    data_index += span
    for i in range(batch_size // num_skips):
        context_words = [w for w in range(span) if w != skip_window]
        words_to_use = [context_words[j] for j in np.random.permutation(len(context_words))[:num_skips]]
        for j, context_word in enumerate(words_to_use):
            batch[i * num_skips + j] = buffer[skip_window]
            labels[i * num_skips + j, 0] = buffer[context_word]
        if data_index == len(data):
            buffer.extend(data[0:span])
            data_index = span
        else:
            buffer.append(data[data_index])
            data_index += 1
    # Backtrack a little bit to avoid skipping words in the end of a batch
    data_index = (data_index + len(data) - span) % len(data)
    return batch, labels


def main(_):
    global data_index
    ps_hosts, worker_hosts = FLAGS.ps_hosts.split(","), FLAGS.worker_hosts.split(",")
    cluster = tf.train.ClusterSpec({"ps": ps_hosts, "worker": worker_hosts})
    server = tf.train.Server(cluster, job_name=FLAGS.job_name, task_index=FLAGS.task_index)
    if FLAGS.job_name == "ps":
        server.join()
        return
    is_chief = FLAGS.task_index == 0
    tf.set_random_seed(FLAGS.task_index)
    np.random.seed(100 + FLAGS.task_index)
    data_index = FLAGS.task_index * len(data) // len(worker_hosts)  # each worker starts at its share
    valid_examples = np.random.RandomState(1).choice(valid_window, valid_size, replace=False)

    with tf.device(
        tf.train.replica_device_setter(worker_device=f"/job:worker/task:{FLAGS.task_index}", cluster=cluster)
    ):
        train_inputs = tf.placeholder(tf.int32, shape=[batch_size])
        train_labels = tf.placeholder(tf.int32, shape=[batch_size, 1])
        valid_dataset = tf.constant(valid_examples, dtype=tf.int32)

        # Look up embeddings for inputs; the table is cut in two, one shard per ps task.
        embeddings = tf.get_variable(
            "embeddings",
            [VOCABULARY_SIZE, embedding_size],
            initializer=tf.random_uniform_initializer(-1.0, 1.0),
            partitioner=tf.fixed_size_partitioner(len(ps_hosts)),
        )
        embed = tf.nn.embedding_lookup(embeddings, train_inputs, partition_strategy="div")

        # Construct the variables for the NCE loss
        nce_weights = tf.get_variable(
            "nce_weights",
            [VOCABULARY_SIZE, embedding_size],
            initializer=tf.truncated_normal_initializer(stddev=1.0 / math.sqrt(embedding_size)),
            partitioner=tf.fixed_size_partitioner(len(ps_hosts)),
        )
        nce_biases = tf.get_variable("nce_biases", [VOCABULARY_SIZE], initializer=tf.zeros_initializer())

        # Compute the average NCE loss for the batch. tf.nn.nce_loss automatically draws a new
        # sample of the negative labels each time we evaluate the loss.
        loss = tf.reduce_mean(
            tf.nn.nce_loss(
                weights=nce_weights,
                biases=nce_biases,
                labels=train_labels,
                inputs=embed,
                num_sampled=num_sampled,
                num_classes=VOCABULARY_SIZE,
                partition_strategy="div",
            )
        )

        global_step = tf.train.get_or_create_global_step()
        optimizer = tf.train.GradientDescentOptimizer(1.0).minimize(loss, global_step=global_step)

        # Compute the cosine similarity between minibatch examples and all embeddings.
        norm = tf.sqrt(tf.reduce_sum(tf.square(embeddings), 1, keepdims=True))
        normalized_embeddings = embeddings / norm
        valid_embeddings = tf.nn.embedding_lookup(normalized_embeddings, valid_dataset)
        similarity = tf.matmul(valid_embeddings, normalized_embeddings, transpose_b=True)

    hooks = [tf.train.StopAtStepHook(last_step=FLAGS.train_steps)]
    config = tf.ConfigProto(device_filters=["/job:ps", f"/job:worker/task:{FLAGS.task_index}"])
    losses, step = [], 0
    with tf.train.MonitoredTrainingSession(
        master=server.target, is_chief=is_chief, hooks=hooks, config=config, save_checkpoint_secs=None
    ) as session:
        while not session.should_stop():
            batch_inputs, batch_labels = generate_batch(batch_size, num_skips, skip_window)
            feed_dict = {train_inputs: batch_inputs, train_labels: batch_labels}
            _, loss_val, step = session.run([optimizer, loss, global_step], feed_dict=feed_dict)
            losses.append(float(loss_val))
    # The monitored session refuses runs once stopped: evaluate in a plain session on the server.
    with tf.Session(server.target, config=config) as sess:
        sim = sess.run(similarity)

    same_topic, nearest = 0, {}
    for i in range(valid_size):
        word = int(valid_examples[i])
        neighbours = [int(n) for n in (-sim[i, :]).argsort()[1 : TOP_K + 1]]
        same_topic += sum(n % TOPICS == word % TOPICS for n in neighbours)
        nearest[str(word)] = neighbours
    precision = same_topic / (valid_size * TOP_K)
    average_loss = float(np.mean(losses[-50:]))
    print(
        f"worker {FLAGS.task_index}: {len(losses)} steps, average loss {average_loss:.3f}, "
        f"nearest-neighbour topic precision {precision:.3f}",
        flush=True,
    )
    result = {
        "deterministic": False,
        "task_index": FLAGS.task_index,
        "local_steps": len(losses),
        "global_step": int(step),
        "first_loss": float(np.mean(losses[:5])),
        "last_loss": average_loss,
        "shards": {v.op.name: v.device for v in [*embeddings, *nce_weights, nce_biases]},
        "nearest": nearest,
        "values": {"neighbour_precision": precision, "average_loss": average_loss},
        "target": {"neighbour_precision": TARGET_PRECISION},
    }
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    tf.app.run()
