"""`Redrawer`: draws a widget's picture on its own thread, at most so many times a second.

Events may arrive on any thread and far faster than matplotlib draws; `request` only marks
the picture out of date and returns at once. One daemon thread (started on the first
request) calls ``draw()`` when the picture is out of date and the last draw is at least
``1 / max_per_s`` ago, so a burst of requests makes one draw — and paces the draws so that
drawing takes at most ``busy_fraction`` of the time (each draw's CPU time is charged to the
time after it), so watching never takes more than that share of a core from the training it
watches. When training and the notebook share a machine's cores, a picture's CPU is the
training's: a dashboard drawing at a tenth of a core cost training on 2 cores about twice
that share of its steps/s (docs/benchmarks.md).

The first draw is not charged: it pays matplotlib's one-time warm-up (fonts, the figure's
first layout: ~0.5 s, where a later picture takes 15-200 ms), which would otherwise hold the
second picture back for a minute at 1%. With ``max_interval_s``, a picture comes at least
that often while requests come: one due before the budget is earned is drawn by ``overdue``
(a cheaper picture: the dashboard keeps its last layout) and charged like any other, so the
budget holds over time. ``draw`` should only set widget state (docs/testing-notebooks.md).
"""

import os
import threading
import time

from nbdist.runtime import sched


class Redrawer:
    """Calls `draw` from one background thread, throttled, after `request()`.

    Args:
        draw: a callable with no arguments (runs on the redrawer's thread).
        max_per_s: at most this many draws a second.
        name: the thread's name.
        busy_fraction: at most this share of a core spent drawing (the pause after a draw is
            at least its CPU time times ``1 / busy_fraction - 1``).
        idle_fraction: the share used instead while the machine has a whole core idle (from
            ``/proc/stat`` since the last draw): drawing then takes no core that training
            uses. None: always `busy_fraction`.
        between: a cheap callable (no arguments) called during a pause, at most every
            `between_every_s`, when requests came since the last draw or call: what can
            stay live while the picture waits (a costly picture pauses the next for long).
        max_interval_s: while requests come, a picture at least this often, even before
            the budget is earned (None: only within the budget).
        overdue: what draws such a picture (no arguments; default `draw`): a cheaper one.
    """

    def __init__(
        self,
        draw,
        max_per_s,
        name="nbdist-redraw",
        busy_fraction=0.1,
        idle_fraction=None,
        between=None,
        between_every_s=1.0,
        max_interval_s=None,
        overdue=None,
    ):
        self._draw = draw
        self._overdue = overdue or draw
        self.min_interval_s = 1.0 / max_per_s
        self.max_interval_s = max_interval_s
        self._between = between
        self.between_every_s = between_every_s
        self._requests = 0  # requests so far (what `between` has not seen: more than `_seen`)
        self._seen = 0
        self.busy_fraction = busy_fraction
        self.idle_fraction = idle_fraction
        self._cpu_sample = cpu_times() if idle_fraction is not None else None
        self._next_draw = 0.0  # monotonic time before which no draw starts
        self._earned_at = 0.0  # monotonic time from which a draw is within the budget
        self.draws = 0
        self.overdue_draws = 0
        self._name = name
        self._cond = threading.Condition()
        self._dirty = False
        self.closed = False
        self._thread = None

    @property
    def debt_s(self):
        """How long from now until a draw is within the budget again (0: it is)."""
        return max(0.0, self._earned_at - time.monotonic())

    def request(self):
        """Marks the picture out of date (any thread; returns at once). Ignored once closed."""
        self._requests += 1  # (unlocked: a count that `between` reads, approximate is enough)
        if self._dirty:  # a picture is due and not begun: it will show what came before this
            return
        with self._cond:
            if self.closed:
                return
            self._dirty = True
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name=self._name, daemon=True)
                self._thread.start()
            self._cond.notify()

    def close(self, timeout_s=5.0):
        """Stops the thread (waiting up to `timeout_s` for a draw in progress); idempotent."""
        with self._cond:
            self.closed = True
            self._cond.notify_all()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout_s)

    def _loop(self):
        sched.as_batch_thread()  # a picture waits for a CPU; it never preempts training
        next_between = 0.0
        while True:
            with self._cond:
                while not self._dirty and not self.closed:
                    self._cond.wait()
                # Too soon after the last picture: let requests pile up, then draw once;
                # meanwhile `between` keeps what is cheap live.
                while not self.closed and (wait_s := self._next_draw - time.monotonic()) > 0:
                    if self._between is not None:  # (requests do not notify while a picture is due)
                        until = next_between - time.monotonic()
                        if until <= 0 and self._requests != self._seen:
                            break
                        wait_s = min(wait_s, max(until, self.between_every_s / 4))
                    self._cond.wait(wait_s)
                if self.closed:
                    return
                picture = self._next_draw <= time.monotonic()
                self._dirty = self._dirty and not picture
                self._seen = self._requests
            if not picture:
                next_between = time.monotonic() + self.between_every_s
                self._between()
                continue
            self._draw_once()

    def _draw_once(self):
        """Draws (`overdue` if the budget is not earned yet), charges the draw's CPU time to
        the budget (not the first draw's: the warm-up) and sets when the next may start."""
        started, cpu = time.monotonic(), time.thread_time()
        overdue = started < self._earned_at
        (self._overdue if overdue else self._draw)()
        took = time.thread_time() - cpu  # the CPU a picture took from training, not its wall time
        fraction = self._fraction()
        if self.draws:  # (a debt left by an overdue draw is carried)
            self._earned_at = max(self._earned_at, started) + took / fraction
        self.draws += 1
        self.overdue_draws += overdue
        due = self._earned_at
        if self.max_interval_s is not None:
            due = min(due, started + self.max_interval_s)
        self._next_draw = max(started + self.min_interval_s, due)

    def _fraction(self):
        """The share of a core drawing may take now: `idle_fraction` if a core was idle."""
        if self.idle_fraction is None:
            return self.busy_fraction
        before, self._cpu_sample = self._cpu_sample, cpu_times()
        idle = idle_cores(before, self._cpu_sample)
        return self.idle_fraction if idle is not None and idle >= 1.0 else self.busy_fraction


def cpu_times():
    """``(idle, total)`` CPU time of the whole machine (``/proc/stat``'s clock ticks, summed
    over its cores) and the number of cores; None where there is no ``/proc/stat``."""
    try:
        with open("/proc/stat") as f:
            ticks = [int(x) for x in f.readline().split()[1:9]]
    except (OSError, ValueError):
        return None
    return ticks[3] + ticks[4], sum(ticks), os.cpu_count() or 1  # idle + iowait; all but guest


def idle_cores(before, after):
    """How many of the machine's cores were idle, on average, between two `cpu_times`."""
    if before is None or after is None or after[1] <= before[1]:
        return None
    return (after[0] - before[0]) / (after[1] - before[1]) * after[2]
