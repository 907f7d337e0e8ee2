"""`tf.train.import_meta_graph`: a ``.meta`` file's graph and collections into the default graph,
and a `Saver` to restore its checkpoint with (`nbdist.train.meta_graph` says what a meta graph
is)."""

import logging
import os

from nbdist.train.meta_graph import MetaGraphDef, import_graph_and_collections, read_meta_graph_file
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
        meta, clear_devices, import_scope, input_map, restore_collections_predicate
    )
    if meta.saver_def is not None:
        prefix = f"{import_scope.rstrip('/')}/" if import_scope else ""
        d = meta.saver_def
        return Saver(
            saver_def=SaverDef(
                prefix + d.filename_tensor_name,
                prefix + d.save_tensor_name,
                prefix + d.restore_op_name,
                d.max_to_keep,
                d.sharded,
                d.keep_checkpoint_every_n_hours,
            ),
            max_to_keep=d.max_to_keep,
        )
    if variables:
        return Saver(list(variables.values()))
    _log.info("Saver not created because there are no variables in the graph to restore")
    return None
