"""The element structure of a `tf.data` pipeline: a tensor, or tuples / dicts of them (nested),
with each leaf's dtype and shape. Datasets and iterators both hold one `ElementSpec`; this
module is its only owner (TF's ``structure`` module, reduced to what TF 1.x's API shows)."""

from nbdist.graph import dtypes as _dtypes
from nbdist.graph.graph import Tensor
from nbdist.graph.tensor_shape import TensorShape


def flatten(structure):
    """The leaves of a structure of tuples and dicts (dicts in sorted key order, as TF's nest)."""
    if isinstance(structure, dict):
        return [leaf for k in sorted(structure) for leaf in flatten(structure[k])]
    if isinstance(structure, tuple):
        return [leaf for item in structure for leaf in flatten(item)]
    return [structure]


def pack_as(structure, leaves):
    """`leaves` in the shape of `structure` (the inverse of `flatten`)."""
    it = iter(leaves)

    def build(s):
        if isinstance(s, dict):
            return {k: build(s[k]) for k in sorted(s)}
        if isinstance(s, tuple):
            items = [build(x) for x in s]
            return type(s)(*items) if hasattr(s, "_fields") else tuple(items)
        return next(it)

    return build(structure)


def map_structure(fn, structure):
    return pack_as(structure, [fn(x) for x in flatten(structure)])


class ElementSpec:
    """What one element of a pipeline is: its `structure` (None leaves), and per leaf, in
    `flatten` order, its dtype and its `TensorShape`."""

    __slots__ = ("structure", "dtypes", "shapes")

    def __init__(self, structure, dtypes, shapes):
        self.structure = structure
        self.dtypes = list(dtypes)
        self.shapes = [TensorShape(s) for s in shapes]

    @staticmethod
    def from_types(output_types, output_shapes=None):
        """The spec `Iterator.from_structure(output_types, output_shapes)` names (unknown shapes
        when `output_shapes` is None; a shape given as a plain list, ``[None, 2]``, is one leaf)."""
        dtypes = [_dtypes.as_dtype(t) for t in flatten(output_types)]
        structure = pack_as(output_types, [None] * len(dtypes))
        if output_shapes is None:
            return ElementSpec(structure, dtypes, [TensorShape(None)] * len(dtypes))
        flat = flatten(output_shapes)
        return ElementSpec(structure, dtypes, flat if len(flat) == len(dtypes) else [output_shapes])

    @property
    def output_types(self):
        return pack_as(self.structure, self.dtypes)

    @property
    def output_shapes(self):
        return pack_as(self.structure, self.shapes)

    @property
    def output_classes(self):
        return pack_as(self.structure, [Tensor] * len(self.dtypes))
