"""`tf.train.Coordinator` and `tf.train.LooperThread`: stop a set of threads together.

As TF: any thread may `request_stop` (optionally with the exception that made it stop);
the others poll `should_stop` or `wait_for_stop`; `join` waits a grace period for them and
re-raises the exception reported with the first stop request (one reported once a stop was
requested is dropped). `OutOfRangeError` (an input queue closed and drained) counts as a
clean stop, not an error.
"""

import contextlib
import logging
import sys
import threading
import time

from nbdist import errors

_log = logging.getLogger("nbdist")


class Coordinator:
    """Lets threads stop together and report the exception that stopped them (TF's Coordinator).

    Args:
        clean_stop_exception_types: exception types that stop the threads without being an
            error (default ``(tf.errors.OutOfRangeError,)``).
    """

    def __init__(self, clean_stop_exception_types=None):
        if clean_stop_exception_types is None:
            clean_stop_exception_types = (errors.OutOfRangeError,)
        self._clean_stop_exception_types = tuple(clean_stop_exception_types)
        self._lock = threading.Lock()
        self._stop_event = threading.Event()
        self._exc_info_to_raise = None
        self._joined = False
        self._registered_threads = set()

    def _filter_exception(self, ex):
        exc = ex[1] if isinstance(ex, tuple) else ex
        if isinstance(exc, self._clean_stop_exception_types):
            return None
        return ex

    def request_stop(self, ex=None):
        """Asks every thread to stop; records `ex` (an exception or exc_info) to re-raise in `join`.

        Only an exception that causes the stop is recorded: one reported after a stop was
        requested (a thread failing because the session it ran in was being closed, or its
        ps went away during the stop) is dropped, as in TF.

        Raises:
            ValueError: if `ex` is neither an exception nor an exc_info tuple.
        """
        with self._lock:
            ex = self._filter_exception(ex)
            if self._joined:
                if isinstance(ex, tuple):
                    raise ex[1].with_traceback(ex[2])
                if ex is not None:
                    raise ex
                return
            if self._stop_event.is_set():  # not what stopped the threads: TF drops it too
                if ex is not None:
                    _log.debug("Error reported to Coordinator after the stop, dropped: %s", ex)
                return
            if ex and self._exc_info_to_raise is None:
                if isinstance(ex, tuple):
                    _log.info("Error reported to Coordinator: %s", ex[1])
                    self._exc_info_to_raise = ex
                elif isinstance(ex, BaseException):
                    _log.info("Error reported to Coordinator: %s", ex)
                    self._exc_info_to_raise = (type(ex), ex, ex.__traceback__)
                else:
                    raise ValueError(f"ex must be an exception or sys.exc_info() tuple, got {ex!r}")
                if not isinstance(self._exc_info_to_raise[1], BaseException):
                    raise ValueError(f"ex must be an exception or sys.exc_info() tuple, got {ex!r}")
            self._stop_event.set()

    def clear_stop(self):
        """Makes the coordinator usable again after a `join`."""
        with self._lock:
            self._joined = False
            self._exc_info_to_raise = None
            self._stop_event.clear()

    def should_stop(self):
        return self._stop_event.is_set()

    @contextlib.contextmanager
    def stop_on_exception(self):
        """``with coord.stop_on_exception():`` — an exception in the block requests a stop."""
        try:
            yield
        except BaseException:  # noqa: BLE001 - reported to the coordinator, re-raised by join
            self.request_stop(ex=sys.exc_info())

    def wait_for_stop(self, timeout=None):
        """Waits (at most `timeout` s) until a stop is requested; returns whether it was."""
        return self._stop_event.wait(timeout)

    def register_thread(self, thread):
        with self._lock:
            self._registered_threads.add(thread)

    def join(self, threads=None, stop_grace_period_secs=120, ignore_live_threads=False):
        """Waits for `threads` (and the registered ones) to end after a stop request.

        Waits until a stop is requested, then at most `stop_grace_period_secs` for the threads.

        Raises:
            RuntimeError: threads still alive after the grace period (naming them), unless
                `ignore_live_threads`.
            the exception reported with `request_stop`, if any.
        """
        with self._lock:
            threads = set(self._registered_threads) | set(threads or ())
        while any(t.is_alive() for t in threads) and not self.wait_for_stop(1.0):
            pass
        deadline = time.monotonic() + stop_grace_period_secs
        while any(t.is_alive() for t in threads) and time.monotonic() < deadline:
            time.sleep(0.01)
        with self._lock:
            self._joined = True
            self._registered_threads = set()
            if self._exc_info_to_raise:
                _, value, tb = self._exc_info_to_raise
                raise value.with_traceback(tb)
        stragglers = [t.name for t in threads if t.is_alive()]
        if stragglers:
            if ignore_live_threads:
                _log.info("Coordinator stopped with threads still running: %s", " ".join(stragglers))
            else:
                raise RuntimeError(
                    f"Coordinator stopped with threads still running after {stop_grace_period_secs} s: "
                    + " ".join(stragglers)
                )

    @property
    def joined(self):
        return self._joined

    def raise_requested_exception(self):
        """Re-raises the exception reported with `request_stop`, if any."""
        with self._lock:
            if self._exc_info_to_raise:
                _, value, tb = self._exc_info_to_raise
                raise value.with_traceback(tb)


class LooperThread(threading.Thread):
    """A thread that calls a function every N seconds until its coordinator says stop.

    Calls `target` (or `run_loop`) every `timer_interval_secs` (or back to back when None)
    until the coordinator says stop; an exception in it requests the stop.
    """

    def __init__(self, coord, timer_interval_secs, target=None, args=None, kwargs=None):
        if not isinstance(coord, Coordinator):
            raise ValueError(f"'coord' argument must be a Coordinator: {coord!r}")
        super().__init__(daemon=True)
        self._coord = coord
        self._timer_interval_secs = timer_interval_secs
        self._target = target
        self._args = args or ()
        self._kwargs = kwargs or {}
        if target is not None:
            self.name = f"LooperThread-{getattr(target, '__name__', 'target')}"
        coord.register_thread(self)

    @staticmethod
    def loop(coord, timer_interval_secs, target, args=None, kwargs=None):
        """Starts a LooperThread calling `target` and returns it."""
        looper = LooperThread(coord, timer_interval_secs, target=target, args=args, kwargs=kwargs)
        looper.start()
        return looper

    def run(self):
        with self._coord.stop_on_exception():
            self.start_loop()
            if self._timer_interval_secs is None:
                while not self._coord.should_stop():
                    self.run_loop()
            else:
                next_timer_time = time.time()
                while not self._coord.wait_for_stop(max(0.0, next_timer_time - time.time())):
                    next_timer_time += self._timer_interval_secs
                    self.run_loop()
            self.stop_loop()

    def start_loop(self):
        """Called once before the loop."""

    def stop_loop(self):
        """Called once after the loop."""

    def run_loop(self):
        if self._target:
            self._target(*self._args, **self._kwargs)
