"""Device names: `DeviceSpec` parsing, merging and the canonical string.

A device string names where an op runs: ``/job:ps/replica:0/task:1/device:CPU:0``.
Every field is optional while recording (``/job:ps`` is a *partial* spec); the master
completes it at placement time. Scopes nest field by field, as in TF::

    with tf.device("/job:worker/task:1"):
        with tf.device("/job:ps"):
            v = tf.Variable(0)          # v.device == "/job:ps/task:1"
"""

import functools
import re
from typing import NamedTuple

_FIELD_RE = re.compile(r"^(job|replica|task|device|cpu|gpu)(?::(.*))?$", re.IGNORECASE)


class DeviceSpec:
    """A (possibly partial) device: job, replica, task, device type and index.

    Args:
        job: job name, e.g. ``"ps"``.
        replica: replica index (int).
        task: task index (int).
        device_type: ``"CPU"`` or ``"GPU"``.
        device_index: device index (int).
    """

    __slots__ = ("job", "replica", "task", "device_type", "device_index")

    def __init__(self, job=None, replica=None, task=None, device_type=None, device_index=None):
        self.job = job
        self.replica = None if replica is None else int(replica)
        self.task = None if task is None else int(task)
        self.device_type = None if device_type is None else device_type.upper()
        self.device_index = None if device_index is None else int(device_index)

    @classmethod
    def from_string(cls, spec):
        """Parses ``"/job:J/replica:R/task:T/device:TYPE:I"`` (any subset, any order).

        Also accepts TF's short forms ``/cpu:0``, ``/device:CPU:*`` and ``CPU:0``.

        Raises:
            ValueError: naming the part that could not be parsed.
        """
        out = cls()
        if spec is None:
            return out
        if isinstance(spec, DeviceSpec):
            return spec.copy()
        if not isinstance(spec, str):
            raise TypeError(f"device spec must be a string or DeviceSpec, got {spec!r}")
        for part in spec.split("/"):
            if not part:
                continue
            out._parse_part(part, spec)
        return out

    def _parse_part(self, part, whole):
        m = _FIELD_RE.match(part)
        if m is None and re.match(r"^(cpu|gpu|tpu):(\d+|\*)$", part, re.IGNORECASE):
            kind, _, index = part.partition(":")
            self._set_device(kind, index, whole)
            return
        if m is None:
            raise ValueError(
                f"unknown device field {part!r} in {whole!r}; expected "
                "/job:NAME/replica:INT/task:INT/device:TYPE:INT (TYPE is CPU or GPU)"
            )
        key, value = m.group(1).lower(), m.group(2)
        if key == "job":
            if not value or not re.match(r"^[A-Za-z0-9_.\-]+$", value):
                raise ValueError(f"bad job name {value!r} in device {whole!r}")
            self.job = value
        elif key in ("replica", "task"):
            if value is None or not value.isdigit():
                raise ValueError(f"{key} index must be a non-negative integer, got {value!r} in {whole!r}")
            setattr(self, key, int(value))
        elif key == "device":
            kind, _, index = (value or "").partition(":")
            if not kind:
                raise ValueError(f"empty device type in {whole!r}; use e.g. /device:CPU:0")
            self._set_device(kind, index, whole)
        else:  # /cpu:0, /gpu:1
            self._set_device(key, value or "*", whole)

    def _set_device(self, kind, index, whole):
        self.device_type = kind.upper()
        if index in ("", "*", None):
            self.device_index = None
        elif index.isdigit():
            self.device_index = int(index)
        else:
            raise ValueError(f"device index must be an integer or '*', got {index!r} in {whole!r}")

    def copy(self):
        return DeviceSpec(self.job, self.replica, self.task, self.device_type, self.device_index)

    def merge_from(self, other):
        """Overwrites this spec's fields with those set in `other` (in place)."""
        other = DeviceSpec.from_string(other) if not isinstance(other, DeviceSpec) else other
        for field in self.__slots__:
            value = getattr(other, field)
            if value is not None:
                setattr(self, field, value)

    def make_merged_spec(self, other):
        """A new spec: this one with `other`'s set fields on top."""
        out = self.copy()
        out.merge_from(other)
        return out

    def to_string(self):
        """The spec with only its set fields, in canonical order."""
        parts = []
        if self.job is not None:
            parts.append(f"/job:{self.job}")
        if self.replica is not None:
            parts.append(f"/replica:{self.replica}")
        if self.task is not None:
            parts.append(f"/task:{self.task}")
        if self.device_type is not None:
            index = "*" if self.device_index is None else self.device_index
            parts.append(f"/device:{self.device_type}:{index}")
        return "".join(parts)

    def is_fully_specified(self):
        return None not in (self.job, self.replica, self.task, self.device_type, self.device_index)

    def __eq__(self, other):
        if isinstance(other, str):
            other = DeviceSpec.from_string(other)
        if not isinstance(other, DeviceSpec):
            return NotImplemented
        return all(getattr(self, f) == getattr(other, f) for f in self.__slots__)

    def __hash__(self):
        return hash(self.to_string())

    def __repr__(self):
        return f"DeviceSpec({self.to_string()!r})"


def canonical_device(job, task, replica=0, device_type="CPU", device_index=0):
    """The full device string ``/job:J/replica:R/task:T/device:CPU:0``."""
    return f"/job:{job}/replica:{replica}/task:{task}/device:{device_type}:{device_index}"


def canonicalize(device):
    """Normalises a device string (field order, case) without completing it."""
    return DeviceSpec.from_string(device or "").to_string()


def merge_device(spec):
    """A device function that merges `spec` under the op's current device (TF's rule)."""
    base = DeviceSpec.from_string(spec)

    def _merge(op):
        return base.make_merged_spec(DeviceSpec.from_string(op.device or "")).to_string()

    _merge.spec = base
    return _merge


def task_of(device):
    """``(job, task)`` of a device string, e.g. ``("ps", 0)``; fields may be None."""
    spec = DeviceSpec.from_string(device or "")
    return spec.job, spec.task


@functools.lru_cache(maxsize=4096)  # on the rendezvous' path: parse each device string once
@functools.lru_cache(maxsize=4096)  # asked for every tensor a step sends to another task
def task_prefix(device):
    """``/job:J/replica:R/task:T`` of a full device: the task it names (a partition key)."""
    spec = DeviceSpec.from_string(device)
    return f"/job:{spec.job}/replica:{spec.replica or 0}/task:{spec.task}"


class Task(NamedTuple):
    """One task of a cluster: the only place a task's spellings are made and parsed.

    A `Task` is a ``(job, index)`` tuple (equal to one, so it keys dicts as one does)::

        t = Task.parse("/job:worker/replica:0/task:1/device:CPU:0")
        t.device   # "/job:worker/replica:0/task:1"  what the runtime keys partitions by
        t.name     # "/job:worker/task:1"            how events and status name a task
        t.label    # "worker:1"                      the prefix of a task's output lines
        t.slug     # "worker_1"                      safe inside node names
    """

    job: str
    index: int

    @classmethod
    def parse(cls, device):
        """The task of a device string (``/job:J[/replica:R]/task:T[/device:...]``).

        Raises:
            ValueError: the string names no job or no task.
        """
        spec = DeviceSpec.from_string(device)
        if spec.job is None or spec.task is None:
            raise ValueError(f"{device!r} does not name a task: expected /job:NAME/task:INDEX")
        return cls(spec.job, spec.task)

    @property
    def device(self):
        return f"/job:{self.job}/replica:0/task:{self.index}"

    @property
    def name(self):
        return f"/job:{self.job}/task:{self.index}"

    @property
    def label(self):
        return f"{self.job}:{self.index}"

    @property
    def slug(self):
        return f"{self.job}_{self.index}"
