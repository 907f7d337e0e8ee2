"""Linux scheduling policy for nbdist's background threads: woken, they never preempt training.

A message wakes its receiver. Under the default policy a woken thread may preempt the thread
running on its CPU - often the sender, whose ``send`` then returns only after the receiver
has run, or a thread in the middle of a training step, which then waits a time slice. A
thread under ``SCHED_BATCH`` never preempts: it runs when its CPU's thread blocks, or on an
idle CPU at once. Same priority (nice) and so the same share of the CPU over time, no
privilege needed. Measured in docs/benchmarks.md: a server's serving loop ("Serving loops
as batch threads": in sync training on 2 cores, sampled stacks were in ``sendmsg`` a fifth
of the busy time) and watching (the events' collector, the dashboard's drawing and the
ZeroMQ I/O threads that carry events: "What watching costs training").

``$NBDIST_BATCH_IO=0`` keeps the default policy everywhere.
"""

import os

BATCH_ENV = "NBDIST_BATCH_IO"  # "0": nbdist's background threads keep the default scheduling policy


def batch_policy():
    """``os.SCHED_BATCH``, or None where it is turned off (`BATCH_ENV`) or not available."""
    if os.environ.get(BATCH_ENV) == "0" or not hasattr(os, "SCHED_BATCH"):
        return None
    return os.SCHED_BATCH


def as_batch_thread():
    """Puts the calling thread under ``SCHED_BATCH``; says which policy it has: ``"batch"``
    or ``"default"`` (turned off, not Linux, or a sandbox that forbids it: the default policy
    works, a little slower)."""
    policy = batch_policy()
    if policy is None:
        return "default"
    try:
        os.sched_setscheduler(0, policy, os.sched_param(0))
    except OSError:
        return "default"
    return "batch"
