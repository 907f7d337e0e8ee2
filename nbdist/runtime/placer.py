"""Placement: every node of a step gets a full device of the cluster.

Rules, in order (as TF's placer):
1. Colocation: nodes that name the same ``loc:@op`` group (`colocate_with`, a variable's
   ``read``/``Assign``, optimizer slots) and ops that take a resource (a variable, ...) as a ref input
   share one device: the requested device of the group's root op (else of any member).
2. Completion: a partial request is completed by defaults: no job -> the job of the
   task the client is connected to (the master's task); job but no task -> task 0 of
   that job when the master is not in that job, else the master's task; replica 0; CPU:0.
3. Validation: the job and task must exist in the cluster and pass the session's
   `device_filters`; otherwise `InvalidArgumentError` names the op, the device and the
   cluster's jobs.
"""

from nbdist import errors
from nbdist.graph.device import DeviceSpec, canonical_device
from nbdist.ops import registry


class _UnionFind:
    def __init__(self):
        self.parent = {}

    def find(self, x):
        self.parent.setdefault(x, x)
        while self.parent[x] != x:
            self.parent[x] = self.parent[self.parent[x]]
            x = self.parent[x]
        return x

    def union(self, a, b):
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[rb] = ra


def colocation_groups(nodes, by_name):
    """Union-find over colocation attrs and ref edges; returns ``name -> group root name``."""
    uf = _UnionFind()
    for node in nodes:
        uf.find(node.name)
        for loc in node.attr.get("_class", ()):
            if isinstance(loc, str) and loc.startswith("loc:@") and loc[5:] in by_name:
                uf.union(loc[5:], node.name)
        for _, src, _ in registry.ref_inputs(node):
            if src in by_name:
                uf.union(src, node.name)
    return uf


def place(nodes, by_name, cluster, master_job, master_task, device_filters=()):
    """``{node name: full device string}`` for `nodes` (which may be a pruned subset).

    Args:
        nodes: the `NodeDef`s to place.
        by_name: all nodes of the graph by name (colocation roots may lie outside `nodes`).
        cluster: the `ClusterSpec`.
        master_job, master_task: the task the client's session is connected to.
        device_filters: device strings the session may use (empty: all).

    Raises:
        InvalidArgumentError: a request the cluster cannot satisfy, naming op and device.
    """
    uf = colocation_groups(nodes, by_name)
    members = {}
    for node in nodes:
        members.setdefault(uf.find(node.name), []).append(node)
    filters = [DeviceSpec.from_string(f) for f in device_filters]
    placement = {}
    for root, group in members.items():
        requested = _group_request(root, group, by_name)
        device = _complete(requested, cluster, master_job, master_task, group[0], filters)
        for node in group:
            placement[node.name] = device
    return placement


def _group_request(root, group, by_name):
    root_node = by_name.get(root)
    if root_node is not None and root_node.device:
        return root_node.device
    for node in group:
        if node.device:
            return node.device
    return ""


def _complete(requested, cluster, master_job, master_task, node, filters):
    spec = DeviceSpec.from_string(requested)
    job = spec.job or master_job
    if spec.task is not None:
        task = spec.task
    elif job == master_job:
        task = master_task
    else:
        task = 0
    jobs = cluster.jobs
    where = f"node {node.name!r} ({node.op}) requested device {requested or '(none)'!r}"
    if job not in jobs:
        raise errors.InvalidArgumentError(
            node.name,
            None,
            f"Cannot assign a device: {where}, but the cluster has no job {job!r}; its jobs are "
            f"{_describe(cluster)}. Fix the tf.device() scope or the ClusterSpec.",
        )
    if task not in cluster.task_indices(job):
        raise errors.InvalidArgumentError(
            node.name,
            None,
            f"Cannot assign a device: {where}, but job {job!r} has no task {task}; the cluster is "
            f"{_describe(cluster)}. Fix the tf.device() scope or the ClusterSpec.",
        )
    if spec.device_type not in (None, "CPU"):
        raise errors.InvalidArgumentError(
            node.name,
            None,
            f"Cannot assign a device: {where}; nbdist tasks have only /device:CPU:0 (remove the GPU request)",
        )
    if filters and not any(_matches(f, job, task) for f in filters):
        raise errors.InvalidArgumentError(
            node.name,
            None,
            f"Cannot assign a device: {where} resolves to /job:{job}/task:{task}, which the "
            f"session's device_filters {[f.to_string() for f in filters]} exclude",
        )
    return canonical_device(job, task, spec.replica or 0)


def _matches(spec, job, task):
    return (spec.job is None or spec.job == job) and (spec.task is None or spec.task == task)


def _describe(cluster):
    return ", ".join(f"{j!r} (tasks {cluster.task_indices(j)})" for j in cluster.jobs)
