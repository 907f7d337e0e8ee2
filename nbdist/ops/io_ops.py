"""Checkpoint ops: `SaveV2`, `MergeV2Checkpoints`, `RestoreV2` (what `tf.train.Saver` builds).

They run where the variables are: a `Saver` places one `SaveV2` and one `RestoreV2` on each
variable device, so a ps writes and reads its own variables' bytes and only small metadata
crosses the wire. The file format is `nbdist.ops.checkpoint_format`.

- ``SaveV2(prefix, *tensors)`` attrs ``tensor_names``, ``shard``, ``num_shards``: writes the
  tensors to a temporary data file; outputs a scalar string (that shard's index entries).
- ``MergeV2Checkpoints(prefix, *shard_infos)``: renames the data files into place and writes
  ``prefix.index`` last (no outputs). Until it ran, the checkpoint does not exist.
- ``RestoreV2(prefix)`` attrs ``tensor_names``, ``dtypes``: outputs the stored tensors (any
  shard count: it reads the index). `Assign` ops colocated with the variables store them.

A failed file operation raises the class TF's errno mapping gives it (`file_errors.from_os_error`):
a full disk is `ResourceExhaustedError`, never `UnavailableError`, which a monitored session
would take for a lost task and answer by restoring a checkpoint into the shared variables.
"""

import numpy as np

from nbdist import errors, file_errors
from nbdist.graph import dtypes as _dtypes
from nbdist.graph.tensor_shape import TensorShape
from nbdist.ops import checkpoint_format, registry


def _prefix(value):
    value = np.asarray(value, dtype=object).reshape(()).item()
    return value.decode() if isinstance(value, bytes) else str(value)


def _scalar_string(data):
    out = np.empty((), dtype=object)
    out[()] = data
    return out


# -- SaveV2 -----------------------------------------------------------------------------------
registry.declare("SaveV2", stateful=True)
registry.shape("SaveV2")(lambda inputs, attrs: [(_dtypes.string, TensorShape(()))])
registry.no_gradient("SaveV2")


@registry.kernel("SaveV2")
def _save_kernel(ctx, node, prefix, *values):
    prefix = _prefix(prefix)
    try:
        info = checkpoint_format.write_shard(
            prefix, node.attr["shard"], node.attr["num_shards"], node.attr["tensor_names"], values
        )
    except OSError as e:
        shard = node.attr["shard"]
        raise file_errors.from_os_error(
            e, node.name, None, f"cannot write checkpoint shard {shard} of {prefix!r}"
        ) from None
    return _scalar_string(info)


# -- MergeV2Checkpoints -----------------------------------------------------------------------
registry.declare("MergeV2Checkpoints", stateful=True)
registry.shape("MergeV2Checkpoints")(lambda inputs, attrs: [])
registry.no_gradient("MergeV2Checkpoints")


@registry.kernel("MergeV2Checkpoints")
def _merge_kernel(ctx, node, prefix, *shard_infos):
    prefix = _prefix(prefix)
    infos = [np.asarray(s, dtype=object).reshape(()).item() for s in shard_infos]
    try:
        checkpoint_format.merge_shards(prefix, infos)
    except OSError as e:
        raise file_errors.from_os_error(e, node.name, None, f"cannot commit checkpoint {prefix!r}") from None


# -- RestoreV2 --------------------------------------------------------------------------------
registry.declare("RestoreV2", stateful=True)
registry.shape("RestoreV2")(
    lambda inputs, attrs: [(_dtypes.as_dtype(d), TensorShape(None)) for d in attrs["dtypes"]]
)
registry.no_gradient("RestoreV2")


@registry.kernel("RestoreV2")
def _restore_kernel(ctx, node, prefix):
    prefix = _prefix(prefix)
    names = node.attr["tensor_names"]
    try:
        values = checkpoint_format.read_tensors(prefix, names)
    except (FileNotFoundError, KeyError) as e:
        raise errors.NotFoundError(node.name, None, str(e).strip("'\"")) from None
    except ValueError as e:
        raise errors.DataLossError(node.name, None, f"cannot restore from {prefix!r}: {e}") from None
    except OSError as e:
        raise file_errors.from_os_error(e, node.name, None, f"cannot restore from {prefix!r}") from None
    out = []
    for name, value, dtype in zip(names, values, node.attr["dtypes"]):
        want = _dtypes.as_dtype(dtype)
        stored = "string" if value.dtype == object else value.dtype.name
        if stored != want.name:
            raise errors.InvalidArgumentError(
                node.name,
                None,
                f"checkpoint {prefix!r} holds {name!r} as {stored}, but the variable is {want.name}",
            )
        out.append(value)
    return tuple(out) if len(out) != 1 else out[0]
