"""One local run of a fetch, for the op tests."""

import nbdist as tf


def run_in_session(fetch, feed=None):
    """Runs `fetch` (with `feed`) once in a new local `tf.Session` on the default graph."""
    with tf.Session() as sess:
        return sess.run(fetch, feed)
