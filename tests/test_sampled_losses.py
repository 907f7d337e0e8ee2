"""`tf.nn.nce_loss` / `sampled_softmax_loss` / `compute_accidental_hits` against real TF: the same
weights (whole or in two shards), labels, inputs and sampled classes (given as `sampled_values`,
so both libraries see one draw): losses and the gradients of weights, biases and inputs."""

import numpy as np
import pytest

import nbdist as tf

_RNG = np.random.default_rng(29)
CLASSES, DIM, BATCH = 20, 4, 5
W = _RNG.standard_normal((CLASSES, DIM)).astype(np.float32)
B = _RNG.standard_normal(CLASSES).astype(np.float32)
X = _RNG.standard_normal((BATCH, DIM)).astype(np.float32)
LABELS1 = np.array([[1], [3], [3], [7], [19]], np.int64)
LABELS2 = np.array([[1, 2], [3, 4], [3, 9], [7, 0], [19, 5]], np.int64)
SAMPLED = np.array([0, 3, 8, 11, 19, 4], np.int64)  # 3, 19, 4, 0: accidental hits


def _values(t, loss_name, labels, sharded, remove_hits):
    num_true = labels.shape[1]
    true_expected = np.full((BATCH, num_true), 0.3, np.float32)
    sampled_expected = np.linspace(0.1, 0.6, len(SAMPLED)).astype(np.float32)
    with t.Graph().as_default():
        if sharded:
            weights = [t.Variable(W[::2]), t.Variable(W[1::2])]  # "mod": class c in shard c % 2
        else:
            weights = t.Variable(W)
        biases, inputs = t.Variable(B), t.constant(X)
        loss = getattr(t.nn, loss_name)(
            weights,
            biases,
            t.constant(labels),
            inputs,
            num_sampled=len(SAMPLED),
            num_classes=CLASSES,
            num_true=num_true,
            sampled_values=(t.constant(SAMPLED), t.constant(true_expected), t.constant(sampled_expected)),
            remove_accidental_hits=remove_hits,
        )
        wrt = [*(weights if sharded else [weights]), biases, inputs]
        grads = [t.convert_to_tensor(g) for g in t.gradients(t.reduce_sum(loss), wrt)]
        with t.Session() as sess:
            sess.run(t.global_variables_initializer())
            return sess.run([loss, *grads])


@pytest.mark.parametrize("loss_name", ["nce_loss", "sampled_softmax_loss"])
@pytest.mark.parametrize("num_true", [1, 2])
@pytest.mark.parametrize("sharded", [False, True])
@pytest.mark.parametrize("remove_hits", [False, True])
def test_sampled_losses_and_gradients_match_tensorflow(tf1, loss_name, num_true, sharded, remove_hits):
    labels = LABELS1 if num_true == 1 else LABELS2
    ours = _values(tf, loss_name, labels, sharded, remove_hits)
    theirs = _values(tf1, loss_name, labels, sharded, remove_hits)
    for k, (a, b) in enumerate(zip(ours, theirs, strict=True)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5, err_msg=f"output {k}")


def test_compute_accidental_hits_matches_tensorflow(tf1):
    got = []
    for t in (tf, tf1):
        with t.Graph().as_default(), t.Session() as sess:
            got.append(
                sess.run(t.nn.compute_accidental_hits(t.constant(LABELS2), t.constant(SAMPLED), num_true=2))
            )
    for a, b in zip(*got, strict=True):
        np.testing.assert_array_equal(a, b)


def test_the_default_sampler_trains_word2vec_shaped_embeddings(graph):
    embeddings = tf.Variable(_RNG.uniform(-1, 1, (CLASSES, DIM)).astype(np.float32))
    weights, biases = tf.Variable(W * 0.1), tf.Variable(np.zeros(CLASSES, np.float32))
    words = tf.constant([1, 3, 5, 7, 9])
    context = tf.constant([[2], [4], [6], [8], [10]], tf.int64)
    loss = tf.reduce_mean(
        tf.nn.nce_loss(weights, biases, context, tf.nn.embedding_lookup(embeddings, words), 4, CLASSES)
    )
    train = tf.train.GradientDescentOptimizer(0.5).minimize(loss)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        first = np.mean([sess.run(loss) for _ in range(5)])
        for _ in range(100):
            sess.run(train)
        last = np.mean([sess.run(loss) for _ in range(5)])
    assert last < 0.5 * first
