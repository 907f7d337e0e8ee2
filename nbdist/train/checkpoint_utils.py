"""Reading checkpoints without a graph: `list_variables`, `load_variable`, `load_checkpoint` and
`NewCheckpointReader` (TF 1.x's ``checkpoint_utils.py`` and ``py_checkpoint_reader``), over
nbdist's checkpoint files (`nbdist.ops.checkpoint_format`).

    for name, shape in tf.train.list_variables(train_dir):   # the latest checkpoint's
        print(name, shape)
    w = tf.train.load_variable(train_dir, "dense/kernel")     # a numpy array
"""

import os

from nbdist import errors
from nbdist.graph import dtypes
from nbdist.ops import checkpoint_format
from nbdist.train.checkpoint_management import latest_checkpoint

__all__ = ["CheckpointReader", "NewCheckpointReader", "list_variables", "load_checkpoint", "load_variable"]


class CheckpointReader:
    """The tensors of one checkpoint by name (TF's `CheckpointReader`); the index is read once.

    Raises:
        NotFoundError: at construction, if there is no checkpoint at `prefix` (TF's error);
            from `get_tensor`, for a name the checkpoint does not hold.
        DataLossError: if the index is not an nbdist checkpoint index or is damaged.
    """

    def __init__(self, prefix):
        self._prefix = os.fspath(prefix)
        try:
            self._index = checkpoint_format.read_index(self._prefix)
        except FileNotFoundError:
            raise errors.NotFoundError(
                None,
                None,
                f"Unsuccessful TensorSliceReader constructor: Failed to find any matching files for "
                f"{self._prefix}",
            ) from None
        except ValueError as e:
            raise errors.DataLossError(None, None, str(e)) from None
        self._entries = self._index["tensors"]

    @property
    def prefix(self):
        """The checkpoint's path prefix (nbdist's: `init_from_checkpoint` restores from it)."""
        return self._prefix

    def has_tensor(self, tensor_str):
        return tensor_str in self._entries

    def get_tensor(self, tensor_str):
        """The saved value of `tensor_str`, a numpy array (of bytes objects for a string)."""
        if tensor_str not in self._entries:
            raise errors.NotFoundError(None, None, f"Key {tensor_str} not found in checkpoint")
        try:
            return checkpoint_format.read_tensors(self._prefix, [tensor_str], self._index)[0]
        except ValueError as e:
            raise errors.DataLossError(None, None, str(e)) from None

    def get_variable_to_shape_map(self):
        """``{name: shape as a list of ints}``."""
        return {name: list(entry["shape"]) for name, entry in self._entries.items()}

    def get_variable_to_dtype_map(self):
        """``{name: tf.DType}``."""
        return {name: dtypes.as_dtype(entry["dtype"]) for name, entry in self._entries.items()}

    def debug_string(self):
        """One line per tensor, ``name (DT_FLOAT) [2,3]``, as TF's (as bytes)."""
        lines = []
        for name in sorted(self._entries):
            entry = self._entries[name]
            dtype = f"DT_{dtypes.as_dtype(entry['dtype']).name.upper()}"
            lines.append(f"{name} ({dtype}) [{','.join(str(d) for d in entry['shape'])}]\n")
        return "".join(lines).encode()


def NewCheckpointReader(filepattern):  # noqa: N802 - TF's name
    """A `CheckpointReader` of the checkpoint with prefix `filepattern`."""
    return CheckpointReader(filepattern)


def _checkpoint_prefix(ckpt_dir_or_file):
    """A directory's latest checkpoint, or the prefix as given."""
    path = os.fspath(ckpt_dir_or_file)
    if os.path.isdir(path):
        return latest_checkpoint(path)
    return path


def load_checkpoint(ckpt_dir_or_file):
    """A `CheckpointReader` of `ckpt_dir_or_file`: a checkpoint prefix, or a directory (its
    latest checkpoint).

    Raises:
        ValueError: for a directory without a checkpoint (TF's message).
        NotFoundError: for a prefix without a checkpoint.
    """
    filename = _checkpoint_prefix(ckpt_dir_or_file)
    if filename is None:
        raise ValueError(
            f"Couldn't find 'checkpoint' file or checkpoints in given directory {ckpt_dir_or_file}"
        )
    return CheckpointReader(filename)


def load_variable(ckpt_dir_or_file, name):
    """The saved value of variable `name` (a trailing ``:0`` is dropped), a numpy array."""
    if name.endswith(":0"):
        name = name[:-2]
    return load_checkpoint(ckpt_dir_or_file).get_tensor(name)


def list_variables(ckpt_dir_or_file):
    """``[(name, shape as a list), ...]`` of the checkpoint's tensors, sorted by name."""
    shapes = load_checkpoint(ckpt_dir_or_file).get_variable_to_shape_map()
    return [(name, shapes[name]) for name in sorted(shapes)]
