"""The thread's default session: what `Tensor.eval()` and `Operation.run()` run in.

The runtime sets it (`Session.as_default()` is `default_session`); the graph layer only keeps
the slot, one stack per thread.
"""

import contextlib
import threading

_session_state = threading.local()


def _default_session_stack():
    stack = getattr(_session_state, "stack", None)
    if stack is None:
        stack = _session_state.stack = []
    return stack


@contextlib.contextmanager
def default_session(session):
    """Makes `session` this thread's default session (what `Tensor.eval()` and
    `Operation.run()` use) for the ``with`` block; `Session.as_default()` returns this."""
    stack = _default_session_stack()
    stack.append(session)
    try:
        yield session
    finally:
        if stack and stack[-1] is session:
            stack.pop()


def get_default_session():
    stack = _default_session_stack()
    return stack[-1] if stack else None


def run_with_session(session, fetch, feed_dict, what):
    """Runs `fetch` in `session` (default: the default session); `what` names the caller."""
    session = session or get_default_session()
    if session is None:
        raise ValueError(
            f"{what} needs a session: pass session=..., run it inside `with sess.as_default():` "
            "or `with tf.Session() as sess:`, or use tf.InteractiveSession()"
        )
    if session.graph is not fetch.graph:
        raise ValueError(f"{what}: the session's graph is not the graph of {fetch.name!r}")
    return session.run(fetch, feed_dict=feed_dict)
