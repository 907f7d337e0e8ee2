"""`flatten` and `pack_sequence_as` (TF's `tf.nest`): nested lists, tuples, namedtuples and
dicts of tensors, as `cond` and `while_loop` take and return them. Dicts go in sorted key order."""


def flatten(structure):
    """The leaves of `structure` (anything but a list, tuple or dict), in order."""
    if isinstance(structure, dict):
        return [x for k in sorted(structure) for x in flatten(structure[k])]
    if isinstance(structure, (list, tuple)):
        return [x for v in structure for x in flatten(v)]
    return [structure]


def pack_sequence_as(structure, flat_sequence):
    """`structure` with its leaves replaced, in order, by the items of `flat_sequence`."""
    leaves = iter(flat_sequence)
    packed = _pack(structure, leaves)
    if next(leaves, _END) is not _END:
        raise ValueError(
            f"pack_sequence_as: more values than the {len(flatten(structure))} leaves of the structure"
        )
    return packed


_END = object()


def _pack(structure, leaves):
    if isinstance(structure, dict):
        packed = {k: _pack(structure[k], leaves) for k in sorted(structure)}
        return {k: packed[k] for k in structure}
    if isinstance(structure, (list, tuple)):
        items = [_pack(v, leaves) for v in structure]
        return type(structure)(*items) if hasattr(structure, "_fields") else type(structure)(items)
    value = next(leaves, _END)
    if value is _END:
        raise ValueError("pack_sequence_as: fewer values than the leaves of the structure")
    return value


def same_structure(a, b):
    """True when `a` and `b` nest lists, tuples and dicts alike (leaves may differ)."""
    return _shape_of(a) == _shape_of(b)


def _shape_of(value):
    if isinstance(value, dict):
        return {k: _shape_of(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_shape_of(v) for v in value]
    return "."
