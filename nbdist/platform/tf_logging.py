"""`tf.logging`: TF 1.x's logging functions on the standard `logging` module.

Messages go to the ``nbdist`` logger (nbdist's own modules log below it, so
``tf.logging.set_verbosity(tf.logging.INFO)`` shows them too, as TF's does for its own),
printed to stderr as ``INFO:nbdist:message`` unless the program configured logging itself.
The default verbosity is WARN, as in TF.
"""

import logging as _logging
import sys

DEBUG = _logging.DEBUG
INFO = _logging.INFO
WARN = _logging.WARN
WARNING = _logging.WARNING
ERROR = _logging.ERROR
FATAL = _logging.FATAL

_logger = None
_counts = {}


def get_logger():
    """The ``nbdist`` logger, with a stderr handler unless the program set up logging."""
    global _logger
    if _logger is None:
        logger = _logging.getLogger("nbdist")
        if not _logging.getLogger().handlers and not logger.handlers:
            handler = _logging.StreamHandler(sys.stderr)
            handler.setFormatter(_logging.Formatter("%(levelname)s:%(name)s:%(message)s"))
            logger.addHandler(handler)
            logger.propagate = False
        if logger.level == _logging.NOTSET:
            logger.setLevel(WARN)
        _logger = logger
    return _logger


def set_verbosity(v):
    """Shows messages at level `v` and above (``tf.logging.INFO``, ...)."""
    get_logger().setLevel(v)


def get_verbosity():
    return get_logger().getEffectiveLevel()


def log(level, msg, *args, **kwargs):
    get_logger().log(level, msg, *args, **kwargs)


def debug(msg, *args, **kwargs):
    get_logger().debug(msg, *args, **kwargs)


def info(msg, *args, **kwargs):
    get_logger().info(msg, *args, **kwargs)


def warning(msg, *args, **kwargs):
    get_logger().warning(msg, *args, **kwargs)


warn = warning


def error(msg, *args, **kwargs):
    get_logger().error(msg, *args, **kwargs)


def fatal(msg, *args, **kwargs):
    get_logger().fatal(msg, *args, **kwargs)


def _caller_key():
    frame = sys._getframe(2)  # the caller of log_every_n / log_first_n
    return frame.f_code.co_filename, frame.f_lineno


def log_every_n(level, msg, n, *args):
    """Logs `msg` the first time and then every `n`-th time this line runs."""
    key = _caller_key()
    count = _counts.get(key, 0)
    _counts[key] = count + 1
    if count % max(1, n) == 0:
        log(level, msg, *args)


def log_first_n(level, msg, n, *args):
    """Logs `msg` only the first `n` times this line runs."""
    key = _caller_key()
    count = _counts.get(key, 0)
    _counts[key] = count + 1
    if count < n:
        log(level, msg, *args)


def log_if(level, msg, condition, *args):
    if condition:
        log(level, msg, *args)
