"""`ClusterSpec`: the cluster as jobs of tasks, each task a network address (pure data).

As in TF 1.x, a cluster maps job names to the addresses of their tasks, densely or sparsely::

    cluster = tf.train.ClusterSpec({"ps": ["localhost:2222"],
                                    "worker": ["localhost:2223", "localhost:2224"]})
    cluster.task_address("worker", 1)        # "localhost:2224"
    sparse = tf.train.ClusterSpec({"worker": {1: "w1.example.com:2222"}})
    sparse.job_tasks("worker")               # [None, "w1.example.com:2222"]

Every input form (dict of lists, dict of sparse dicts, ClusterDef-like dict, another
`ClusterSpec`, a JSON string) is normalised once, in the constructor, into
``{job: {index: address}}``, and every entry is validated there so that a bad address is
reported with its job and task before any server starts. The module also reads
``TF_CONFIG`` (`cluster_from_tf_config`) and parses addresses (`parse_address`).
"""

import ipaddress
import json
import operator
import os
import re

from nbdist.graph.device import Task
from nbdist.runtime.cluster_def import ClusterDef, JobDef

# TF's rule for job names (DeviceNameUtils: a letter, then letters, digits or '_').
_JOB_NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
_HOST_NAME_RE = re.compile(r"^[A-Za-z0-9_.\-]+$")
_ADDRESS_HELP = "expected 'host:port' such as 'localhost:2222' or '[::1]:2222'"


def parse_address(address):
    """Splits a task address into host and port.

    Args:
        address: ``"host:port"``; an IPv6 host is bracketed, ``"[::1]:2222"``.

    Returns:
        ``(host, port)``: the host without brackets (``"::1"``) and the port as an int.

    Raises:
        TypeError: if `address` is not a string.
        ValueError: quoting the address, if it has a scheme, no port, a non-numeric or
            out-of-range (1..65535) port, an empty or malformed host, or an unbracketed IPv6 host.
    """
    if not isinstance(address, str):
        raise TypeError(f"task address must be a string 'host:port', got {address!r}")
    if "://" in address:
        raise ValueError(f"address {address!r} has a scheme; drop it, {_ADDRESS_HELP}")
    if address.startswith("["):
        host, sep, port_text = address[1:].partition("]")
        if not sep or (port_text and not port_text.startswith(":")):
            raise ValueError(f"address {address!r} has an unclosed '[' around its host; {_ADDRESS_HELP}")
        port_text = port_text[1:] if port_text else None
        _check_ipv6(host, address)
    else:
        if address.count(":") > 1:
            raise ValueError(f"IPv6 host in {address!r} must be bracketed, e.g. '[::1]:2222'")
        host, sep, port_text = address.partition(":")
        port_text = port_text if sep else None
        _check_host_name(host, address)
    return host, _parse_port(port_text, address)


def _check_ipv6(host, address):
    if not host:
        raise ValueError(f"address {address!r} has an empty host; {_ADDRESS_HELP}")
    try:
        ipaddress.IPv6Address(host)
    except ValueError:
        raise ValueError(f"bracketed host {host!r} in {address!r} is not an IPv6 address") from None


def _check_host_name(host, address):
    if not host:
        raise ValueError(f"address {address!r} has an empty host; {_ADDRESS_HELP}")
    if not _HOST_NAME_RE.match(host):
        raise ValueError(
            f"host {host!r} in {address!r} has invalid characters; a host name uses letters, "
            "digits, '.', '-' and '_'"
        )


def _parse_port(port_text, address):
    if port_text is None:
        raise ValueError(f"address {address!r} has no port; {_ADDRESS_HELP}")
    if not (port_text.isascii() and port_text.isdigit()):
        raise ValueError(f"port {port_text!r} in {address!r} is not a number; {_ADDRESS_HELP}")
    port = int(port_text)
    if not 1 <= port <= 65535:
        raise ValueError(f"port {port} in {address!r} is out of range; ports are 1..65535")
    return port


def format_address(host, port):
    """The inverse of `parse_address`: ``("::1", 2222)`` -> ``"[::1]:2222"``."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def is_local_host(host):
    """Whether `host` names this machine's loopback: ``localhost``, ``127.x.x.x`` or ``::1``.

    No name is resolved (pure data): other names of this machine return False.

    Args:
        host: a host name or IP address; IPv6 may be bracketed (``"[::1]"``).
    """
    if not isinstance(host, str):
        raise TypeError(f"host must be a string, got {host!r}")
    host = host.strip("[]").lower()
    if host in ("localhost", "localhost.", "ip6-localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _address_key(address):
    """Addresses compared as (lower-cased host, port): host names are case-insensitive."""
    host, port = parse_address(address)
    return host.lower(), port


class ClusterSpec:
    """Represents a cluster as a set of "tasks", organized into "jobs" (TF's `tf.train.ClusterSpec`).

    Args:
        cluster: one of
            - a dict mapping job names to a list (or tuple) of ``"host:port"`` addresses;
            - a dict mapping job names to a dict ``{task_index: address}`` (sparse; indices
              are ints or numeric strings, as JSON gives them);
            - a `tf.train.ClusterDef` (what `as_cluster_def` returns; a real TensorFlow
              ClusterDef too), or its dict form ``{"job": [{"name": "ps", "tasks": {0: "h:2222"}}]}``;
            - another `ClusterSpec` (copied);
            - a JSON string of any of the dict forms.

    Raises:
        TypeError: quoting the value, if `cluster`, a job name, a job's tasks, a task index
            or an address has the wrong type.
        ValueError: naming the job and task, for an invalid job name, a negative or repeated
            task index, a malformed address (see `parse_address`), or an address used by two
            tasks (both are named).
    """

    def __init__(self, cluster):
        if isinstance(cluster, ClusterSpec):
            self._cluster_spec = {job: dict(tasks) for job, tasks in cluster._cluster_spec.items()}
            return
        if isinstance(cluster, (str, bytes)):
            cluster = _load_json(cluster)
        if hasattr(cluster, "job") and not isinstance(cluster, dict):  # a ClusterDef
            cluster = _from_cluster_def([{"name": j.name, "tasks": dict(j.tasks)} for j in cluster.job])
        if not isinstance(cluster, dict):
            raise TypeError(
                "`cluster` must be a dict mapping job names to lists of 'host:port' addresses, "
                f"a ClusterSpec or a JSON string, got {cluster!r}"
            )
        if _is_cluster_def(cluster):
            cluster = _from_cluster_def(cluster["job"])
        spec = {}
        for job_name, tasks in cluster.items():
            job_name = _check_job_name(job_name)
            if job_name in spec:
                raise ValueError(f"job {job_name!r} is given twice in the cluster")
            spec[job_name] = _normalize_tasks(job_name, tasks)
        self._cluster_spec = {job: spec[job] for job in sorted(spec)}
        self._check_unique_addresses()

    @classmethod
    def from_json(cls, text, source="cluster JSON"):
        """A `ClusterSpec` from JSON text, e.g. what `to_json` returned.

        Args:
            source: what to call the text in errors (``"--spec"``, a file name).

        Raises:
            ValueError: if `text` is not valid JSON or not a JSON object; see the constructor.
        """
        return cls(_load_json(text, source))

    def _check_unique_addresses(self):
        seen = {}
        for job, index, address in self.iter_tasks():
            key = _address_key(address)
            if key in seen:
                other_job, other_index = seen[key]
                raise ValueError(
                    f"address {address!r} is used by both {Task(other_job, other_index).name} and "
                    f"{Task(job, index).name}; each task needs its own host:port"
                )
            seen[key] = (job, index)

    def __bool__(self):
        return bool(self._cluster_spec)

    def __eq__(self, other):
        if isinstance(other, dict):
            try:
                other = ClusterSpec(other)
            except (TypeError, ValueError):
                return False
        if not isinstance(other, ClusterSpec):
            return NotImplemented
        return self._cluster_spec == other._cluster_spec

    def __ne__(self, other):
        result = self.__eq__(other)
        return result if result is NotImplemented else not result

    def __hash__(self):
        return hash(tuple((job, tuple(sorted(tasks.items()))) for job, tasks in self._cluster_spec.items()))

    def __repr__(self):
        key_values = self.as_dict()
        items = [f"{job!r}: {key_values[job]!r}" for job in sorted(key_values)]
        return "ClusterSpec({" + ", ".join(items) + "})"

    def as_dict(self):
        """Job names to their tasks: a list of addresses when the job's task indices are dense
        (0..n-1), else a dict ``{index: address}``; an empty job gives ``{}`` (as TF).

        Returns:
            A new dict; changing it does not change this spec.
        """
        out = {}
        for job, tasks in self._cluster_spec.items():
            if tasks and max(tasks) + 1 == len(tasks):
                out[job] = self.job_tasks(job)
            else:
                out[job] = dict(sorted(tasks.items()))
        return out

    def as_cluster_def(self):
        """The `tf.train.ClusterDef`: one `JobDef` per job (by name), ``tasks`` ``{index:
        address}``; `ClusterSpec` takes it back."""
        return ClusterDef(
            [JobDef(job, dict(sorted(tasks.items()))) for job, tasks in self._cluster_spec.items()]
        )

    @property
    def jobs(self):
        """The job names in this cluster, sorted."""
        return list(self._cluster_spec)

    def _job(self, job_name):
        try:
            return self._cluster_spec[job_name]
        except (KeyError, TypeError):
            raise ValueError(f"No such job in cluster: {job_name!r}; known jobs: {self.jobs}") from None

    def num_tasks(self, job_name):
        """The number of tasks defined in `job_name`.

        Raises:
            ValueError: if `job_name` is not a job of this cluster (the known jobs are listed).
        """
        return len(self._job(job_name))

    def task_indices(self, job_name):
        """The sorted list of valid task indices in `job_name`.

        Raises:
            ValueError: if `job_name` is not a job of this cluster.
        """
        return sorted(self._job(job_name))

    def task_address(self, job_name, task_index):
        """The ``"host:port"`` address of task `task_index` of `job_name`.

        Raises:
            TypeError: if `task_index` is not an integer.
            ValueError: if the job is unknown, or it has no such task (the valid indices are listed).
        """
        tasks = self._job(job_name)
        index = _check_index_type(task_index, f"task index for job {job_name!r}")
        if index not in tasks:
            raise ValueError(
                f"No task with index {task_index!r} in job {job_name!r}; valid indices: {sorted(tasks)}"
            )
        return tasks[index]

    def job_tasks(self, job_name):
        """The addresses of `job_name` as a list indexed by task index.

        As in TF, a sparse job gives ``None`` at the missing indices, so the list's length is
        ``max(index) + 1``, not `num_tasks`.

        Raises:
            ValueError: if `job_name` is not a job of this cluster.
        """
        tasks = self._job(job_name)
        out = [None] * (max(tasks) + 1 if tasks else 0)
        for index, address in tasks.items():
            out[index] = address
        return out

    def iter_tasks(self):
        """Yields ``(job_name, task_index, address)`` for every task, sorted by job then index."""
        for job, tasks in self._cluster_spec.items():
            for index in sorted(tasks):
                yield job, index, tasks[index]

    def find_task(self, address):
        """The ``(job_name, task_index)`` at `address`, or None if no task has it.

        Host names compare case-insensitively; no name is resolved (``localhost`` and
        ``127.0.0.1`` are different addresses here).

        Raises:
            TypeError, ValueError: if `address` is not a valid ``"host:port"`` (`parse_address`).
        """
        key = _address_key(address)
        for job, index, task_address in self.iter_tasks():
            if _address_key(task_address) == key:
                return job, index
        return None

    def to_json(self):
        """This spec as JSON text (`as_dict`, sparse indices as string keys); `from_json` reads it."""
        return json.dumps(self.as_dict(), sort_keys=True)


def _load_json(text, source="cluster JSON"):
    if isinstance(text, bytes):
        text = text.decode("utf-8")
    if not isinstance(text, str):
        raise TypeError(f"{source} must be a string, got {text!r}")
    try:
        value = json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"{source} is not valid JSON ({e}): {text!r}") from None
    if not isinstance(value, dict):
        raise ValueError(f"{source} must be an object mapping job names to address lists, got {text!r}")
    return value


def _is_cluster_def(cluster):
    """True for the dict form of a ClusterDef."""
    jobs = cluster.get("job")
    return (
        len(cluster) == 1
        and isinstance(jobs, list)
        and bool(jobs)
        and all(isinstance(j, dict) and "name" in j for j in jobs)
    )


def _from_cluster_def(job_defs):
    out = {}
    for job_def in job_defs:
        name = job_def["name"]
        if not isinstance(name, str):
            raise TypeError(f"job name must be a string, got {name!r} in ClusterDef entry {job_def!r}")
        if name in out:
            raise ValueError(f"job {name!r} is given twice in the ClusterDef")
        out[name] = job_def.get("tasks", {})
    return out


def _check_job_name(job_name):
    if isinstance(job_name, bytes):
        job_name = job_name.decode("utf-8")
    if not isinstance(job_name, str):
        raise TypeError(f"job name must be a string, got {job_name!r}")
    if not job_name:
        raise ValueError("job name is empty; name jobs like 'ps' or 'worker'")
    if not _JOB_NAME_RE.match(job_name):
        raise ValueError(
            f"job name {job_name!r} is invalid: it must start with a letter and contain only "
            "letters, digits and '_' (e.g. 'ps', 'worker', 'chief')"
        )
    return job_name


def _normalize_tasks(job_name, tasks):
    if isinstance(tasks, (list, tuple)):
        items = enumerate(tasks)
    elif isinstance(tasks, dict):
        items = tasks.items()
    else:
        raise TypeError(
            f"the tasks for job {job_name!r} must be a list of addresses or a dict from task "
            f"indices to addresses, got {tasks!r}"
        )
    out = {}
    for raw_index, address in items:
        index = _parse_index(job_name, raw_index)
        if index in out:
            raise ValueError(f"job {job_name!r} gives task index {index} twice ({raw_index!r})")
        out[index] = _check_address(job_name, index, address)
    return out


def _check_index_type(value, what):
    if isinstance(value, bool):
        raise TypeError(f"{what} must be an integer, got {value!r}")
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{what} must be an integer, got {value!r}") from None


def _parse_index(job_name, raw_index, where=None):
    """A task index from an int or a digit string; `where` names its source in errors."""
    where = where or f"in job {job_name!r}"
    if isinstance(raw_index, str):
        text = raw_index.strip()
        if not (text.isascii() and text.isdigit()):
            raise ValueError(f"task index {raw_index!r} {where} is not a non-negative integer")
        return int(text)
    index = _check_index_type(raw_index, f"task index {where}")
    if index < 0:
        raise ValueError(f"task index {index} {where} is negative; indices start at 0")
    return index


def _check_address(job_name, index, address):
    if isinstance(address, bytes):
        address = address.decode("utf-8")
    if not isinstance(address, str):
        raise TypeError(
            f"job {job_name!r} task {index}: address must be a string 'host:port', got {address!r}"
        )
    try:
        parse_address(address)
    except ValueError as e:
        raise ValueError(f"job {job_name!r} task {index}: {e}") from None
    return address


def cluster_from_tf_config(env=None):
    """Reads the cluster and this process's task from the ``TF_CONFIG`` environment variable.

    ``TF_CONFIG`` is JSON, as TF's `TFConfigClusterResolver` reads it::

        {"cluster": {"ps": ["h0:2222"], "worker": ["h1:2222", "h2:2222"]},
         "task": {"type": "worker", "index": 1}}

    Args:
        env: the environment mapping (default `os.environ`).

    Returns:
        ``(cluster_spec, job_name, task_index)``.

    Raises:
        ValueError: if ``TF_CONFIG`` is unset, not JSON, lacks ``"cluster"`` or ``"task"``'s
            ``"type"``, has a bad index, or names a task that is not in the cluster.
        TypeError: for wrongly typed entries (see `ClusterSpec`).
    """
    env = os.environ if env is None else env
    text = env.get("TF_CONFIG")
    if not text:
        raise ValueError(
            'TF_CONFIG is not set; set it to JSON like {"cluster": {"worker": ["localhost:2222"]}, '
            '"task": {"type": "worker", "index": 0}}'
        )
    try:
        config = json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"TF_CONFIG is not valid JSON ({e}): {text!r}") from None
    if not isinstance(config, dict) or not config.get("cluster"):
        raise ValueError(f'TF_CONFIG has no "cluster" entry (job name -> addresses): {text!r}')
    cluster = ClusterSpec(config["cluster"])
    task = config.get("task")
    if not isinstance(task, dict) or not task.get("type"):
        raise ValueError(
            f'TF_CONFIG has no "task": {{"type": ..., "index": ...}} saying which task this '
            f"process is: {text!r}"
        )
    job_name = task["type"]
    index = _parse_index(job_name, task.get("index", 0), 'of TF_CONFIG "task"')
    if job_name not in cluster.jobs or index not in cluster.task_indices(job_name):
        raise ValueError(f"TF_CONFIG task {job_name!r} index {index} is not in its cluster {cluster!r}")
    return cluster, job_name, index
