"""`tf.vectorized_map`: `fn` over the first dimension of `elems`.

TF vectorizes `fn` (pfor: one batched op per op of `fn`, a `while_loop` where it cannot).
nbdist runs it as `tf.map_fn` (one `While` loop, an iteration per element): the same values
and static shapes, one element at a time.
"""

from nbdist.ops.constant_op import convert_to_tensor
from nbdist.ops.nest import flatten, pack_sequence_as
from nbdist.ops.while_ops import map_fn


def vectorized_map(fn, elems, fallback_to_while_loop=True, warn=True):
    """`tf.vectorized_map`: ``fn`` applied to each element of `elems` along its first
    dimension, the results stacked (nbdist runs it as `tf.map_fn`; see the module's docstring).

    Args:
        fn: a callable of one element (the structure of `elems`, each tensor without its first
            dimension), returning a (nested) structure of tensors.
        elems: a tensor or a (nested) structure of tensors of one first dimension.
        fallback_to_while_loop, warn: accepted (nbdist always runs a loop; it has nothing to
            warn about).

    Returns:
        `fn`'s structure, each tensor with the elements' first dimension in front.

    Raises:
        ValueError: `elems` holds no tensor or a scalar.
    """
    del fallback_to_while_loop, warn
    flat = [convert_to_tensor(e) for e in flatten(elems)]
    return map_fn(fn, pack_sequence_as(elems, flat), name="loop_body")


__all__ = ["vectorized_map"]
