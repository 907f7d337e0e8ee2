"""The `import nbdist as tf` facade: TF 1.x names at TF's paths, and a clear error for the rest."""

import importlib.metadata
import types

import pytest

import nbdist as tf


@pytest.mark.parametrize(
    "path",
    [
        "placeholder",
        "constant",
        "Variable",
        "Session",
        "InteractiveSession",
        "Graph",
        "device",
        "name_scope",
        "control_dependencies",
        "gradients",
        "global_variables_initializer",
        "float32",
        "errors.OpError",
        "errors.InvalidArgumentError",
        "nn.relu",
    ],
)
def test_supported_names_resolve(path):
    obj = tf
    for part in path.split("."):
        obj = getattr(obj, part)
    assert obj is not None


def test_namespaces_are_modules():
    for name in ("nn", "train", "errors", "summary", "metrics", "losses", "layers"):
        assert isinstance(getattr(tf, name), types.ModuleType)


@pytest.mark.parametrize(
    ("namespace", "name", "shown_as"),
    [
        (tf, "contrib", "tf.contrib"),
        (tf, "estimator", "tf.estimator"),
        (tf.nn, "quantized_conv2d", "tf.nn.quantized_conv2d"),
        (tf.train, "NoSuchThing", "tf.train.NoSuchThing"),
        (tf.metrics, "streaming_auc", "tf.metrics.streaming_auc"),
    ],
)
def test_unsupported_name_says_so_and_points_to_the_docs(namespace, name, shown_as):
    with pytest.raises(AttributeError, match=f"{shown_as} is not supported by nbdist yet; docs/api.md"):
        getattr(namespace, name)


def test_hasattr_is_false_for_unsupported_names():
    assert not hasattr(tf, "contrib")


def test_dunder_lookups_fail_plainly():
    with pytest.raises(AttributeError) as info:
        tf.__wrapped__  # noqa: B018 - the lookup is the test
    assert "not supported" not in str(info.value)


def test_from_import_of_unsupported_name_is_an_import_error():
    with pytest.raises(ImportError):
        exec("from nbdist import contrib", {})  # noqa: S102 - testing the import statement itself


def test_version_matches_package_metadata():
    try:
        installed = importlib.metadata.version("nbdist")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("nbdist is not pip-installed here (pip install -e .)")
    assert tf.__version__ == installed


def _public_names(namespace):
    return {
        n
        for n in dir(namespace)
        if not n.startswith("_") and not isinstance(getattr(namespace, n), types.ModuleType)
    }


@pytest.mark.tf
@pytest.mark.parametrize(
    "path", ["", "nn", "train", "errors", "summary", "metrics", "losses", "layers", "python_io", "sparse"]
)
def test_every_exported_name_exists_in_tensorflow(tf1, path):
    ours, theirs = tf, tf1
    for part in filter(None, path.split(".")):
        ours, theirs = getattr(ours, part), getattr(theirs, part)
    missing = _public_names(ours) - set(dir(theirs)) - set(getattr(ours, "_NBDIST_ADDITIONS", ()))
    assert not missing, f"tf.{path or '*'} names that TensorFlow 1.x does not have: {sorted(missing)}"
