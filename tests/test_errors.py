"""`tf.errors`: TF's error classes, their canonical codes, and what they carry."""

import errno
import os

import pytest

import nbdist as tf
from nbdist import errors, file_errors

TF_CODES = {
    "CancelledError": 1,
    "UnknownError": 2,
    "InvalidArgumentError": 3,
    "DeadlineExceededError": 4,
    "NotFoundError": 5,
    "AlreadyExistsError": 6,
    "PermissionDeniedError": 7,
    "ResourceExhaustedError": 8,
    "FailedPreconditionError": 9,
    "AbortedError": 10,
    "OutOfRangeError": 11,
    "UnimplementedError": 12,
    "InternalError": 13,
    "UnavailableError": 14,
    "DataLossError": 15,
    "UnauthenticatedError": 16,
}


@pytest.mark.parametrize(("name", "code"), sorted(TF_CODES.items()))
def test_each_class_has_tf_canonical_code(name, code):
    cls = getattr(tf.errors, name)
    assert issubclass(cls, tf.errors.OpError)
    assert cls.error_code == code


@pytest.mark.parametrize(("name", "code"), sorted(TF_CODES.items()))
def test_code_maps_back_to_its_class(name, code):
    cls = getattr(errors, name)
    assert errors.exception_type_from_error_code(code) is cls
    assert errors.error_code_from_exception_type(cls) == code


def test_unknown_code_maps_to_unknown_error():
    assert errors.exception_type_from_error_code(999) is errors.UnknownError


def test_code_constants_have_tf_names():
    assert (errors.OK, errors.INVALID_ARGUMENT, errors.UNAVAILABLE) == (0, 3, 14)


def test_error_carries_node_op_and_message():
    e = tf.errors.InvalidArgumentError("MatMul", None, "shapes differ")
    assert (e.node_def, e.op, e.message) == ("MatMul", None, "shapes differ")
    assert str(e) == "shapes differ"
    assert e.error_code == errors.INVALID_ARGUMENT


def test_op_error_takes_an_explicit_code():
    e = tf.errors.OpError(None, None, "gone", errors.UNAVAILABLE)
    assert e.error_code == errors.UNAVAILABLE


def test_error_can_be_caught_as_op_error():
    with pytest.raises(tf.errors.OpError, match="not ready"):
        raise tf.errors.FailedPreconditionError(None, None, "not ready")


def test_error_with_op_shows_where_the_op_was_created():
    with tf.Graph().as_default():
        c = tf.constant(1.0)
    e = tf.errors.InvalidArgumentError(c.op.name, c.op, "bad value")
    text = str(e)
    assert text.startswith("bad value")
    assert "The op was created at:" in text
    assert os.path.basename(__file__) in text


def test_render_traceback_puts_remote_traceback_first():
    e = tf.errors.UnavailableError(None, None, "task down", remote_traceback="Traceback\n  line 1")
    lines = e._render_traceback_()
    assert lines[0] == "Remote traceback:"
    assert lines[-1] == "UnavailableError: task down"


@pytest.mark.parametrize(
    ("name", "cls"),
    [
        ("ENOSPC", errors.ResourceExhaustedError),
        ("EDQUOT", errors.ResourceExhaustedError),
        ("EACCES", errors.PermissionDeniedError),
        ("EPERM", errors.PermissionDeniedError),
        ("EROFS", errors.PermissionDeniedError),
        ("ENOENT", errors.NotFoundError),
        ("EIO", errors.UnknownError),
    ],
)
def test_a_file_errno_maps_to_tf_class(name, cls):
    """TF's `ErrnoToCode` (tensorflow/core/platform/error.cc) for the errors a save meets."""
    e = file_errors.from_os_error(
        OSError(getattr(errno, name), os.strerror(getattr(errno, name))), "n", None, "ctx"
    )
    assert type(e) is cls
    assert e.node_def == "n"


def test_no_file_errno_is_taken_for_a_lost_task():
    """A monitored session restores a checkpoint on these two: a failing disk must not trigger that."""
    mapped = {file_errors.exception_type_from_errno(n) for n in errno.errorcode}
    assert not mapped & {errors.UnavailableError, errors.AbortedError}


def test_an_os_error_message_says_what_failed_the_errno_and_the_fix():
    error = OSError(errno.ENOSPC, "No space left on device", "/ckpt/m.data-00000-of-00001.tmp-x")
    e = file_errors.from_os_error(error, None, None, "cannot write checkpoint shard 0 of '/ckpt/m'")
    assert str(e) == (
        "cannot write checkpoint shard 0 of '/ckpt/m': No space left on device [ENOSPC] "
        "('/ckpt/m.data-00000-of-00001.tmp-x'); free space (or quota) on that filesystem, "
        "or write somewhere else"
    )


def test_render_traceback_without_remote_part():
    e = tf.errors.AbortedError(None, None, "aborted")
    assert e._render_traceback_() == ["AbortedError: aborted"]


@pytest.mark.tf
@pytest.mark.parametrize(("name", "code"), sorted(TF_CODES.items()))
def test_codes_match_tensorflow(name, code):
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    tensorflow = pytest.importorskip("tensorflow")
    assert tensorflow.compat.v1.errors.exception_type_from_error_code(code).__name__ == name
