"""TF's error class for a failed file operation (a checkpoint, the `checkpoint` state file):
`from_os_error` turns an `OSError` into the `OpError` subclass TF's errno mapping gives it.

Apart from `nbdist.errors` so that ``tf.errors`` keeps exactly TF's names.
"""

import errno as _errno

from nbdist.errors import (
    AlreadyExistsError,
    FailedPreconditionError,
    InvalidArgumentError,
    NotFoundError,
    OutOfRangeError,
    PermissionDeniedError,
    ResourceExhaustedError,
    UnimplementedError,
    UnknownError,
)

# errno -> class, as TF's `ErrnoToCode` (tensorflow/core/platform/error.cc) for file errors, except
# that nothing maps to `UnavailableError` or `AbortedError`: those mean a lost task, and a monitored
# session answers them by restoring a checkpoint into shared variables. A failing disk is no lost
# task, so TF's EAGAIN, ENOLCK, ESTALE etc. are `UnknownError` here.
_ERRNO_CLASSES = {
    InvalidArgumentError: ("EINVAL", "ENAMETOOLONG"),
    NotFoundError: ("ENOENT", "ENODEV", "ENXIO"),
    AlreadyExistsError: ("EEXIST",),
    PermissionDeniedError: ("EPERM", "EACCES", "EROFS"),
    FailedPreconditionError: ("ENOTEMPTY", "EISDIR", "ENOTDIR", "EBADF", "EBUSY", "ETXTBSY"),
    ResourceExhaustedError: ("ENOSPC", "EDQUOT", "EMFILE", "ENFILE", "EMLINK", "ENOMEM"),
    OutOfRangeError: ("EFBIG",),
    UnimplementedError: ("ENOSYS", "ENOTSUP", "EXDEV"),
}
_ERRNO_TO_CLASS = {
    getattr(_errno, name): cls
    for cls, names in _ERRNO_CLASSES.items()
    for name in names
    if hasattr(_errno, name)
}
_HINTS = {
    ResourceExhaustedError: "free space (or quota) on that filesystem, or write somewhere else",
    PermissionDeniedError: "check the owner and mode of the path and that its filesystem is writable",
}


def exception_type_from_errno(number):
    """The `OpError` subclass for a file operation that failed with `number` (`UnknownError`
    for an errno without a better class). Never `UnavailableError` or `AbortedError`."""
    return _ERRNO_TO_CLASS.get(number, UnknownError)


def from_os_error(error, node_def, op, context):
    """The TF error for an `OSError` of a file operation, to raise ``from None``.

    Args:
        error: the `OSError`.
        node_def, op: where it happened, as for `OpError`.
        context: what was being done (``"cannot write checkpoint shard 0 of '/ckpt/model-5'"``).

    Example::

        except OSError as e:
            raise errors.from_os_error(e, node.name, None, f"cannot write {path!r}") from None
    """
    cls = exception_type_from_errno(error.errno)
    name = _errno.errorcode.get(error.errno, "no errno")
    message = f"{context}: {error.strerror or error} [{name}]"
    if error.filename is not None:
        message += f" ({error.filename!r})"
    if cls in _HINTS:
        message += f"; {_HINTS[cls]}"
    return cls(node_def, op, message)
