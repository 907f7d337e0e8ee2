"""Pattern: TF's `cifar10_multi_gpu_train.py` - in-graph replication over towers, with batch norm.

Reproduces the multi-tower training loop learners copy from TF's CIFAR-10 tutorial
(`cifar10_multi_gpu_train.py`) with the model of the later CIFAR tutorials (conv ->
`tf.layers.batch_normalization` -> relu -> max-pool, twice, then a dense head): one client
builds one graph; the batch is sliced into one part per tower; a Python loop builds one tower per device
inside ``tf.device(...)`` and ``tf.name_scope('tower_%d')``, the towers sharing their variables
through ``tf.get_variable_scope().reuse_variables()``; each tower's ``opt.compute_gradients``
goes into ``tower_grads`` and ``average_gradients`` (expand_dims, concat, reduce_mean per
variable) averages them before one ``apply_gradients``; the batch-norm moving averages are
updated by the first tower's ``tf.get_collection(tf.GraphKeys.UPDATE_OPS, scope)`` run with
the train op (``tf.group``), as TF's cifar10_estimator does. The variables live on the first
device, as the tutorial keeps them on the CPU.

The devices are not GPUs but the two tasks of a local cluster, ``/job:worker/task:0`` and
``/job:worker/task:1``, both servers in this process on free ports; the client's session is
the first one's. The batches come in a fixed order and the kernels start from seeded numpy
arrays, so the run is deterministic and its numbers are compared with real TensorFlow's to
rtol 1e-4. CIFAR-shaped synthetic images (32x32x3, ten classes; seeded numpy, no download).
The last stdout line is JSON.

    python cifar_bn_towers.py [--tf]
"""

import json
import socket
import sys

import numpy as np

if "--tf" in sys.argv:
    sys.argv.remove("--tf")
    import os

    os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")  # tf.compat.v1.layers needs Keras 2 (TF >= 2.16)
    import tensorflow.compat.v1 as tf

    tf.disable_v2_behavior()
else:
    import nbdist as tf

NUM_TOWERS = 2
BATCH_SIZE = 32  # per tower
STEPS = 24


def cifar_shaped(n, rng):
    """n 32x32x3 images: one of ten fixed random colour patterns each, plus noise."""
    patterns = np.random.RandomState(7).rand(10, 32, 32, 3).astype(np.float32)
    labels = rng.randint(0, 10, n)
    images = 0.4 * patterns[labels] + 0.6 * rng.rand(n, 32, 32, 3)
    return (images - 0.5).astype(np.float32), labels.astype(np.int32)


def init(shape, seed):
    """A kernel's starting value from a seeded numpy generator (the same in both runs)."""
    fan_in = int(np.prod(shape[:-1]))
    return tf.constant_initializer(np.random.RandomState(seed).normal(0, np.sqrt(2.0 / fan_in), shape))


def inference(images):
    net = tf.layers.conv2d(
        images, 16, 3, padding="same", use_bias=False, kernel_initializer=init([3, 3, 3, 16], 1), name="conv1"
    )
    net = tf.nn.relu(tf.layers.batch_normalization(net, momentum=0.9, training=True, name="bn1"))
    net = tf.layers.max_pooling2d(net, 2, 2, name="pool1")  # 16x16x16
    net = tf.layers.conv2d(
        net, 32, 3, padding="same", use_bias=False, kernel_initializer=init([3, 3, 16, 32], 2), name="conv2"
    )
    net = tf.nn.relu(tf.layers.batch_normalization(net, momentum=0.9, training=True, name="bn2"))
    net = tf.layers.max_pooling2d(net, 2, 2, name="pool2")  # 8x8x32
    net = tf.layers.flatten(net)
    return tf.layers.dense(net, 10, kernel_initializer=init([8 * 8 * 32, 10], 3), name="logits")


def tower_loss(images, labels):
    logits = inference(images)
    return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))


def average_gradients(tower_grads):
    """The tutorial's: for each variable, the mean of its gradient over the towers."""
    average_grads = []
    for grad_and_vars in zip(*tower_grads):
        grads = [tf.expand_dims(g, 0) for g, _ in grad_and_vars]
        grad = tf.reduce_mean(tf.concat(grads, 0), 0)
        average_grads.append((grad, grad_and_vars[0][1]))
    return average_grads


def free_addresses(n):
    sockets = [socket.socket() for _ in range(n)]
    for s in sockets:
        s.bind(("localhost", 0))
    addresses = [f"localhost:{s.getsockname()[1]}" for s in sockets]
    for s in sockets:
        s.close()
    return addresses


cluster = tf.train.ClusterSpec({"worker": free_addresses(NUM_TOWERS)})
servers = [tf.train.Server(cluster, job_name="worker", task_index=i) for i in range(NUM_TOWERS)]

with tf.device("/job:worker/task:0"):
    images = tf.placeholder(tf.float32, [NUM_TOWERS * BATCH_SIZE, 32, 32, 3], name="images")
    labels = tf.placeholder(tf.int32, [NUM_TOWERS * BATCH_SIZE], name="labels")
    global_step = tf.train.get_or_create_global_step()
    opt = tf.train.MomentumOptimizer(0.003, 0.9)

tower_grads, tower_losses = [], []
with tf.variable_scope(tf.get_variable_scope()):
    for i in range(NUM_TOWERS):
        with tf.device(f"/job:worker/task:{i}"), tf.name_scope(f"tower_{i}") as scope:
            part = slice(i * BATCH_SIZE, (i + 1) * BATCH_SIZE)  # (nbdist has no tf.split yet)
            loss = tower_loss(images[part], labels[part])
            tf.get_variable_scope().reuse_variables()
            if i == 0:
                update_ops = tf.get_collection(tf.GraphKeys.UPDATE_OPS, scope)
            tower_grads.append(opt.compute_gradients(loss))
            tower_losses.append(loss)

with tf.device("/job:worker/task:0"):
    grads = average_gradients(tower_grads)
    apply_op = opt.apply_gradients(grads, global_step=global_step)
    train_op = tf.group(apply_op, *update_ops)
    mean_loss = tf.add_n(tower_losses) / NUM_TOWERS

train_x, train_y = cifar_shaped(640, np.random.RandomState(0))
losses = []
with tf.Session(servers[0].target) as sess:
    sess.run(tf.global_variables_initializer())
    for step in range(STEPS):
        start = (step * NUM_TOWERS * BATCH_SIZE) % len(train_x)
        feed = {
            images: train_x[start : start + NUM_TOWERS * BATCH_SIZE],
            labels: train_y[start : start + NUM_TOWERS * BATCH_SIZE],
        }
        _, batch_loss = sess.run([train_op, mean_loss], feed)
        losses.append(float(batch_loss))
        if step % 10 == 0:
            print(f"step {step}: loss {batch_loss:.4f}", flush=True)
    moving_mean, moving_variance, gamma = sess.run(
        [
            tf.global_variables("bn1/moving_mean")[0],
            tf.global_variables("bn1/moving_variance")[0],
            tf.global_variables("bn1/gamma")[0],
        ]
    )
    names = sorted(v.op.name for v in tf.global_variables())
    devices = sorted({v.device for v in tf.trainable_variables()})

print(
    json.dumps(
        {
            "deterministic": True,
            "values": {
                "losses": losses,
                "bn1_moving_mean": moving_mean.tolist(),
                "bn1_moving_variance": moving_variance.tolist(),
                "bn1_gamma": gamma.tolist(),
            },
            "variables": names,
            "update_ops": len(update_ops),
            "variable_devices": devices,
        }
    )
)
