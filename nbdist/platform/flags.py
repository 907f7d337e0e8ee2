"""`tf.flags` / `tf.app.flags`: TF 1.x's command-line flags, which are absl's.

TF 1.x (from 1.5 on) re-exports `absl.flags`, so nbdist does too rather than imitate it:
the same `DEFINE_*` functions, the same parsing (``--name=value``, ``--name value``,
``--noflag`` for booleans, ``--flagfile``), the same errors. What TF adds is kept: reading
a flag before anything parsed the command line parses `sys.argv` then (unknown flags
are left alone, for the program), as TF's `FLAGS` wrapper does.
"""

import sys

from absl import flags as _absl_flags
from absl.flags import (  # noqa: F401 - TF's tf.flags re-exports these
    DEFINE_bool,
    DEFINE_boolean,
    DEFINE_enum,
    DEFINE_float,
    DEFINE_integer,
    DEFINE_list,
    DEFINE_multi_float,
    DEFINE_multi_integer,
    DEFINE_multi_string,
    DEFINE_string,
    Error,
    FlagValues,
    IllegalFlagValueError,
    UnrecognizedFlagError,
    mark_flag_as_required,
    mark_flags_as_required,
)


class _FlagValuesWrapper:
    """`FLAGS`: absl's flag values, parsed from `sys.argv` on first read (TF's behaviour)."""

    def __init__(self, wrapped):
        self.__dict__["_wrapped"] = wrapped

    def __getattr__(self, name):
        wrapped = self.__dict__["_wrapped"]
        if not wrapped.is_parsed():
            wrapped(sys.argv, known_only=True)
        return getattr(wrapped, name)

    def __setattr__(self, name, value):
        setattr(self.__dict__["_wrapped"], name, value)

    def __delattr__(self, name):
        delattr(self.__dict__["_wrapped"], name)

    def __dir__(self):
        return dir(self.__dict__["_wrapped"])

    def __getitem__(self, name):
        return self.__dict__["_wrapped"][name]

    def __contains__(self, name):
        return name in self.__dict__["_wrapped"]

    def __iter__(self):
        return iter(self.__dict__["_wrapped"])

    def __call__(self, *args, **kwargs):
        return self.__dict__["_wrapped"](*args, **kwargs)


FLAGS = _FlagValuesWrapper(_absl_flags.FLAGS)
