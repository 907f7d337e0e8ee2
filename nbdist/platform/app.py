"""`tf.app`: `tf.app.run(main=None, argv=None)` and `tf.app.flags`.

As in TF 1.x: the known flags are parsed from `argv` (default `sys.argv`), unknown ones
are left in the list handed to `main`, and the process exits with `main`'s return value.
"""

import sys

from absl import app as _absl_app

from nbdist.platform import flags
from nbdist.platform.flags import FLAGS as _FLAGS


def _parse_flags_tolerate_undef(argv):
    """Parses the flags it knows; the rest stay in argv for the program (TF's rule)."""
    return _FLAGS(sys.argv if argv is None else argv, known_only=True)


def run(main=None, argv=None):
    """Runs `main(argv)` (default: the ``__main__`` module's ``main``) and exits with its result."""
    main = main or sys.modules["__main__"].main
    _absl_app.run(main=main, argv=argv, flags_parser=_parse_flags_tolerate_undef)


__all__ = ["flags", "run"]
