"""Deadness: the value of a tensor on the side of a `Switch` that was not taken.

TF 1.x's `tf.cond` is dataflow: ``Switch(data, pred)`` forwards `data` to one of its two
outputs, and the other output is *dead*. An op with a dead input does not run and its outputs
are dead too (a control input from a dead op makes it dead as well); ``Merge`` forwards its one
live input. So the ops of the untaken branch are skipped without anyone deciding to skip
them, and a dead tensor crosses tasks as a flag with no value (``_Send``/``_Recv``).

`DEAD` is that value in an executor's slots. Only the ops declared ``takes_dead`` (``Merge``,
``_Send``) ever see it; the executor gives every other op with a dead input dead outputs.
"""


class _Dead:
    __slots__ = ()

    def __repr__(self):
        return "DEAD"

    def __reduce__(self):  # one object per process, also through copy/pickle of a plan's values
        return "DEAD"


DEAD = _Dead()

# The ops that introduce deadness: a plan with one of them (or a `_Recv` that may receive a
# dead tensor: `partition` marks it ``may_be_dead``) runs with deadness checks.
DEADNESS_SOURCES = frozenset({"Switch"})
