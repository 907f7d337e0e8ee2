"""TensorFlow's error classes: `OpError` and one subclass per canonical code.

Runtime failures raise these and name the node and the device they happened on.
Errors raised on a remote task are re-raised in the client as the same class, with
the message prefixed by the task (`[/job:ps/task:0] ...`) and the remote traceback
kept for IPython (`_render_traceback_`). `from_os_error` maps a failed file operation's
errno to the class TF's `IOError` gives it (a full disk is `ResourceExhaustedError`).
"""

OK = 0
CANCELLED = 1
UNKNOWN = 2
INVALID_ARGUMENT = 3
DEADLINE_EXCEEDED = 4
NOT_FOUND = 5
ALREADY_EXISTS = 6
PERMISSION_DENIED = 7
RESOURCE_EXHAUSTED = 8
FAILED_PRECONDITION = 9
ABORTED = 10
OUT_OF_RANGE = 11
UNIMPLEMENTED = 12
INTERNAL = 13
UNAVAILABLE = 14
DATA_LOSS = 15
UNAUTHENTICATED = 16


class OpError(Exception):
    """A failure while running an op: carries the message, the node and the code.

    Args:
        node_def: the failing node (a NodeDef-like object or its name), or None.
        op: the graph `Operation`, when the error happened in the client's graph.
        message: what went wrong and how to fix it.
        error_code: one of the canonical codes in this module.
    """

    error_code = UNKNOWN

    def __init__(self, node_def, op, message, error_code=None, remote_traceback=None):
        super().__init__(message)
        self._node_def = node_def
        self._op = op
        self._message = message
        if error_code is not None:
            self.error_code = error_code
        self.remote_traceback = remote_traceback

    @property
    def message(self):
        return self._message

    @property
    def op(self):
        return self._op

    @property
    def node_def(self):
        return self._node_def

    def __str__(self):
        text = self._message
        if self._op is not None and getattr(self._op, "traceback", None):
            text += "\n\nThe op was created at:\n" + "".join(self._op.traceback)
        return text

    def _render_traceback_(self):
        """Lets IPython show the remote traceback instead of the local one."""
        lines = [f"{type(self).__name__}: {self}"]
        if self.remote_traceback:
            lines = ["Remote traceback:", *self.remote_traceback.splitlines(), *lines]
        return lines


def _subclass(name, code, doc):
    cls = type(name, (OpError,), {"__doc__": doc, "error_code": code})

    def __init__(self, node_def, op, message, remote_traceback=None):
        OpError.__init__(self, node_def, op, message, code, remote_traceback)

    cls.__init__ = __init__
    return cls


CancelledError = _subclass("CancelledError", CANCELLED, "An operation or step was cancelled.")
UnknownError = _subclass("UnknownError", UNKNOWN, "An error with no better class.")
InvalidArgumentError = _subclass(
    "InvalidArgumentError", INVALID_ARGUMENT, "An op received an invalid argument."
)
DeadlineExceededError = _subclass(
    "DeadlineExceededError", DEADLINE_EXCEEDED, "A deadline expired before the operation finished."
)
NotFoundError = _subclass("NotFoundError", NOT_FOUND, "A requested entity was not found.")
AlreadyExistsError = _subclass(
    "AlreadyExistsError", ALREADY_EXISTS, "An entity that we tried to create already exists."
)
PermissionDeniedError = _subclass(
    "PermissionDeniedError", PERMISSION_DENIED, "The caller may not run this operation."
)
UnauthenticatedError = _subclass(
    "UnauthenticatedError", UNAUTHENTICATED, "The request has no valid signature."
)
ResourceExhaustedError = _subclass(
    "ResourceExhaustedError", RESOURCE_EXHAUSTED, "Some resource has been exhausted."
)
FailedPreconditionError = _subclass(
    "FailedPreconditionError",
    FAILED_PRECONDITION,
    "The system is not in a state to run the operation (e.g. an uninitialized variable).",
)
AbortedError = _subclass("AbortedError", ABORTED, "The operation was aborted.")
OutOfRangeError = _subclass(
    "OutOfRangeError", OUT_OF_RANGE, "The operation went past the valid range (e.g. a closed queue)."
)
UnimplementedError = _subclass(
    "UnimplementedError", UNIMPLEMENTED, "The operation is not implemented or supported."
)
InternalError = _subclass("InternalError", INTERNAL, "An internal invariant was broken.")
UnavailableError = _subclass("UnavailableError", UNAVAILABLE, "A task or service cannot be reached.")
DataLossError = _subclass("DataLossError", DATA_LOSS, "Unrecoverable data loss or corruption.")

_CODE_TO_CLASS = {
    cls.error_code: cls
    for cls in (
        CancelledError,
        UnknownError,
        InvalidArgumentError,
        DeadlineExceededError,
        NotFoundError,
        AlreadyExistsError,
        PermissionDeniedError,
        UnauthenticatedError,
        ResourceExhaustedError,
        FailedPreconditionError,
        AbortedError,
        OutOfRangeError,
        UnimplementedError,
        InternalError,
        UnavailableError,
        DataLossError,
    )
}


def exception_type_from_error_code(error_code):
    """The `OpError` subclass for a canonical code (`UnknownError` when unknown)."""
    return _CODE_TO_CLASS.get(error_code, UnknownError)


def error_code_from_exception_type(cls):
    return getattr(cls, "error_code", UNKNOWN)
