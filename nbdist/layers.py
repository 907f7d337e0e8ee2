"""`tf.layers`: TF 1.x's layers, as functions and classes (variables named and scoped as TF's)."""

from nbdist._facade import unsupported as _unsupported
from nbdist.ops.layers_base import InputSpec, Layer
from nbdist.ops.layers_conv import (
    AveragePooling1D,
    AveragePooling2D,
    Conv2D,
    MaxPooling1D,
    MaxPooling2D,
    average_pooling1d,
    average_pooling2d,
    conv2d,
    max_pooling1d,
    max_pooling2d,
)
from nbdist.ops.layers_conv3d import (
    AveragePooling3D,
    Conv3D,
    Conv3DTranspose,
    MaxPooling3D,
    average_pooling3d,
    conv3d,
    conv3d_transpose,
    max_pooling3d,
)
from nbdist.ops.layers_conv_more import (
    Conv1D,
    Conv2DTranspose,
    SeparableConv1D,
    SeparableConv2D,
    conv1d,
    conv2d_transpose,
    separable_conv1d,
    separable_conv2d,
)
from nbdist.ops.layers_core import Dense, Dropout, Flatten, dense, dropout, flatten
from nbdist.ops.layers_normalization import BatchNormalization, batch_normalization

__all__ = [
    "AveragePooling1D",
    "AveragePooling2D",
    "BatchNormalization",
    "Conv1D",
    "Conv2D",
    "Conv2DTranspose",
    "Dense",
    "Dropout",
    "Flatten",
    "InputSpec",
    "Layer",
    "MaxPooling1D",
    "MaxPooling2D",
    "SeparableConv1D",
    "SeparableConv2D",
    "average_pooling1d",
    "average_pooling2d",
    "batch_normalization",
    "conv1d",
    "conv2d",
    "conv2d_transpose",
    "dense",
    "dropout",
    "flatten",
    "max_pooling1d",
    "max_pooling2d",
    "separable_conv1d",
    "separable_conv2d",
]

# Issue 32: the 3-D layers.
__all__ += ["AveragePooling3D", "Conv3D", "Conv3DTranspose", "MaxPooling3D", "average_pooling3d", "conv3d"]
__all__ += ["conv3d_transpose", "max_pooling3d"]


def __getattr__(name):
    return _unsupported("tf.layers", name)
