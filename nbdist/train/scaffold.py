"""`tf.train.Scaffold`: the ops a monitored session needs to create a ready session.

`finalize()` fills in whatever was not given, as TF does (from the graph's collections
first, else a default), then finalizes the graph:

- ``init_op``: `global_variables_initializer()`;
- ``ready_op``: `report_uninitialized_variables()` (all variables);
- ``ready_for_local_init_op``: `report_uninitialized_variables(global_variables())`;
- ``local_init_op``: `local_variables_initializer()`;
- ``summary_op``: `tf.summary.merge_all()` (None when the graph has no summaries);
- ``saver``: the graph's ``SAVERS`` collection entry, else a new `Saver(allow_empty=True)`.
"""

import logging

from nbdist.graph.graph import GraphKeys, get_default_graph
from nbdist.ops import control_flow_ops, state_ops, summary_ops
from nbdist.train.saver import Saver

_log = logging.getLogger("nbdist")

# TF's collection names for these (tf.GraphKeys.READY_FOR_LOCAL_INIT_OP, ...).
READY_FOR_LOCAL_INIT_OP = "ready_for_local_init_op"
LOCAL_INIT_OP = "local_init_op"
SUMMARY_OP = "summary_op"


def _get_or_default(arg_name, collection_key, default_constructor):
    graph = get_default_graph()
    elements = graph.get_collection(collection_key)
    if elements:
        if len(elements) > 1:
            raise RuntimeError(
                f'More than one item in the collection "{collection_key}". Please indicate which one '
                f"to use by passing it to the tf.Scaffold constructor as: tf.Scaffold({arg_name}=item to use)"
            )
        return elements[0]
    op = default_constructor()
    if op is not None:
        graph.add_to_collection(collection_key, op)
    return op


def _default_summary_op():
    return summary_ops.merge_all()  # None when the graph has no summaries


def _default_saver():
    graph = get_default_graph()
    savers = graph.get_collection(GraphKeys.SAVERS)
    if savers:
        if len(savers) > 1:
            raise RuntimeError(
                f"More than one item in collection {GraphKeys.SAVERS}. Please indicate which one to "
                "use by passing it to the constructor."
            )
        return savers[0]
    saver = Saver(sharded=True, allow_empty=True)
    graph.add_to_collection(GraphKeys.SAVERS, saver)
    return saver


class Scaffold:
    """The init, ready, local-init and summary ops and the saver of a monitored session.

    Each argument left None is filled in by `finalize()` (see the module docstring).
    """

    def __init__(
        self,
        init_op=None,
        init_feed_dict=None,
        init_fn=None,
        ready_op=None,
        ready_for_local_init_op=None,
        local_init_op=None,
        summary_op=None,
        saver=None,
        copy_from_scaffold=None,
        local_init_feed_dict=None,
    ):
        if copy_from_scaffold is not None:
            if not isinstance(copy_from_scaffold, Scaffold):
                raise TypeError("copy_from_scaffold is not a Scaffold instance.")
            c = copy_from_scaffold
            init_op = init_op or c.init_op
            init_feed_dict = init_feed_dict or c.init_feed_dict
            init_fn = init_fn or c._user_init_fn
            ready_op = ready_op or c.ready_op
            ready_for_local_init_op = ready_for_local_init_op or c.ready_for_local_init_op
            local_init_op = local_init_op or c.local_init_op
            local_init_feed_dict = local_init_feed_dict or c.local_init_feed_dict
            summary_op = summary_op or c.summary_op
            saver = saver or c.saver
        self._user_init_fn = init_fn
        self._init_fn = (lambda sess: init_fn(self, sess)) if init_fn else None
        self._init_op = init_op
        self._init_feed_dict = init_feed_dict
        self._ready_op = ready_op
        self._ready_for_local_init_op = ready_for_local_init_op
        self._local_init_op = local_init_op
        self._local_init_feed_dict = local_init_feed_dict
        self._summary_op = summary_op
        self._saver = saver

    def finalize(self):
        """Creates the missing ops, then finalizes the graph (no op can be added after)."""
        graph = get_default_graph()
        if self._init_op is None:
            self._init_op = _get_or_default(
                "init_op", GraphKeys.INIT_OP, state_ops.global_variables_initializer
            )
        if self._ready_op is None:
            self._ready_op = _get_or_default(
                "ready_op", GraphKeys.READY_OP, state_ops.report_uninitialized_variables
            )
        if self._ready_for_local_init_op is None:
            self._ready_for_local_init_op = _get_or_default(
                "ready_for_local_init_op",
                READY_FOR_LOCAL_INIT_OP,
                lambda: state_ops.report_uninitialized_variables(
                    state_ops.global_variables(), name="report_uninitialized_variables_1"
                ),
            )
        if self._local_init_op is None:
            self._local_init_op = _get_or_default(
                "local_init_op", LOCAL_INIT_OP, Scaffold.default_local_init_op
            )
        if self._summary_op is None:
            self._summary_op = _get_or_default("summary_op", SUMMARY_OP, _default_summary_op)
        if self._saver is None:
            self._saver = _default_saver()
        self._saver.build()
        if not graph.finalized:
            graph.finalize()
            _log.info("Graph was finalized.")
        return self

    @staticmethod
    def default_local_init_op():
        """`local_variables_initializer()` (TF also initializes tables; nbdist has none)."""
        return control_flow_ops.group(state_ops.local_variables_initializer(), name="group_deps")

    @property
    def init_fn(self):
        return self._init_fn

    @property
    def init_op(self):
        return self._init_op

    @property
    def ready_op(self):
        return self._ready_op

    @property
    def ready_for_local_init_op(self):
        return self._ready_for_local_init_op

    @property
    def local_init_op(self):
        return self._local_init_op

    @property
    def local_init_feed_dict(self):
        return self._local_init_feed_dict

    @property
    def summary_op(self):
        return self._summary_op

    @property
    def saver(self):
        return self._saver

    @property
    def init_feed_dict(self):
        return self._init_feed_dict
