"""`tf.nn.rnn_cell`: TF 1.x's RNN cells (ops/rnn_cell_ops.py)."""

from nbdist._facade import unsupported as _unsupported
from nbdist.ops.rnn_cell_ops import (
    BasicLSTMCell,
    BasicRNNCell,
    DropoutWrapper,
    GRUCell,
    LSTMCell,
    LSTMStateTuple,
    MultiRNNCell,
    RNNCell,
)

__all__ = [
    "BasicLSTMCell",
    "BasicRNNCell",
    "DropoutWrapper",
    "GRUCell",
    "LSTMCell",
    "LSTMStateTuple",
    "MultiRNNCell",
    "RNNCell",
]


def __getattr__(name):
    return _unsupported("tf.nn.rnn_cell", name)
