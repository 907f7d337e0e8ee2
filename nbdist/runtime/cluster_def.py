"""`tf.train.ClusterDef` and `tf.train.JobDef`: TF's cluster protobufs as plain data with the
same fields (``ClusterDef.job``: `JobDef`s; ``JobDef.name``, ``JobDef.tasks``: ``{index:
"host:port"}``), what `ClusterSpec.as_cluster_def` returns and `ClusterSpec` takes back, as does
it a real TensorFlow ``ClusterDef`` (read field by field).

    cluster_def = tf.train.ClusterDef()
    cluster_def.job.add(name="ps", tasks={0: "ps0:2222"})
    tf.train.ClusterSpec(cluster_def).job_tasks("ps")      # ['ps0:2222']
"""


def _check_fields(message, given, known):
    for name in given:
        if name not in known:
            raise ValueError(f'Protocol message {message} has no "{name}" field.')


class JobDef:
    """One job: its `name` and `tasks` ``{task index: "host:port"}``."""

    def __init__(self, name="", tasks=None):
        if not isinstance(name, str):
            raise TypeError(f"JobDef.name must be a string, got {name!r}")
        self.name = name
        self.tasks = {int(k): v for k, v in dict(tasks or {}).items()}

    def __eq__(self, other):
        return isinstance(other, JobDef) and (self.name, self.tasks) == (other.name, other.tasks)

    __hash__ = None

    def __repr__(self):
        return f"JobDef(name={self.name!r}, tasks={self.tasks!r})"


class _JobList(list):
    """``ClusterDef.job``: a list of `JobDef` with protobuf's ``add(**fields)``."""

    def add(self, **fields):
        _check_fields("JobDef", fields, ("name", "tasks"))
        job = JobDef(**fields)
        self.append(job)
        return job


class ClusterDef:
    """The jobs of a cluster: ``job`` is a list of `JobDef` (``cluster_def.job.add(...)`` adds one)."""

    def __init__(self, job=()):
        self.job = _JobList(job)
        for j in self.job:
            if not isinstance(j, JobDef):
                raise TypeError(f"ClusterDef.job holds JobDefs, got {j!r}")

    @classmethod
    def of(cls, proto):
        """A `ClusterDef` of anything with ClusterDef's fields (a real TensorFlow ClusterDef)."""
        return cls([JobDef(j.name, dict(j.tasks)) for j in proto.job])

    def __eq__(self, other):
        return isinstance(other, ClusterDef) and list(self.job) == list(other.job)

    __hash__ = None

    def __repr__(self):
        return f"ClusterDef(job={list(self.job)!r})"
