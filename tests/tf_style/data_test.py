"""A TF 1.x-style tf.data test file: pipelines locally and on the tasks of a local cluster.

``python data_test.py`` under nbdist; ``NBDIST_AS_TF=tensorflow`` (or ``--tf``) under real
TensorFlow. Orders of shuffled datasets are compared as sets: nbdist's random order is
not TF's.
"""

import os
import sys

import numpy as np

if os.environ.get("NBDIST_AS_TF") == "tensorflow" or "--tf" in sys.argv:
    if "--tf" in sys.argv:
        sys.argv.remove("--tf")
    import tensorflow.compat.v1 as tf

    tf.disable_v2_behavior()
else:
    import nbdist as tf


def _drain(sess, next_element):
    out = []
    while True:
        try:
            out.append(sess.run(next_element))
        except tf.errors.OutOfRangeError:
            return out


class DatasetTest(tf.test.TestCase):
    def testBatchRepeatTakeOfSlices(self):
        x = np.arange(10, dtype=np.float32).reshape(5, 2)
        ds = tf.data.Dataset.from_tensor_slices(x).repeat(2).batch(4).take(2)
        self.assertEqual([None, 2], ds.output_shapes.as_list())
        nxt = tf.data.make_one_shot_iterator(ds).get_next()
        with self.session() as sess:
            got = _drain(sess, nxt)
        self.assertEqual(2, len(got))
        self.assertAllEqual(x[:4], got[0])
        self.assertAllEqual(np.concatenate([x[4:], x[:3]]), got[1])

    def testTuplesAndDictsKeepTheirStructure(self):
        ds = tf.data.Dataset.from_tensor_slices(({"a": [1, 2, 3]}, [1.0, 2.0, 3.0])).batch(2)
        features, label = ds.make_one_shot_iterator().get_next()
        with self.session() as sess:
            first = sess.run([features, label])
            self.assertAllEqual([1, 2], first[0]["a"])
            self.assertAllClose([1.0, 2.0], first[1])
            last = sess.run([features, label])
            self.assertAllEqual([3], last[0]["a"])
            with self.assertRaises(tf.errors.OutOfRangeError):
                sess.run(label)

    def testRangeAndFromTensors(self):
        r = tf.data.Dataset.range(2, 11, 3).make_one_shot_iterator().get_next()
        t = tf.data.Dataset.from_tensors([1, 2]).repeat(3).make_one_shot_iterator().get_next()
        with self.session() as sess:
            self.assertEqual([2, 5, 8], [int(v) for v in _drain(sess, r)])
            self.assertEqual([[1, 2]] * 3, [list(v) for v in _drain(sess, t)])

    def testShuffleKeepsEveryElementOncePerEpoch(self):
        ds = tf.data.Dataset.range(20).shuffle(5, seed=7).repeat(2)
        nxt = ds.make_one_shot_iterator().get_next()
        with self.session() as sess:
            got = [int(v) for v in _drain(sess, nxt)]
        self.assertEqual(list(range(20)), sorted(got[:20]))
        self.assertEqual(list(range(20)), sorted(got[20:]))

    def testInitializableIteratorWithAFedPlaceholderRestarts(self):
        p = tf.placeholder(tf.int64, shape=[None])
        it = tf.data.Dataset.from_tensor_slices(p).batch(2).make_initializable_iterator()
        nxt = it.get_next()
        with self.session() as sess:
            with self.assertRaises(tf.errors.FailedPreconditionError):
                sess.run(nxt)
            sess.run(it.initializer, feed_dict={p: [1, 2, 3]})
            self.assertEqual([[1, 2], [3]], [list(v) for v in _drain(sess, nxt)])
            sess.run(it.initializer, feed_dict={p: [7]})
            self.assertEqual([[7]], [list(v) for v in _drain(sess, nxt)])

    def testReinitializableIteratorFromStructure(self):
        train = tf.data.Dataset.range(3)
        test = tf.data.Dataset.range(10, 12)
        it = tf.data.Iterator.from_structure(train.output_types, train.output_shapes)
        nxt = it.get_next()
        with self.session() as sess:
            sess.run(it.make_initializer(train))
            self.assertEqual([0, 1, 2], [int(v) for v in _drain(sess, nxt)])
            sess.run(it.make_initializer(test))
            self.assertEqual([10, 11], [int(v) for v in _drain(sess, nxt)])

    def testOneShotIteratorRefusesAPlaceholder(self):
        p = tf.placeholder(tf.float32, shape=[3])
        with self.assertRaises(ValueError):
            tf.data.Dataset.from_tensor_slices(p).make_one_shot_iterator()


class DistributedDatasetTest(tf.test.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.workers, cls.ps = tf.test.create_local_cluster(num_workers=2, num_ps=1)

    def testIteratorOnPsFeedsAWorkerAcrossSessions(self):
        with tf.device("/job:ps/task:0"):
            it = (
                tf.data.Dataset.from_tensor_slices(np.arange(6, dtype=np.float32))
                .batch(2)
                .make_initializable_iterator(shared_name="ps_batches")
            )
            batch = it.get_next()
        with tf.device("/job:worker/task:1"):
            total = tf.reduce_sum(batch) * 10.0
        with tf.Session(self.workers[0].target) as sess:
            sess.run(it.initializer)
            self.assertAllClose(10.0, sess.run(total))
        # Another client on another worker continues the same iterator (it lives on the ps).
        with tf.Session(self.workers[1].target) as sess:
            self.assertAllClose(50.0, sess.run(total))
            self.assertAllClose(90.0, sess.run(total))
            with self.assertRaises(tf.errors.OutOfRangeError):
                sess.run(total)

    def testEachSessionHasItsOwnAnonymousIterators(self):
        with tf.device("/job:worker/task:1"):
            it = tf.data.Dataset.range(5).make_initializable_iterator()
            nxt = it.get_next()
            one_shot = tf.data.Dataset.range(5).make_one_shot_iterator().get_next()
        with tf.Session(self.workers[0].target) as a:
            a.run(it.initializer)
            self.assertEqual([0, 1], [a.run(nxt), a.run(nxt)])
            self.assertEqual([0, 1], [a.run(one_shot), a.run(one_shot)])
        with tf.Session(self.workers[0].target) as b:
            with self.assertRaises(tf.errors.FailedPreconditionError):
                b.run(nxt)
            self.assertEqual(0, b.run(one_shot))

    def testOneShotIteratorOnAWorkerFeedsAVariableUpdateOnThePs(self):
        with tf.device("/job:ps/task:0"):
            acc = tf.Variable(0.0, name="acc")
        with tf.device("/job:worker/task:1"):
            nxt = tf.data.Dataset.from_tensor_slices([1.0, 2.0, 3.0]).make_one_shot_iterator().get_next()
        with tf.device("/job:worker/task:0"):
            update = tf.assign_add(acc, nxt)
        with tf.Session(self.workers[0].target) as sess:
            sess.run(tf.global_variables_initializer())
            for _ in range(3):
                sess.run(update)
            with self.assertRaises(tf.errors.OutOfRangeError):
                sess.run(update)
            self.assertAllClose(6.0, sess.run(acc))


if __name__ == "__main__":
    tf.test.main()
