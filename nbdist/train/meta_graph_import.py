"""`tf.train.import_meta_graph`: a ``.meta`` file's graph and collections into the default graph,
and a `Saver` to restore its checkpoint with (`nbdist.train.meta_graph` says what a meta graph
is)."""

import logging
import os

from nbdist.train.meta_graph import (
    SAVER_DEF_FIELDS,
    MetaGraphDef,
    import_graph_and_collections,
    read_meta_graph_file,
)
from nbdist.train.saver import Saver, SaverDef

_log = logging.getLogger("nbdist")


def import_meta_graph(
    meta_graph_or_file,
    clear_devices=False,
    import_scope=None,
    input_map=None,
    restore_collections_predicate=None,
    **kwargs,
):
    """`tf.train.import_meta_graph`: adds a meta graph's ops and collections to the default graph.

        saver = tf.train.import_meta_graph("/tmp/run/model.ckpt-2.meta")
        saver.restore(sess, "/tmp/run/model.ckpt-2")

    Args:
        meta_graph_or_file: a `MetaGraphDef` (`export_meta_graph`'s) or a ``.meta`` file's path.
        clear_devices: drop the nodes' devices (to run the model where it was not trained).
        import_scope: a name scope to put every imported name under.
        input_map: ``{name in the meta graph: Tensor}``: inputs to replace by existing tensors
            (as `tf.import_graph_def`'s), e.g. a placeholder by an input pipeline's tensor.
        restore_collections_predicate: ``fn(key) -> bool``: the collections to restore
            (default all).
        kwargs: TF's other keywords (``return_elements``, ...), accepted and unused, as TF's
            `import_meta_graph` does.

    Returns:
        A `Saver` over the imported save and restore ops; a new `Saver` of the imported
        variables when the meta graph has no saver; None when it has neither (as TF).

    Raises:
        OSError: the file cannot be read.
        ValueError: a file of neither nbdist's nor TensorFlow's format, or a TensorFlow meta
            graph nbdist cannot read (saying why).
    """
    meta = meta_graph_or_file
    if not isinstance(meta, MetaGraphDef):
        meta = read_meta_graph_file(os.fspath(meta))
    variables = import_graph_and_collections(
        meta, clear_devices, import_scope, input_map, restore_collections_predicate, _saver_of_def
    )
    if meta.saver_def is not None:
        prefix = f"{import_scope.rstrip('/')}/" if import_scope else ""
        fields = {f: getattr(meta.saver_def, f) for f in SAVER_DEF_FIELDS}
        for f in ("filename_tensor_name", "save_tensor_name", "restore_op_name"):
            fields[f] = prefix + fields[f]
        return _saver_of_def(fields)
    if variables:
        return Saver(list(variables.values()))
    _log.info("Saver not created because there are no variables in the graph to restore")
    return None


def _saver_of_def(fields):
    """A `Saver` over the existing save/restore ops a SaverDef's fields name."""
    saver_def = SaverDef(
        fields["filename_tensor_name"],
        fields["save_tensor_name"],
        fields["restore_op_name"],
        fields["max_to_keep"],
        fields["sharded"],
        fields["keep_checkpoint_every_n_hours"],
    )
    return Saver(saver_def=saver_def, max_to_keep=fields["max_to_keep"])
