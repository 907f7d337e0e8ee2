"""A kernel's error, as the step reports it: the node, its op and its device named once
(TF's ``[[node name (Op) on device]]`` suffix); a numpy error becomes the node's
`InvalidArgumentError`."""

from nbdist import errors


def raise_from_kernel(e, node, ctx):
    """Raises the error of `node`'s kernel, naming the node and its device."""
    if isinstance(e, errors.OpError):
        raise with_node(e, node, ctx) from None
    # a numpy error in a kernel: report it against the node
    raise errors.InvalidArgumentError(
        node.name,
        None,
        f"{type(e).__name__} in {node.op} op {node.name!r}: {e}{where(node, ctx)}",
    ) from e


def where(node, ctx):
    device = node.device or ctx.device
    return f"\n\t [[node {node.name} ({node.op}) on {device or 'the local device'}]]"


def with_node(e, node, ctx):
    """The same OpError, with the node and device appended once."""
    if "[[node " in e.message:
        return e
    return type(e)(e.node_def or node.name, e.op, e.message + where(node, ctx), e.remote_traceback)
