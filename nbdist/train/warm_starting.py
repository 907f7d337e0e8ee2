"""Starting variables from a checkpoint: `tf.train.init_from_checkpoint` (TF 1.x's
``checkpoint_utils``) and `tf.train.warm_start` with `tf.train.VocabInfo` (``warm_starting_util``).

`init_from_checkpoint` replaces a variable's initializer by an ``Assign`` of a ``RestoreV2``
named ``checkpoint_initializer`` (TF's op and name), placed with the variable: when
`global_variables_initializer` runs, the variable gets the checkpoint's value instead of its
initial value, on whichever task holds it. The assignment map is TF's:
``{"ckpt_name": "var_name"}`` (or a `Variable`), ``{"ckpt_scope/": "scope/"}`` for every
`get_variable` variable under a scope, and ``"/"`` for the checkpoint's or the graph's root.
A partitioned variable takes each part from the checkpoint's ``name/part_i`` (nbdist saves parts
under their own names).

`warm_start` applies it to the trainable variables `vars_to_warm_start` selects (a regex, a list
of names or variables), renamed by `var_name_to_prev_var_name`; a variable with a `VocabInfo`
gets its rows remapped from the old vocabulary to the new one: a row of a token the old
vocabulary had is that token's old row, any other row (and the OOV buckets' rows) comes from
`backup_initializer`, zeros by default (TF's).
"""

import collections
import re

import numpy as np

from nbdist.graph import dtypes as _dtypes
from nbdist.graph.graph import GraphKeys, get_default_graph
from nbdist.graph.tensor_shape import TensorShape
from nbdist.ops import registry, state_ops
from nbdist.ops.constant_op import constant, convert_to_tensor
from nbdist.ops.init_ops import zeros_initializer
from nbdist.ops.partitioned_variables import PartitionedVariable
from nbdist.ops.variable_scope import variable_store
from nbdist.train.checkpoint_utils import load_checkpoint

__all__ = ["VocabInfo", "init_from_checkpoint", "warm_start"]


def _store_variables():
    """The default graph's `get_variable` variables by full name (parts of a partitioned one too)."""
    store = variable_store()
    return store.vars, store.partitioned


def _parts(var):
    return list(var) if isinstance(var, (PartitionedVariable, list, tuple)) else [var]


def _restore(prefix, tensor_name, var, reader):
    """Points `var`'s initializer at ``tensor_name`` of the checkpoint at `prefix`."""
    shape = reader.get_variable_to_shape_map()[tensor_name]
    if not var.shape.is_compatible_with(TensorShape(shape)):
        raise ValueError(
            f"Shape of variable {var.name} ({var.shape}) doesn't match with shape of tensor "
            f"{tensor_name} ({shape}) from checkpoint reader."
        )
    graph = var.graph
    with graph.colocate_with(var.op):
        restored = registry.make_op(
            "RestoreV2",
            [constant(prefix, dtype=_dtypes.string)],
            {"tensor_names": [tensor_name], "dtypes": [var.dtype.base_dtype.name]},
            name="checkpoint_initializer",
        ).outputs[0]
        var._initializer_op = state_ops.assign(var, restored).op  # as TF's checkpoint_utils
    var._initial_value = restored


def _set_initializer(var, prefix, tensor_name, reader):
    names = reader.get_variable_to_shape_map()
    parts = _parts(var)
    if len(parts) == 1 and tensor_name in names:
        _restore(prefix, tensor_name, parts[0], reader)
        return
    part_names = [f"{tensor_name}/part_{i}" for i in range(len(parts))]
    if len(parts) > 1 and all(n in names for n in part_names):
        for part, name in zip(parts, part_names):
            _restore(prefix, name, part, reader)
        return
    raise ValueError(f"Tensor {tensor_name} is not found in {prefix} checkpoint {sorted(names)}")


def init_from_checkpoint(ckpt_dir_or_file, assignment_map):
    """`tf.train.init_from_checkpoint`: the mapped variables' initializers load the checkpoint.

    Raises:
        ValueError: a name the checkpoint or the graph does not have, a shape that differs, or a
            scope mapped to a variable name (TF's messages).
        NotFoundError: no checkpoint at `ckpt_dir_or_file`.
    """
    reader = load_checkpoint(ckpt_dir_or_file)
    prefix = reader.prefix
    names = reader.get_variable_to_shape_map()
    items = assignment_map.items() if isinstance(assignment_map, dict) else assignment_map
    store_vars, partitioned = _store_variables()
    for ckpt_name, current in sorted(items, key=lambda item: str(item[0])):
        if not isinstance(current, str):
            _set_initializer(current, prefix, ckpt_name, reader)
            continue
        var = store_vars.get(current) or partitioned.get(current)
        if var is not None:
            if ckpt_name not in names and f"{ckpt_name}/part_0" not in names:
                raise ValueError(f"Tensor {ckpt_name} is not found in {prefix} checkpoint {sorted(names)}")
            _set_initializer(var, prefix, ckpt_name, reader)
            continue
        scope = current[: current.rindex("/")] if "/" in current else ""
        if not ckpt_name.endswith("/"):
            raise ValueError(
                f"Assignment map with scope only name {scope} should map to scope only {ckpt_name}. "
                "Should be 'scope/': 'other_scope/'."
            )
        in_scope = set()
        for var_name in store_vars:
            if not scope or var_name.startswith(scope + "/"):
                in_scope.add(var_name[: var_name.index("/part_")] if "/part_" in var_name else var_name)
        for var_name in sorted(in_scope):
            full = var_name[len(scope) :]
            if current != "/":
                full = full[1:]
            if ckpt_name != "/":
                full = ckpt_name + full
            full = full.removesuffix("/")
            if full not in names and f"{full}/part_0" not in names:
                raise ValueError(
                    f"Tensor {full} ({var_name} in {current}) is not found in {prefix} checkpoint"
                )
            _set_initializer(store_vars.get(var_name) or partitioned[var_name], prefix, full, reader)


class VocabInfo(
    collections.namedtuple(
        "VocabInfo",
        [
            "new_vocab",
            "new_vocab_size",
            "num_oov_buckets",
            "old_vocab",
            "old_vocab_size",
            "backup_initializer",
            "axis",
        ],
    )
):
    """`tf.train.VocabInfo`: how to remap a variable's rows from an old vocabulary file to a new one."""

    def __new__(
        cls,
        new_vocab,
        new_vocab_size,
        num_oov_buckets,
        old_vocab,
        old_vocab_size=-1,
        backup_initializer=None,
        axis=0,
    ):
        if axis not in (0, 1):
            raise ValueError(
                f"The only supported values for the axis argument are 0 and 1.  Provided axis: {axis}"
            )
        return super().__new__(
            cls,
            new_vocab,
            new_vocab_size,
            num_oov_buckets,
            old_vocab,
            old_vocab_size,
            backup_initializer,
            axis,
        )


def _vocabulary(path, size):
    with open(path, encoding="utf-8") as f:
        words = [line.rstrip("\n") for line in f]
    return words if size is None or size < 0 else words[:size]


def _warm_start_with_vocab(var, prefix, prev_name, info, reader):
    """Rows (or columns, axis 1) of the old vocabulary's tokens come from the checkpoint; the
    others from `info.backup_initializer` (zeros by default, as TF's)."""
    old = reader.get_tensor(prev_name)
    new_words = _vocabulary(info.new_vocab, info.new_vocab_size)
    old_index = {w: i for i, w in enumerate(_vocabulary(info.old_vocab, info.old_vocab_size))}
    shape = var.shape.as_list()
    with var.graph.colocate_with(var.op):
        backup = info.backup_initializer or zeros_initializer()
        initial = convert_to_tensor(backup(shape, dtype=var.dtype.base_dtype))
        mapping = np.array([old_index.get(w, -1) for w in new_words] + [-1] * info.num_oov_buckets, np.int64)
        remapped = registry.make_op(
            "RemapRows", [initial, constant(old), constant(mapping)], {"axis": info.axis}, name="warm_start"
        ).outputs[0]
        var._initializer_op = state_ops.assign(var, remapped).op


@registry.kernel("RemapRows")
def _remap_rows_kernel(ctx, node, initial, old, mapping):
    axis = node.attr["axis"]
    out = np.array(np.moveaxis(initial, axis, 0), copy=True)
    old = np.moveaxis(old, axis, 0)
    keep = mapping >= 0
    out[keep] = old[mapping[keep]]
    return np.moveaxis(out, 0, axis)


registry.shape("RemapRows")(lambda inputs, attrs: [(inputs[0].dtype, inputs[0].shape)])
registry.no_gradient("RemapRows")


def warm_start(
    ckpt_to_initialize_from,
    vars_to_warm_start=".*",
    var_name_to_vocab_info=None,
    var_name_to_prev_var_name=None,
):
    """`tf.train.warm_start`: trainable variables start from a checkpoint (see the module doc).

    Raises:
        ValueError: a `var_name_to_vocab_info` or `var_name_to_prev_var_name` key that names no
            warm-started variable (TF's check), or `init_from_checkpoint`'s errors.
    """
    vocab_info = dict(var_name_to_vocab_info or {})
    prev_names = dict(var_name_to_prev_var_name or {})
    graph = get_default_graph()
    trainable = graph.get_collection(GraphKeys.TRAINABLE_VARIABLES)
    if vars_to_warm_start is None:
        return
    if isinstance(vars_to_warm_start, str):
        pattern = re.compile(vars_to_warm_start)
        chosen = [v for v in trainable if pattern.match(v.op.name)]
    else:
        chosen = [
            v if not isinstance(v, str) else next(t for t in trainable if t.op.name == v)
            for v in vars_to_warm_start
        ]
    reader = load_checkpoint(ckpt_to_initialize_from)
    prefix = reader.prefix
    used = set()
    for var in chosen:
        name = var.op.name
        prev = prev_names.get(name, name)
        used.add(name)
        if name in vocab_info:
            _warm_start_with_vocab(var, prefix, prev, vocab_info[name], reader)
        else:
            _set_initializer(var, prefix, prev, reader)
    for argument, given in (
        ("var_name_to_prev_var_name", prev_names),
        ("var_name_to_vocab_info", vocab_info),
    ):
        unused = set(given) - used
        if unused:
            raise ValueError(
                f"You provided the following variables in {argument} that were not used: {unused}.  "
                f"Perhaps you misspelled them?  Here is the list of viable variable names: {sorted(used)}"
            )
