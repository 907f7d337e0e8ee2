"""The IPython extension: ``%load_ext nbdist``, then ``%dtf_cluster`` and ``%%dtf_worker``.

``%dtf_cluster``
    Starts, shows, stops or restarts the notebook's cluster (a `LocalCluster`): one server
    process per task, on free ports of 127.0.0.1, each answering within a bounded wait. The
    cluster is bound to ``dtf`` in the notebook and shown once, as a live status table.

``%%dtf_worker``
    Runs the cell in every selected task's process at once (between-graph replication: each
    task is its own client with its own graph), streaming their output with a ``[worker:0]``
    prefix. Each task keeps its own namespace with ``server``, ``cluster``, ``job_name``,
    ``task_index`` and ``tf`` predefined.

The magics only parse their arguments; `nbdist.notebook.local_cluster` and
`nbdist.notebook.task_exec` do the work.
"""

import difflib
import sys
from pathlib import Path

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring
from IPython.utils.process import arg_split

from nbdist.notebook import local_cluster as cluster_lib
from nbdist.notebook import task_exec
from nbdist.runtime.cluster import ClusterSpec

_ACTIONS = ("status", "stop", "restart")
# TF's job names (ClusterSpec, TF_CONFIG, the estimator's task types): another name is fine, but
# one a letter or two away from these is most likely a typo (`wroker=2`), so it gets a warning.
_USUAL_JOBS = ("ps", "worker", "chief", "master", "local", "evaluator")
_HELP_FLAGS = ("-h", "--help")


@magics_class
class ClusterMagics(Magics):
    """``%dtf_cluster`` and ``%%dtf_worker``; the cluster they act on is `cluster_lib.current()`."""

    @magic_arguments()
    @argument(
        "words",
        nargs="*",
        metavar="JOB=N | status | stop | restart",
        help="job sizes such as `local=2` or `ps=1 worker=2` start a cluster (stopping the one "
        "running); `status` (or nothing) shows it, `stop` stops it, `restart` restarts it",
    )
    @argument(
        "--spec",
        metavar="JSON",
        help='an explicit ClusterSpec, e.g. \'{"ps": ["localhost:2222"]}\': '
        "tasks on this machine are started, others only connected to",
    )
    @argument("--spec-file", metavar="PATH", help="read the ClusterSpec JSON from this file")
    @argument(
        "--attach",
        action="store_true",
        help="with --spec/--spec-file: start nothing, connect to tasks already running (e.g. "
        "`nbdist server` on other hosts); `stop` leaves them running",
    )
    @argument(
        "--timeout",
        type=float,
        default=cluster_lib.READY_TIMEOUT_S,
        metavar="S",
        help="how long each task may take to start (default %(default)s s)",
    )
    @line_magic
    def dtf_cluster(self, line):
        """Start, show, stop or restart the notebook's local cluster of server processes.

        Examples::

            %dtf_cluster local=2              # job "local" with 2 tasks
            %dtf_cluster ps=1 worker=2
            %dtf_cluster --spec '{"worker": ["localhost:2222", "localhost:2223"]}'
            %dtf_cluster                      # show the running cluster (also: status)
            %dtf_cluster stop
            %dtf_cluster restart

        With ``--attach``, ``--spec``/``--spec-file`` name tasks already running elsewhere (servers
        started with ``nbdist server`` on other hosts, `docs/multihost.md`): nothing is started,
        each task must answer within ``--timeout``, and ``stop`` leaves them running.

        The cluster is bound to ``dtf`` in the notebook and shown once, wherever the line is
        in the cell: the live status widget (a text table outside Jupyter). A trailing
        ``# comment`` is ignored, as on a Python line.
        """
        line = strip_comment(line)
        if _asks_for_help(line):
            return _print_help(self.dtf_cluster)
        args = parse_argstring(self.dtf_cluster, line)
        actions = [w for w in args.words if w in _ACTIONS]
        if actions:
            if len(args.words) > 1 or args.spec or args.spec_file or args.attach:
                raise UsageError(f"%dtf_cluster {actions[0]} takes no other arguments, got {line!r}")
            return getattr(self, f"_{actions[0]}")()
        jobs = _parse_jobs(args.words)
        spec = _read_spec(args.spec, args.spec_file)
        if not jobs and spec is None:
            return self._status()
        if jobs and spec is not None:
            raise UsageError("%dtf_cluster takes job sizes (ps=1 worker=2) or --spec/--spec-file, not both")
        if args.attach and spec is None:
            raise UsageError("%dtf_cluster --attach needs the running tasks' --spec or --spec-file")
        running = cluster_lib.current()
        if running is not None:
            running.stop()
        try:
            cluster = cluster_lib.LocalCluster(
                spec=spec, ready_timeout_s=args.timeout, attach=args.attach, **jobs
            )
        except ValueError as e:
            raise UsageError(f"%dtf_cluster: {e}") from None
        self.shell.user_ns["dtf"] = cluster
        cluster.display_status()

    def _status(self):
        cluster = cluster_lib.current()
        if cluster is None:
            print("No cluster is running; start one with `%dtf_cluster local=2` (or ps=1 worker=2)")
            return
        cluster.display_status()

    def _stop(self):
        cluster = cluster_lib.current()
        if cluster is None:
            print("No cluster is running.")
            return
        cluster.stop()
        if cluster.attached:
            print(
                f"Detached from {cluster!r}: its servers were left running (they were started "
                "elsewhere; stop them where they run)."
            )
            return
        print(f"Stopped {cluster!r}.")

    def _restart(self):
        cluster = cluster_lib.current() or self.shell.user_ns.get("dtf")
        if not isinstance(cluster, cluster_lib.LocalCluster):
            raise UsageError("no cluster to restart; start one with `%dtf_cluster local=2`")
        cluster.restart()
        self.shell.user_ns["dtf"] = cluster
        cluster.display_status()

    @magic_arguments()
    @argument("--job", help="the job whose tasks run the cell (default: `worker`, or the cluster's only job)")
    @argument("--tasks", metavar="I,J", help="comma-separated task indices (default: every task of the job)")
    @argument(
        "--timeout",
        type=float,
        metavar="S",
        help="interrupt the tasks and raise TimeoutError after S seconds (default: no bound)",
    )
    @cell_magic
    def dtf_worker(self, line, cell):
        """Run the cell in every selected task's process at once (between-graph replication).

        Each task has a persistent namespace with ``server``, ``cluster``, ``job_name``,
        ``task_index`` and ``tf`` (nbdist), so ``tf.Session(server.target)`` is its own
        client. Output is streamed with a ``[worker:0]`` prefix; an exception on any task
        is raised here with that task's traceback; the last expression's value comes
        back per task. Interrupting the kernel interrupts the cell on every task.

        Example (after ``%dtf_cluster ps=1 worker=2``)::

            %%dtf_worker --job worker
            worker = f"/job:worker/task:{task_index}"
            with tf.device(tf.train.replica_device_setter(cluster=cluster, worker_device=worker)):
                w = tf.Variable(tf.ones([2, 2]), name=f"w{task_index}")  # on /job:ps/task:0
                y = tf.reduce_sum(w) * float(task_index + 1)  # on this worker
            with tf.Session(server.target) as sess:  # this task is its own client
                sess.run(w.initializer)
                print("task", task_index, "computed", sess.run(y), "with", w.op.name, "on", w.device)
        """
        line = strip_comment(line)
        if _asks_for_help(line):
            return _print_help(self.dtf_worker)  # (the cell is not run)
        args = parse_argstring(self.dtf_worker, line)
        cluster = cluster_lib.current()
        if cluster is None:
            raise UsageError("%%dtf_worker needs a running cluster: run `%dtf_cluster ps=1 worker=2` first")
        tasks = _select_tasks(cluster.cluster_spec, args.job, args.tasks)
        if args.timeout is not None and args.timeout <= 0:
            raise UsageError(f"%%dtf_worker --timeout must be positive seconds, got {args.timeout}")
        return task_exec.run_cell(tasks, cell, cluster.key, timeout_s=args.timeout)


def strip_comment(line):
    """`line` without a trailing ``# comment``, as a Python line or a shell word would end.

    A ``#`` starts a comment at the start of the line or after whitespace, outside quotes; a
    ``#`` inside a quoted argument (``--spec '{"a#b": [...]}'``) or inside a word (``a#b``) is
    kept. IPython hands a line magic everything after its name, comment included.
    """
    quote = None
    for i, ch in enumerate(line):
        if quote is not None:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip()
    return line


def _asks_for_help(line):
    """Whether the magic's line has ``-h``/``--help`` among its words (argparse's help flags:
    IPython's magic parsers have none, so they would call them unrecognized arguments)."""
    try:
        words = arg_split(line)
    except ValueError:  # unbalanced quotes: the parser reports them
        return False
    return any(word in _HELP_FLAGS for word in words)


def _print_help(magic):
    """Prints what ``%magic?`` shows: the usage line, the description and every option."""
    text = magic.__doc__.strip()
    if text.startswith("::"):  # magic_arguments' usage block, a reStructuredText literal
        text = "usage:" + text[2:]
    print(text)


def _near_miss(word, choices):
    """The one of `choices` that `word` is most likely a typo of, or None."""
    close = difflib.get_close_matches(word, choices, n=1, cutoff=0.75)
    return close[0] if close else None


def _parse_jobs(words):
    """``["ps=1", "worker=2"]`` -> ``{"ps": 1, "worker": 2}``, or UsageError naming the bad word.

    A job name that is not one of TF's usual ones but is a near miss of one (``wroker``) is
    started as given, with a warning on stderr.
    """
    jobs = {}
    for word in words:
        name, sep, count = word.partition("=")
        command = None if sep else _near_miss(word, _ACTIONS)
        if command is not None:
            raise UsageError(
                f"%dtf_cluster: {word!r} is not a command or JOB=N; did you mean `%dtf_cluster {command}`? "
                f"(commands: {', '.join(_ACTIONS)}; JOB=N such as local=2 starts a cluster)"
            )
        if not sep or not name or not count.isdigit() or int(count) < 1:
            raise UsageError(
                f"%dtf_cluster: {word!r} is not JOB=N (a job name and a positive task count), "
                "e.g. `%dtf_cluster local=2` or `%dtf_cluster ps=1 worker=2`"
            )
        if name in jobs:
            raise UsageError(f"%dtf_cluster: job {name!r} is given twice")
        usual = None if name in _USUAL_JOBS else _near_miss(name, _USUAL_JOBS)
        if usual is not None:
            print(
                f"%dtf_cluster: warning: job {name!r} is not a usual job name; did you mean {usual!r}? "
                f"(starting it as {name!r}; `%dtf_cluster {usual}={count}` starts {usual!r})",
                file=sys.stderr,
            )
        jobs[name] = int(count)
    return jobs


def _unquote(text):
    """IPython keeps the quotes around a quoted magic argument (non-POSIX splitting): drop them."""
    if text is not None and len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return text


def _read_spec(spec, spec_file):
    spec, spec_file = _unquote(spec), _unquote(spec_file)
    if spec is not None and spec_file is not None:
        raise UsageError("%dtf_cluster takes --spec or --spec-file, not both")
    try:
        if spec is not None:
            return ClusterSpec.from_json(spec, "--spec")
        if spec_file is not None:
            text = Path(spec_file).expanduser().read_text()
            return ClusterSpec.from_json(text, f"--spec-file {spec_file}")
    except OSError as e:
        raise UsageError(f"%dtf_cluster --spec-file: cannot read {spec_file!r}: {e.strerror}") from None
    except (TypeError, ValueError) as e:
        raise UsageError(f"%dtf_cluster: {e}") from None
    return None


def _select_tasks(spec, job, tasks_text):
    """``[(job, index, address)]`` for ``--job``/``--tasks``, or UsageError listing the valid ones."""
    if job is None:
        if "worker" in spec.jobs:
            job = "worker"
        elif len(spec.jobs) == 1:
            job = spec.jobs[0]
        else:
            raise UsageError(
                f"%%dtf_worker: which job? the cluster has {spec.jobs} and no 'worker'; give --job NAME"
            )
    if job not in spec.jobs:
        raise UsageError(f"%%dtf_worker: no job {job!r} in the cluster; its jobs are {spec.jobs}")
    indices = spec.task_indices(job)
    if tasks_text:
        try:
            chosen = [int(t) for t in tasks_text.split(",") if t.strip()]
        except ValueError:
            raise UsageError(f"%%dtf_worker --tasks must be indices like 0,1, got {tasks_text!r}") from None
        unknown = [i for i in chosen if i not in indices]
        if unknown or not chosen:
            raise UsageError(f"%%dtf_worker: job {job!r} has tasks {indices}, not {unknown or tasks_text!r}")
        indices = chosen
    return [(job, i, spec.task_address(job, i)) for i in indices]


def load_ipython_extension(ipython):
    """``%load_ext nbdist``: registers ``%dtf_cluster`` and ``%%dtf_worker``."""
    ipython.register_magics(ClusterMagics)


def unload_ipython_extension(ipython):
    """``%unload_ext nbdist``: removes the magics (a running cluster keeps running)."""
    magics = ipython.magics_manager.magics
    magics["line"].pop("dtf_cluster", None)
    magics["cell"].pop("dtf_worker", None)
