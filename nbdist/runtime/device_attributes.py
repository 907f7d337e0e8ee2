"""`Session.list_devices()`'s entries: TF's ``_DeviceAttributes`` (name, type, memory limit,
incarnation) of the CPU device of each task a session can run on.

nbdist has one device per task, its CPU. The memory limit is the one TF's CPU devices report
(256 MiB; neither TF nor nbdist enforces it on CPUs); the incarnation is a random 64-bit
number that a task draws when it starts (a server's, reported by ``Ping``) or a local session
draws when it opens, so a restarted task lists a new one, as in TF.
"""

import os

CPU_MEMORY_LIMIT_BYTES = 256 << 20  # what TF's CPU devices report


class DeviceAttributes:
    """One device of `Session.list_devices()` (TF's ``session._DeviceAttributes``)."""

    __slots__ = ("_name", "_device_type", "_memory_limit_bytes", "_incarnation")

    def __init__(self, name, device_type, memory_limit_bytes, incarnation):
        self._name = name
        self._device_type = device_type
        self._memory_limit_bytes = memory_limit_bytes
        self._incarnation = incarnation

    @property
    def name(self):
        """The full device name (``/job:worker/replica:0/task:0/device:CPU:0``)."""
        return self._name

    @property
    def device_type(self):
        """``"CPU"``."""
        return self._device_type

    @property
    def memory_limit_bytes(self):
        return self._memory_limit_bytes

    @property
    def incarnation(self):
        """A signed 64-bit number, new each time the device's task (or local session) starts."""
        return self._incarnation

    def __repr__(self):
        return (
            f"_DeviceAttributes({self._name}, {self._device_type}, {self._memory_limit_bytes}, "
            f"{self._incarnation})"
        )


def cpu_of(task_device, incarnation):
    """The `DeviceAttributes` of the CPU of the task ``/job:J/replica:0/task:T``."""
    return DeviceAttributes(f"{task_device}/device:CPU:0", "CPU", CPU_MEMORY_LIMIT_BYTES, incarnation)


def incarnation_of(hex_id):
    """A server's incarnation (8 random bytes in hex, as ``Pong`` reports it) as TF's int64."""
    return int.from_bytes(bytes.fromhex(hex_id), "big", signed=True)


def new_incarnation():
    """A fresh random incarnation (non-zero, as TF's)."""
    return int.from_bytes(os.urandom(8), "big", signed=True) or 1
