"""The global step: TF 1.x's ``tf.train.get_or_create_global_step`` and friends.

The global step is an int64 scalar variable named ``global_step``, not trainable,
in the `GLOBAL_VARIABLES` and `GLOBAL_STEP` collections. Optimizers increment it
(``minimize(loss, global_step=...)``); hooks and checkpoints read it.
"""

from nbdist.graph import dtypes as _dtypes
from nbdist.graph.graph import GraphKeys, Tensor, get_default_graph
from nbdist.ops import state_ops


def get_global_step(graph=None):
    """The global step of `graph` (default: the default graph), or None if it has none.

    Looks in the `GLOBAL_STEP` collection, then for a tensor named ``global_step:0``.

    Raises:
        TypeError: if what is found is not an integer scalar variable or tensor.
        ValueError: if the `GLOBAL_STEP` collection holds more than one item.
    """
    graph = graph or get_default_graph()
    found = graph.get_collection(GraphKeys.GLOBAL_STEP)
    if len(found) > 1:
        raise ValueError(
            f"the GLOBAL_STEP collection holds {len(found)} items ({[str(v) for v in found]}); "
            "a graph has one global step"
        )
    if found:
        step = found[0]
    else:
        try:
            step = graph.get_tensor_by_name("global_step:0")
        except KeyError:
            return None
    assert_global_step(step)
    return step


def create_global_step(graph=None):
    """Creates the global step variable of `graph` (at the root name scope) and returns it.

    Raises:
        ValueError: if `graph` already has one.
    """
    graph = graph or get_default_graph()
    if get_global_step(graph) is not None:
        raise ValueError('"global_step" already exists.')
    with graph.as_default(), graph.name_scope(None):
        return state_ops.Variable(
            0,
            dtype=_dtypes.int64,
            name=GraphKeys.GLOBAL_STEP,
            trainable=False,
            collections=[GraphKeys.GLOBAL_VARIABLES, GraphKeys.GLOBAL_STEP],
        )


def get_or_create_global_step(graph=None):
    """The global step of `graph`, created first if it has none."""
    graph = graph or get_default_graph()
    step = get_global_step(graph)
    if step is None:
        step = create_global_step(graph)
    return step


def global_step(sess, global_step_tensor):
    """The current value of `global_step_tensor` in `sess`, as a Python int.

    Example::

        print(tf.train.global_step(sess, tf.train.get_global_step()))
    """
    return int(sess.run(global_step_tensor))


def assert_global_step(global_step_tensor):
    """Checks that `global_step_tensor` can serve as a global step.

    Raises:
        TypeError: if it is not a variable or tensor, not of an integer dtype, or not a scalar.
    """
    if not isinstance(global_step_tensor, (state_ops.Variable, Tensor)):
        raise TypeError(f'Existing "global_step" must be a Variable or Tensor: {global_step_tensor!r}.')
    if not global_step_tensor.dtype.is_integer:
        raise TypeError(f'Existing "global_step" does not have integer type: {global_step_tensor.dtype!r}')
    shape = global_step_tensor.shape
    if shape.ndims != 0 and shape.is_fully_defined():
        raise TypeError(f'Existing "global_step" is not scalar: {shape}')
