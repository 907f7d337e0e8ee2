"""A TF 1.x-style test file whose first test leaves an `InteractiveSession` open (its graph
entered as the default): TF's `TestCase.setUp` resets the default-graph stack, so the later
tests run on a fresh graph of their own. Run in order (unittest sorts by name).

``python interactive_session_test.py`` under nbdist; ``NBDIST_AS_TF=tensorflow`` under real TF.
"""

import os
import sys

if os.environ.get("NBDIST_AS_TF") == "tensorflow" or "--tf" in sys.argv:
    if "--tf" in sys.argv:
        sys.argv.remove("--tf")
    import tensorflow.compat.v1 as tf

    tf.disable_v2_behavior()
else:
    import nbdist as tf


class InteractiveSessionLeftOpenTest(tf.test.TestCase):
    def test_1_leaves_an_interactive_session_open(self):
        sess = tf.InteractiveSession()
        self.assertEqual(tf.constant(2.0).eval(), 2.0)
        self.assertIs(tf.get_default_session(), sess)  # never closed: its graph stays entered

    def test_2_starts_on_a_fresh_graph(self):
        self.assertEqual(tf.get_default_graph().get_operations(), [])
        with self.cached_session() as sess:
            self.assertEqual(sess.run(tf.constant(3.0) * 2.0), 6.0)

    def test_3_builds_and_resets_again(self):
        x = tf.placeholder(tf.float32, [2])
        with self.session() as sess:
            self.assertAllEqual(sess.run(x + 1.0, {x: [1.0, 2.0]}), [2.0, 3.0])


if __name__ == "__main__":
    tf.test.main()
