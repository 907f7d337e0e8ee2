"""The allocator policy of a process that runs kernels: freed arrays are reused, not handed back.

nbdist's kernels never update a stored value in place: an optimizer's update makes new arrays
and swaps them in (docs/architecture.md, "copy-on-write"), so a ps applying Adam to a 784x1000
layer frees and allocates four 3 MB arrays per update. glibc's malloc returns freed memory at
the top of a heap to the kernel once more than its trim threshold is free there (by default
twice the largest array freed so far), so the next update's arrays come back as fresh pages:
a page fault and a page zeroed per 4 KiB, ~1,300 faults per update. Measured on that ps
(docs/benchmarks.md, "Again, after five runtime changes"): 85,000 page faults per second, 38%
of its CPU in the kernel; with the policy ~500, and the job's global steps/s rose from 67-74
to 85-91 (sync: 27 to 50).

So every process that claims a share of the cores (`runtime.threads`: a `tf.train.Server`, a
local `tf.Session`, ...) keeps up to `TRIM_THRESHOLD` of freed memory per heap for reuse, as
TF's own allocator keeps what it freed. Arrays of `MMAP_THRESHOLD` or more are still mapped and
unmapped each time (glibc's largest heap allocation). It is glibc's ``mallopt``; elsewhere
(musl, macOS) nothing changes. A ``MALLOC_*_`` tuning variable in the environment is the user's
choice and is kept; ``$NBDIST_KEEP_FREED=0`` turns the policy off (how it was measured).
"""

import ctypes
import os
import threading

OFF_ENV = "NBDIST_KEEP_FREED"  # "0": leave malloc as it is
# glibc's tunables that set what this policy sets (`mallopt`'s environment spelling)
MALLOC_VARS = ("MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TOP_PAD_", "GLIBC_TUNABLES")
MMAP_THRESHOLD = 32 << 20  # glibc's largest (HEAP_MAX_SIZE / 2 on 64-bit)
TRIM_THRESHOLD = 256 << 20
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # <malloc.h>

_lock = threading.Lock()
_state = None  # what was decided, once: a short description for Status and the log


def keep_freed_memory():
    """Applies the policy to this process (once; later calls only return what was decided)."""
    global _state
    with _lock:
        if _state is None:
            _state = _apply()
        return _state


def state():
    """What the policy did in this process, or None before a process claimed cores."""
    return _state


def _apply():
    if os.environ.get(OFF_ENV) == "0":
        return f"malloc's defaults ({OFF_ENV}=0)"
    named = [v for v in MALLOC_VARS if os.environ.get(v)]
    if named:
        return f"kept: {', '.join(named)} in the environment"
    mallopt = _glibc_mallopt()
    if mallopt is None:
        return "malloc's defaults (not glibc)"
    # (the mmap threshold first: setting either ends glibc's dynamic thresholds)
    if not (mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD) and mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD)):
        return "malloc's defaults (mallopt refused)"
    return f"freed memory kept for reuse (up to {TRIM_THRESHOLD >> 20} MiB a heap)"


def _glibc_mallopt():
    try:
        libc = ctypes.CDLL(None)  # the process's own symbols: its C library's among them
        libc.gnu_get_libc_version  # (musl has mallopt's name but not glibc's tunables)  # noqa: B018
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return None
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    return mallopt
