"""`tf.bfloat16` and `tf.to_bfloat16`, where the ml_dtypes package gives numpy a bfloat16
(TensorFlow installs it); without it neither name exists."""

from nbdist.graph import dtypes as _dtypes
from nbdist.ops.cast_select_ops import cast

if getattr(_dtypes, "bfloat16", None) is not None:
    bfloat16 = _dtypes.bfloat16

    def to_bfloat16(x, name="ToBFloat16"):
        """Deprecated: `tf.cast(x, tf.bfloat16)`."""
        return cast(x, bfloat16, name=name)

    __all__ = ["bfloat16", "to_bfloat16"]
else:
    __all__ = []
