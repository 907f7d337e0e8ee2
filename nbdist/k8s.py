"""``nbdist k8s``: Kubernetes manifests for a ps/worker cluster, in the pattern of TF's own examples.

    nbdist k8s --ps 1 --worker 4 --image registry.example.com/nbdist:0.1 \\
        --script examples/async_linear_regression.py --task-flags --out k8s/
    kubectl apply -f k8s/

Per TF job (``ps``, ``worker``) a headless Service and a StatefulSet of that many pods, and a
Secret with the cluster key. Written to ``--out DIR`` as ``secret.yaml``, ``ps.yaml`` and
``worker.yaml``, or to stdout as one YAML stream.

**Task addresses.** Task ``i`` of job ``J`` is pod ``NAME-J-i`` of StatefulSet ``NAME-J``, whose
headless Service ``NAME-J`` gives it the DNS name ``NAME-J-i.NAME-J``; its address in the
cluster is ``NAME-J-i.NAME-J:PORT``. The Service publishes a pod's name before the pod is ready
(``publishNotReadyAddresses``): a TF cluster needs every task's name while its tasks start.

**Which task a pod is.** Every pod of a StatefulSet has the same spec; only its name differs
(``NAME-J-<ordinal>``), and a StatefulSet guarantees the ordinals 0..replicas-1. The container
runs `LAUNCH_SCRIPT` (POSIX ``sh``, nothing else from the image), which reads the ordinal from
``$POD_NAME`` (the downward API's ``metadata.name``), exports
``TF_CONFIG={"cluster": <all tasks>, "task": {"type": J, "index": <ordinal>}}``, waits until
every task's name resolves, and then ``exec``s the task's program: so any program that reads
``TF_CONFIG`` (nbdist's and real TensorFlow's) gets the right task, with no per-pod manifest.
``--task-flags`` also passes TF's classic flags (``--ps_hosts``, ``--worker_hosts``,
``--job_name``, ``--task_index``) to the script, for scripts that parse those instead.

**Programs.** ps pods run ``python -m nbdist.server`` (a server that only serves, TF's
``server.join()``); worker pods run ``python SCRIPT [SCRIPT_ARGS...]``, which starts its own
``tf.train.Server`` from the cluster and trains (between-graph replication).

**The cluster key** (hex; signs every message) is in the Secret ``NAME-cluster-key`` and reaches
the containers as ``$NBDIST_CLUSTER_KEY`` through ``secretKeyRef``, never in a command line (where
``/proc/*/cmdline`` shows it). nbdist reads the key from that variable only (no key file yet).

The image is built from the repository's ``Dockerfile`` (``docs/multihost.md``).
"""

import argparse
import base64
import json
import os
import re
import secrets
import sys

JOBS = ("ps", "worker")
PORT_NAME = "nbdist"
KEY_FIELD = "key"  # the Secret's data field that holds the hex key
DNS_WAIT_S = 300  # how long a pod waits for every task's name to resolve before it gives up

# The container's command: sh -c LAUNCH_SCRIPT nbdist-launch PROGRAM... ($@ = the program).
LAUNCH_SCRIPT = r"""set -eu
ordinal="${POD_NAME##*-}"
case "$ordinal" in
  ''|*[!0-9]*)
    echo "nbdist-launch: pod name '$POD_NAME' does not end in -<ordinal> (a StatefulSet's)" >&2
    exit 2 ;;
esac
export TF_CONFIG="{\"cluster\": $NBDIST_CLUSTER, \"task\": {\"type\": \"$NBDIST_JOB\", \"index\": $ordinal}}"
if [ "$NBDIST_TASK_FLAGS" = 1 ]; then
  set -- "$@" "--job_name=$NBDIST_JOB" "--task_index=$ordinal"
fi
waited=0
if [ "$NBDIST_DNS_WAIT_S" -gt 0 ]; then
  for host in $NBDIST_HOSTS; do
    until getent hosts "$host" >/dev/null; do
      if [ "$waited" -ge "$NBDIST_DNS_WAIT_S" ]; then
        echo "nbdist-launch: task host $host does not resolve after ${waited}s: is its pod up?" >&2
        exit 3
      fi
      sleep 1
      waited=$((waited + 1))
    done
  done
fi
echo "nbdist-launch: $POD_NAME is /job:$NBDIST_JOB/task:$ordinal"
exec "$@"
"""

# A DNS-1035 label (Service names): lowercase letters, digits and '-', starting with a letter.
_DNS_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
# A StatefulSet's name becomes its pods' controller-revision-hash label with a hash appended,
# which must fit a 63-character label value: Kubernetes allows StatefulSet names up to 52.
_MAX_STATEFULSET_NAME = 52

# Docker's image reference grammar: [domain[:port]/]path[:tag][@digest], path lowercase. The
# first component is a domain only when it has a '.' or a ':' or is "localhost" (Docker's rule).
_DOMAIN_PART = r"[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?"
_DOMAIN = re.compile(rf"^{_DOMAIN_PART}(?:\.{_DOMAIN_PART})*(?::[0-9]+)?$")
_PATH_PART = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_REPOSITORY = re.compile(
    rf"^{_PATH_PART}(?:/{_PATH_PART})*"
    r"(?::[\w][\w.-]{0,127})?"
    r"(?:@[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,})?$",
    re.ASCII,
)


def check_image(image):
    """Raises ValueError unless `image` is an image reference Kubernetes can pull."""
    domain, sep, repository = image.partition("/")
    if not (sep and ("." in domain or ":" in domain or domain == "localhost")):
        domain, repository = "", image
    if len(image) > 255 or (domain and not _DOMAIN.match(domain)) or not _REPOSITORY.match(repository):
        raise ValueError(
            f"--image {image!r} is not an image reference: expected [registry[:port]/]path[:tag]"
            "[@sha256:digest] with a lowercase path, e.g. 'registry.example.com/nbdist:0.1'"
        )


def check_name(name):
    """Raises ValueError unless `name` makes valid Service and StatefulSet names for every job."""
    longest = max((f"{name}-{job}" for job in JOBS), key=len)
    if not _DNS_LABEL.match(name) or len(longest) > _MAX_STATEFULSET_NAME:
        raise ValueError(
            f"--name {name!r} cannot name the Services and StatefulSets ({longest!r}, ...): use "
            f"lowercase letters, digits and '-', starting with a letter, at most "
            f"{_MAX_STATEFULSET_NAME - len(longest) + len(name)} characters"
        )


def check_key(key_hex):
    """`key_hex` without surrounding whitespace; ValueError unless it is a usable hex key."""
    key_hex = key_hex.strip()
    if len(key_hex) < 32 or len(key_hex) % 2 or not re.fullmatch(r"[0-9a-fA-F]+", key_hex):
        # An empty key would leave the cluster unsigned ($NBDIST_CLUSTER_KEY unset means that).
        raise ValueError(
            "the cluster key must be hex, at least 32 digits (16 bytes), like the output of "
            "`python -c 'import secrets; print(secrets.token_hex(32))'`"
        )
    return key_hex


def task_addresses(name, job, count, port):
    """The cluster addresses of job `job`'s `count` pods: ``NAME-J-i.NAME-J:PORT``."""
    service = f"{name}-{job}"
    return [f"{service}-{i}.{service}:{port}" for i in range(count)]


def cluster_of(name, counts, port):
    """The ClusterSpec dict of the deployment, ``{job: [addresses]}`` (TF_CONFIG's "cluster")."""
    return {job: task_addresses(name, job, counts[job], port) for job in JOBS}


def _labels(name, job):
    return {
        "app.kubernetes.io/name": "nbdist",
        "app.kubernetes.io/instance": name,
        "app.kubernetes.io/component": job,
    }


def _selector(name, job):
    return {key: value for key, value in _labels(name, job).items() if key != "app.kubernetes.io/name"}


def secret(name, key_hex):
    """The Secret that holds the cluster key (hex) in its field `KEY_FIELD`."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": f"{name}-cluster-key", "labels": _labels(name, "cluster-key")},
        "type": "Opaque",
        "data": {KEY_FIELD: base64.b64encode(key_hex.encode("ascii")).decode("ascii")},
    }


def service(name, job, port):
    """The headless Service that gives job `job`'s pods their DNS names."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": f"{name}-{job}", "labels": _labels(name, job)},
        "spec": {
            "clusterIP": "None",
            "publishNotReadyAddresses": True,
            "selector": _selector(name, job),
            "ports": [{"name": PORT_NAME, "port": port, "targetPort": port, "protocol": "TCP"}],
        },
    }


def stateful_set(name, job, count, port, image, program, cluster, task_flags):
    """The StatefulSet of job `job`: `count` pods, each running `program` as its task."""
    hosts = [address.rpartition(":")[0] for addresses in cluster.values() for address in addresses]
    env = [
        {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        {"name": "NBDIST_JOB", "value": job},
        {"name": "NBDIST_CLUSTER", "value": json.dumps(cluster, separators=(",", ":"))},
        {"name": "NBDIST_HOSTS", "value": " ".join(hosts)},
        {"name": "NBDIST_TASK_FLAGS", "value": "1" if task_flags else "0"},
        {"name": "NBDIST_DNS_WAIT_S", "value": str(DNS_WAIT_S)},
        {
            "name": "NBDIST_CLUSTER_KEY",
            "valueFrom": {"secretKeyRef": {"name": f"{name}-cluster-key", "key": KEY_FIELD}},
        },
        {"name": "PYTHONUNBUFFERED", "value": "1"},
    ]
    container = {
        "name": job,
        "image": image,
        "command": ["sh", "-c", LAUNCH_SCRIPT, "nbdist-launch"],
        "args": program,
        "env": env,
        "ports": [{"name": PORT_NAME, "containerPort": port, "protocol": "TCP"}],
        "readinessProbe": {"tcpSocket": {"port": PORT_NAME}, "periodSeconds": 5},
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": f"{name}-{job}", "labels": _labels(name, job)},
        "spec": {
            "serviceName": f"{name}-{job}",
            "replicas": count,
            "podManagementPolicy": "Parallel",  # every task at once: they wait for each other
            "selector": {"matchLabels": _selector(name, job)},
            "template": {
                "metadata": {"labels": _labels(name, job)},
                "spec": {
                    "securityContext": {"runAsNonRoot": True},
                    "containers": [container],
                },
            },
        },
    }


def manifests(name, ps, worker, image, script, port=2222, script_args=(), task_flags=False, key_hex=None):
    """Every manifest of the deployment, by file: ``{"secret.yaml": [doc], "ps.yaml": [...], ...}``.

    Args:
        name: prefix of every object's name (a DNS label).
        ps, worker: how many tasks of each job (at least 1).
        image: the image every pod runs (built from the repository's Dockerfile).
        script: the workers' training script, a path inside the image.
        port: the port every task serves on (each pod has its own IP).
        script_args: more arguments for the script.
        task_flags: also pass ``--ps_hosts``, ``--worker_hosts``, ``--job_name``, ``--task_index``.
        key_hex: the cluster key (hex); None makes a new random one.

    Raises:
        ValueError: naming the option, for a bad count, image, name, port, script or key.
    """
    counts = {"ps": ps, "worker": worker}
    for job, count in counts.items():
        if not isinstance(count, int) or count < 1:
            raise ValueError(f"--{job} {count!r}: a cluster needs at least one {job} task")
    check_name(name)
    check_image(image)
    if not 1 <= port <= 65535:
        raise ValueError(f"--port {port!r} is not a TCP port (1..65535)")
    if not script or script.startswith("-"):
        raise ValueError(f"--script {script!r}: give the training script's path inside the image")
    key_hex = secrets.token_hex(32) if key_hex is None else check_key(key_hex)
    cluster = cluster_of(name, counts, port)
    worker_program = ["python", script, *script_args]
    if task_flags:
        worker_program += [f"--{job}_hosts={','.join(cluster[job])}" for job in JOBS]
    programs = {"ps": ["python", "-m", "nbdist.server"], "worker": worker_program}
    files = {"secret.yaml": [secret(name, key_hex)]}
    for job in JOBS:
        files[f"{job}.yaml"] = [
            service(name, job, port),
            stateful_set(name, job, counts[job], port, image, programs[job], cluster, task_flags),
        ]
    return files


# -- YAML -----------------------------------------------------------------------------------------
# A small emitter for the manifests' plain data (dicts, lists, str, int, bool): block style,
# multi-line strings as literal blocks, every other string that YAML could read as something else
# in single quotes, or in JSON's double quotes (which YAML reads as the same string) when it has
# a quote or an unprintable character.

_PLAIN = re.compile(r"^[A-Za-z_/][\w./-]*$")
_YAML_WORDS = {"true", "false", "yes", "no", "on", "off", "y", "n", "null", "~"}


def _scalar_lines(value, indent):
    """A scalar as its text after ``key: `` or ``- ``, and continuation lines at `indent`."""
    if isinstance(value, bool):
        return ["true" if value else "false"]
    if isinstance(value, int):
        return [str(value)]
    if not isinstance(value, str):
        raise TypeError(f"cannot write {type(value).__name__} {value!r} as YAML")
    if "\n" in value:
        body = value.rstrip("\n")
        trailing = len(value) - len(body)
        lines = body.split("\n")
        if trailing <= 1 and body[:1].strip() and all(line.isprintable() for line in lines):
            pad = " " * indent
            return ["|" if trailing else "|-", *[f"{pad}{line}" if line else "" for line in lines]]
        return [json.dumps(value)]
    if _PLAIN.match(value) and value.lower() not in _YAML_WORDS and not value.endswith(":"):
        return [value]
    if value.isprintable() and "'" not in value:
        return [f"'{value}'"]  # single quotes: nothing inside is special
    return [json.dumps(value)]


def _block(value, indent):
    pad = " " * indent
    if isinstance(value, dict):
        for key, item in value.items():
            head = f"{pad}{_scalar_lines(str(key), indent)[0]}:"
            if isinstance(item, (dict, list)) and item:
                yield head
                yield from _block(item, indent + 2)
            elif isinstance(item, (dict, list)):
                yield f"{head} {'{}' if isinstance(item, dict) else '[]'}"
            else:
                first, *rest = _scalar_lines(item, indent + 2)
                yield f"{head} {first}"
                yield from rest
    elif isinstance(value, list):
        for item in value:
            lines = list(_block(item, indent + 2))
            yield f"{pad}- {lines[0][indent + 2 :]}"
            yield from lines[1:]
    else:
        first, *rest = _scalar_lines(value, indent + 2)
        yield f"{pad}{first}"
        yield from rest


def to_yaml(documents):
    """`documents` (plain data) as one YAML stream, ``---`` between documents."""
    return "---\n".join("\n".join(_block(doc, 0)) + "\n" for doc in documents)


# -- the command ----------------------------------------------------------------------------------


def main(argv=None, prog="nbdist k8s"):
    parser = argparse.ArgumentParser(
        prog=prog,
        description=__doc__.split("\n\n")[0].split(": ", 1)[1],
        epilog="Everything after `--` goes to the script, e.g. `-- --train_steps=1000`. "
        "How pods find their task, and the Dockerfile: docs/multihost.md.",
    )
    parser.add_argument("--ps", type=int, required=True, help="parameter-server tasks (pods)")
    parser.add_argument("--worker", type=int, required=True, help="worker tasks (pods)")
    parser.add_argument("--image", required=True, help="the image every pod runs (see the Dockerfile)")
    parser.add_argument("--script", required=True, help="the workers' training script, its path in the image")
    parser.add_argument("--port", type=int, default=2222, help="the port every task serves on (default 2222)")
    parser.add_argument("--name", default="nbdist", help="prefix of every object's name (default nbdist)")
    parser.add_argument("--out", help="write secret.yaml, ps.yaml, worker.yaml here (default: stdout)")
    parser.add_argument(
        "--task-flags",
        action="store_true",
        help="also give the script --ps_hosts, --worker_hosts, --job_name, --task_index "
        "(TF_CONFIG is always set)",
    )
    parser.add_argument(
        "--key-file", help="a file with the cluster key (hex) for the Secret (default: a new random key)"
    )
    parser.add_argument("script_args", nargs="*", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    key_hex = None
    if args.key_file:
        try:
            with open(args.key_file, encoding="ascii") as f:
                key_hex = check_key(f.read())
        except (OSError, ValueError) as e:  # UnicodeDecodeError is a ValueError
            parser.error(f"--key-file {args.key_file!r}: {e}")
    try:
        files = manifests(
            args.name,
            args.ps,
            args.worker,
            args.image,
            args.script,
            port=args.port,
            script_args=args.script_args,
            task_flags=args.task_flags,
            key_hex=key_hex,
        )
    except ValueError as e:
        parser.error(str(e))
    if not args.out:
        sys.stdout.write(to_yaml([doc for docs in files.values() for doc in docs]))
        return 0
    os.makedirs(args.out, exist_ok=True)
    for filename, docs in files.items():
        path = os.path.join(args.out, filename)
        mode = 0o600 if filename == "secret.yaml" else 0o644  # the key: readable by its owner only
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
        os.chmod(path, mode)  # an existing file keeps its mode through os.open
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(to_yaml(docs))
        print(f"wrote {path}")
    print(f"apply with: kubectl apply -f {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
