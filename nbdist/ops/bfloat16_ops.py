"""`tf.to_bfloat16` (and, through the facade, `tf.bfloat16`), where the ml_dtypes package gives
numpy a bfloat16 (TensorFlow installs it). The DType is made on first use
(`nbdist.graph.dtypes`): importing ml_dtypes costs ~0.7 s, which every nbdist process - every
task of a cluster - would otherwise pay."""

from nbdist.ops.cast_select_ops import cast

__all__ = ["to_bfloat16"]


def to_bfloat16(x, name="ToBFloat16"):
    """Deprecated: `tf.cast(x, tf.bfloat16)`.

    Raises:
        TypeError: without the ml_dtypes package (nbdist then has no bfloat16).
    """
    return cast(x, "bfloat16", name=name)
