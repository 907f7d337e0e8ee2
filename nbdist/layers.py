"""`tf.layers`: TF 1.x's layers, as functions and classes (variables named and scoped as TF's)."""

from nbdist._facade import unsupported as _unsupported
from nbdist.ops.layers_base import Layer
from nbdist.ops.layers_conv import (
    AveragePooling2D,
    Conv2D,
    MaxPooling2D,
    average_pooling2d,
    conv2d,
    max_pooling2d,
)
from nbdist.ops.layers_core import Dense, Dropout, Flatten, dense, dropout, flatten
from nbdist.ops.layers_normalization import BatchNormalization, batch_normalization

__all__ = [
    "AveragePooling2D",
    "BatchNormalization",
    "Conv2D",
    "Dense",
    "Dropout",
    "Flatten",
    "Layer",
    "MaxPooling2D",
    "average_pooling2d",
    "batch_normalization",
    "conv2d",
    "dense",
    "dropout",
    "flatten",
    "max_pooling2d",
]


def __getattr__(name):
    return _unsupported("tf.layers", name)
