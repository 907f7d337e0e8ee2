"""`tf.train.Saver`: save and restore variables, each device writing its own.

The Saver adds, under a ``save`` name scope, one `SaveV2` and one `RestoreV2` op per
variable device, each colocated with that device's variables, plus one
`MergeV2Checkpoints` that commits the checkpoint (`nbdist.ops.io_ops`). A ps therefore
writes its variables' bytes where it holds them; only the file prefix and each shard's
small index travel. TF writes one data file from one device when ``sharded=False``;
nbdist always writes one shard per device (``.data-0000k-of-0000n``), and restores any
shard count, since the index says where each tensor is. ``sharded`` is accepted.

Crash safety: data files are written under temporary names, renamed by the merge, the
``.index`` written last; only then does `save` rewrite the ``checkpoint`` state file (also
via a rename). `latest_checkpoint` thus always names a complete checkpoint. A failed save
deletes its temporary files, and each save deletes those a killed task left (see
`nbdist.ops.checkpoint_format`).
"""

import logging
import os
import threading
import time

import numpy as np

from nbdist import errors
from nbdist.graph.graph import GraphKeys, Tensor, get_default_graph
from nbdist.ops import control_flow_ops, math_ops, registry, state_ops
from nbdist.ops import io_ops as _io_ops  # noqa: F401 - registers the ops this module builds
from nbdist.ops.constant_op import constant
from nbdist.train import checkpoint_management as _cm
from nbdist.train import meta_graph, training_util

_log = logging.getLogger("nbdist")


class SaverDef:
    """TF's ``SaverDef``: the names a Saver's save and restore run through."""

    LEGACY, V1, V2 = 0, 1, 2

    def __init__(
        self,
        filename_tensor_name="",
        save_tensor_name="",
        restore_op_name="",
        max_to_keep=0,
        sharded=False,
        keep_checkpoint_every_n_hours=0.0,
        version=V2,
    ):
        self.filename_tensor_name = filename_tensor_name
        self.save_tensor_name = save_tensor_name
        self.restore_op_name = restore_op_name
        self.max_to_keep = max_to_keep
        self.sharded = sharded
        self.keep_checkpoint_every_n_hours = keep_checkpoint_every_n_hours
        self.version = version


def _op_name(var):
    return var.op.name


def _normalize_var_list(var_list):
    """``{checkpoint key: variable}`` from None, a list or a dict (TF's accepted forms)."""
    if var_list is None:
        graph = get_default_graph()
        var_list = graph.get_collection(GraphKeys.GLOBAL_VARIABLES) + graph.get_collection("saveable_objects")
    if isinstance(var_list, dict):
        items = list(var_list.items())
    else:
        items = []
        for var in var_list:
            if not isinstance(var, state_ops.Variable) and not (
                isinstance(var, Tensor) and var.op.type == "VariableV2"
            ):
                raise TypeError(f"Saver var_list must hold tf.Variables, got {var!r}")
            items.append((_op_name(var), var))
    out = {}
    for key, var in items:
        if key in out:
            raise ValueError(f"At least two variables have the same name: {key}")
        out[key] = var
    return out


def _ref(var):
    """The variable's storage tensor (the ``VariableV2`` output), or `var` when it is a tensor."""
    return var.op.outputs[0] if isinstance(var, state_ops.Variable) else var


class Saver:
    """Saves and restores variables; each variable device writes and reads its own shard.

    Args:
        var_list: variables to save (a list, or a dict ``{name in the checkpoint: variable}``);
            default all global variables.
        max_to_keep: how many recent checkpoints to keep (older ones are deleted); 0 or None
            keeps all files, and the state file lists only the latest.
        keep_checkpoint_every_n_hours: additionally keep one checkpoint per this many hours.
        sharded: accepted for TF compatibility; nbdist always writes one shard per device.
        allow_empty: with no variables, build nothing and make `save` a no-op (else ValueError).
        save_relative_paths: write paths relative to the save directory in the state file.
        pad_step_number: name checkpoints ``prefix-00000100`` instead of ``prefix-100``.

    Example::

        saver = tf.train.Saver()
        path = saver.save(sess, "/tmp/run/model.ckpt", global_step=step)
        saver.restore(sess, tf.train.latest_checkpoint("/tmp/run"))
    """

    def __init__(
        self,
        var_list=None,
        reshape=False,
        sharded=False,
        max_to_keep=5,
        keep_checkpoint_every_n_hours=10000.0,
        name=None,
        restore_sequentially=False,
        saver_def=None,
        builder=None,
        defer_build=False,
        allow_empty=False,
        write_version=SaverDef.V2,
        pad_step_number=False,
        save_relative_paths=False,
        filename=None,
    ):
        self._max_to_keep = max_to_keep
        self._save_lock = threading.Lock()
        self._hours = keep_checkpoint_every_n_hours
        self._sharded = sharded
        self._pad_step_number = pad_step_number
        self._save_relative_paths = save_relative_paths
        self._filename = filename
        self._last_checkpoints = []  # [(prefix, time)]
        self._to_delete = []
        self._next_keep_time = time.time() + keep_checkpoint_every_n_hours * 3600
        self._var_list = var_list
        self._name = name
        self._allow_empty = allow_empty
        self.saver_def = saver_def
        self._is_empty = False
        if saver_def is None and not defer_build:
            self.build()

    # -- graph construction -------------------------------------------------------------------
    def build(self):
        """Adds the save and restore ops to the default graph (done at construction)."""
        if self.saver_def is not None or self._is_empty:
            return
        variables = _normalize_var_list(self._var_list)
        if not variables:
            if self._allow_empty:
                self._is_empty = True
                return
            raise ValueError("No variables to save")
        graph = _ref(next(iter(variables.values()))).graph
        with graph.name_scope(self._name or "save") as scope:
            filename = constant(np.array(self._filename or "model", dtype=object), name="Const")
            groups = {}
            for key, var in variables.items():
                groups.setdefault(_ref(var).device, []).append((key, _ref(var)))
            shard_infos, assigns = [], []
            for k, members in enumerate(groups.values()):
                shard_infos.append(self._add_shard(graph, filename, k, len(groups), members, assigns))
            first = next(iter(groups.values()))[0][1]
            with graph.colocate_with(first.op):
                merge = registry.make_op(
                    "MergeV2Checkpoints", [filename, *shard_infos], name="MergeV2Checkpoints"
                )
            with graph.control_dependencies([merge]):
                save_tensor = math_ops.identity(filename, name="control_dependency")
            restore_op = control_flow_ops.group(*assigns, name="restore_all")
        self.saver_def = SaverDef(
            filename.name, save_tensor.name, restore_op.name, self._max_to_keep, self._sharded, self._hours
        )
        del scope

    @staticmethod
    def _add_shard(graph, filename, shard, num_shards, members, assigns):
        names = [key for key, _ in members]
        refs = [ref for _, ref in members]
        with graph.colocate_with(refs[0].op):
            info = registry.make_op(
                "SaveV2",
                [filename, *refs],
                {"tensor_names": names, "shard": shard, "num_shards": num_shards},
                name="SaveV2" if shard == 0 else f"SaveV2_{shard}",
            ).outputs[0]
            restore = registry.make_op(
                "RestoreV2",
                [filename],
                {"tensor_names": names, "dtypes": [r.dtype.name for r in refs]},
                name="RestoreV2" if shard == 0 else f"RestoreV2_{shard}",
            )
        outputs = restore.outputs
        for ref, value in zip(refs, outputs):
            assigns.append(state_ops.assign(ref, value, name="Assign").op)
        return info

    def as_saver_def(self):
        return self.saver_def

    # -- kept checkpoints -----------------------------------------------------------------------
    @property
    def last_checkpoints(self):
        """The prefixes of the kept checkpoints, oldest first."""
        return [p for p, _ in self._last_checkpoints]

    def set_last_checkpoints(self, last_checkpoints):
        self._last_checkpoints = [(p, None) for p in last_checkpoints]

    def set_last_checkpoints_with_time(self, last_checkpoints_with_time):
        self._last_checkpoints = list(last_checkpoints_with_time)

    def recover_last_checkpoints(self, checkpoint_paths):
        """Adopts existing checkpoints (e.g. after a restart), so `max_to_keep` covers them."""
        kept = [p for p in checkpoint_paths if _cm.checkpoint_exists(p)]
        self.set_last_checkpoints_with_time(list(zip(kept, _cm.get_checkpoint_mtimes(kept))))

    def _record(self, prefix):
        if not self._max_to_keep:
            return
        self._last_checkpoints = [(p, t) for p, t in self._last_checkpoints if p != prefix]
        self._last_checkpoints.append((prefix, time.time()))
        while len(self._last_checkpoints) > self._max_to_keep:
            self._to_delete.append(self._last_checkpoints.pop(0))

    def _delete_old(self):
        while self._to_delete:
            prefix, stamp = self._to_delete.pop(0)
            if stamp is not None and stamp > self._next_keep_time:
                self._next_keep_time += self._hours * 3600
                continue
            _cm.remove_checkpoint(prefix)

    # -- save and restore -----------------------------------------------------------------------
    def save(
        self,
        sess,
        save_path,
        global_step=None,
        latest_filename=None,
        meta_graph_suffix="meta",
        write_meta_graph=True,
        write_state=True,
        strip_default_attrs=False,
        save_debug_info=False,
    ):
        """Saves the variables; returns the checkpoint prefix (``save_path-<step>``).

        Args:
            sess: a session whose graph holds this saver.
            save_path: the prefix, e.g. ``"/tmp/run/model.ckpt"``; its directory must exist.
            global_step: an int, or a tensor/variable whose value names the checkpoint.
            write_state: also update the ``checkpoint`` state file and delete old checkpoints.
            write_meta_graph: also write the graph, its collections and this saver to
                ``<prefix>.<meta_graph_suffix>`` (`export_meta_graph`), as TF does, for
                `tf.train.import_meta_graph`.

        Raises:
            ValueError: if the directory of `save_path` does not exist.
            ResourceExhaustedError: the disk is full (errno ENOSPC or EDQUOT); other file errors
                raise their errno's class as in TF (`PermissionDeniedError`, `NotFoundError`,
                else `UnknownError`). None of them is a preemption, so a monitored session stops
                with it instead of restoring a checkpoint. The failed save leaves no ``.tmp`` file.
        """
        # One save at a time per saver: a background save (Supervisor, CheckpointSaverHook) and
        # an explicit one cannot interleave, so "latest" never goes back to an older step.
        with self._save_lock:
            if global_step is not None:
                if not isinstance(global_step, (int, np.integer)):  # a step just fetched is np.int64
                    global_step = training_util.global_step(sess, global_step)
                step = f"{int(global_step):08d}" if self._pad_step_number else str(int(global_step))
                checkpoint_file = f"{save_path}-{step}"
            else:
                checkpoint_file = save_path
                if os.path.basename(save_path) == (latest_filename or "checkpoint"):
                    raise ValueError(
                        f"'latest_filename' collides with 'save_path': {latest_filename or 'checkpoint'!r} "
                        f"and {save_path!r}"
                    )
            parent = os.path.dirname(save_path)
            if parent and not os.path.isdir(parent):
                raise ValueError(f"Parent directory of {save_path} doesn't exist, can't save.")
            if self._is_empty:
                return None
            value = sess.run(
                self.saver_def.save_tensor_name, {self.saver_def.filename_tensor_name: checkpoint_file}
            )
            prefix = value.decode() if isinstance(value, bytes) else str(value)
            if write_meta_graph:
                self._write_meta_graph(sess, f"{prefix}.{meta_graph_suffix}")
            if write_state:
                self._record(prefix)
                _cm.update_checkpoint_state(
                    parent or ".",
                    os.path.relpath(prefix, parent) if self._save_relative_paths and parent else prefix,
                    [
                        os.path.relpath(p, parent) if self._save_relative_paths and parent else p
                        for p in self.last_checkpoints
                    ],
                    latest_filename,
                    [t for _, t in self._last_checkpoints if t is not None] or None,
                )
                self._delete_old()
            return prefix

    def _write_meta_graph(self, sess, filename):
        graph = getattr(sess, "graph", None) or get_default_graph()
        try:
            self.export_meta_graph(filename, graph=graph)
        except (TypeError, ValueError, OSError) as e:  # the checkpoint itself is written
            _log.warning("The meta graph %s was not written: %s", filename, e)

    def export_meta_graph(
        self,
        filename=None,
        collection_list=None,
        as_text=False,
        export_scope=None,
        clear_devices=False,
        clear_extraneous_savers=False,
        strip_default_attrs=False,
        save_debug_info=False,
        graph=None,
    ):
        """The default graph (or `graph`), its collections and this saver as a `MetaGraphDef`,
        written to `filename` when given (`tf.train.export_meta_graph`)."""
        return meta_graph.export_meta_graph(
            filename,
            saver_def=self.saver_def,
            collection_list=collection_list,
            as_text=as_text,
            graph=graph,
            export_scope=export_scope,
            clear_devices=clear_devices,
        )

    def restore(self, sess, save_path):
        """Restores the variables from the checkpoint at `save_path` (a prefix).

        Raises:
            ValueError: `save_path` is None or names no complete checkpoint.
            NotFoundError: a variable that the checkpoint does not hold (naming it).
        """
        if save_path is None:
            raise ValueError("Can't load save_path when it is None.")
        if not _cm.checkpoint_exists(save_path):
            raise ValueError(
                f"The passed save_path is not a valid checkpoint: {save_path} "
                f"(no {save_path}.index; tf.train.latest_checkpoint(dir) names the newest one)"
            )
        _log.info("Restoring parameters from %s", save_path)
        if self._is_empty:
            return
        try:
            sess.run(self.saver_def.restore_op_name, {self.saver_def.filename_tensor_name: save_path})
        except errors.NotFoundError as e:
            raise errors.NotFoundError(
                e.node_def,
                e.op,
                "Restoring from checkpoint failed. This is most likely due to a Variable name or "
                "other graph key that is missing from the checkpoint. Please ensure that you have "
                f"not altered the graph expected based on the checkpoint. Original error:\n\n{e.message}",
            ) from None
