"""Cutting a placed step into one partition per task, with `_Send`/`_Recv` pairs.

Every data edge whose two ends sit on different tasks becomes ``src -> _Send`` on the
producer's task and ``_Recv -> dst`` on the consumer's task, joined by a rendezvous
key ``"<send device>;<recv device>;<tensor name>"``. A control edge across tasks sends
an empty tensor after the source op has run. One `_Send` serves every consumer of a
tensor on the same task.
"""

import numpy as np

from nbdist.graph import dtypes as _dtypes
from nbdist.graph.graph_def import NodeDef
from nbdist.graph.tensor_shape import TensorShape
from nbdist.ops import registry

# _Send / _Recv: the only ops that talk to the rendezvous (ctx.rendezvous).
registry.declare("_Send", stateful=True)
registry.shape("_Send")(lambda inputs, attrs: [])
registry.kernel("_Send")(lambda ctx, node, value: ctx.rendezvous.send(ctx, node, value))
registry.declare("_Recv", stateful=True, blocking=True)
registry.shape("_Recv")(lambda inputs, attrs: [(attrs["tensor_type"], attrs["tensor_shape"])])
registry.kernel("_Recv")(lambda ctx, node: ctx.rendezvous.take(ctx, node))
registry.shape("_ControlTrigger")(lambda inputs, attrs: [(_dtypes.float32, TensorShape([0]))])
registry.kernel("_ControlTrigger")(lambda ctx, node: np.zeros(0, np.float32))


class Partition:
    """The nodes one task runs for a step, and what it is fed, fetches and targets."""

    def __init__(self, device):
        self.device = device
        self.nodes = []
        self.feeds = []
        self.fetches = []
        self.targets = []

    def graph_def(self):
        return {"node": [n.to_dict() for n in self.nodes]}

    def __repr__(self):
        return f"<Partition {self.device}: {len(self.nodes)} nodes>"


def task_prefix(device):
    """``/job:J/replica:0/task:T`` of a full device (the partition key)."""
    return device.rsplit("/device:", 1)[0]


def partition(nodes, by_name, placement, feeds, fetches, targets):
    """``{task device: Partition}`` for the pruned, placed `nodes`.

    Args:
        nodes: needed `NodeDef`s in topological order.
        by_name: every node of the graph (producers of fed tensors may be pruned away).
        placement: ``name -> full device`` (also for producers of fed tensors).
        feeds, fetches: tensor names; targets: node names.
    """
    parts = {}

    def part_of(device):
        key = task_prefix(device)
        if key not in parts:
            parts[key] = Partition(device)
        return parts[key]

    sends = {}  # (tensor name, dst task) -> recv node name
    needed = {n.name for n in nodes}
    for name in feeds:
        op = name.rpartition(":")[0]
        part = part_of(placement[op])
        part.feeds.append(name)
        if op not in needed:  # the executor checks a feed against its producer's outputs
            needed.add(op)
            producer = by_name[op].copy()
            producer.input, producer.device = [], placement[op]
            part.nodes.append(producer)
    for node in nodes:
        device = placement[node.name]
        part = part_of(device)
        new_inputs = []
        for inp in node.input:
            control = inp.startswith("^")
            src = inp[1:] if control else inp.rpartition(":")[0]
            src_device = placement.get(src, device)
            if task_prefix(src_device) == task_prefix(device):
                new_inputs.append(inp)
                continue
            recv = _cross(parts, part_of, sends, inp, src, src_device, device, control, by_name)
            new_inputs.append(f"^{recv}" if control else f"{recv}:0")
        copy = node.copy()
        copy.input = new_inputs
        copy.device = device
        part.nodes.append(copy)
    for name in fetches:
        part_of(placement[name.rpartition(":")[0]]).fetches.append(name)
    for name in targets:
        part_of(placement[name]).targets.append(name)
    for part in parts.values():
        part.targets.extend(n.name for n in part.nodes if n.op == "_Send")
    return parts


def _cross(parts, part_of, sends, inp, src, src_device, dst_device, control, by_name):
    """Adds (once per tensor and destination task) the `_Send`/`_Recv` pair for an edge."""
    dst_task = task_prefix(dst_device)
    memo_key = (inp, dst_task)
    if memo_key in sends:
        return sends[memo_key]
    src_part = part_of(src_device)
    safe = inp.replace("^", "ctrl_").replace(":", "_")
    key = f"{src_device};{dst_device};{inp}"
    if control:
        trigger = NodeDef(
            f"_trigger/{safe}/{_short(dst_task)}",
            "_ControlTrigger",
            [inp],
            src_device,
            {},
            [(_dtypes.float32, TensorShape([0]))],
        )
        src_part.nodes.append(trigger)
        tensor, dtype, shape = f"{trigger.name}:0", _dtypes.float32, TensorShape([0])
    else:
        index = int(inp.rpartition(":")[2])
        dtype, shape = by_name[src].output[index]
        tensor = inp
    attrs = {"key": key, "send_device": src_device, "recv_device": dst_device, "tensor_name": inp}
    send = NodeDef(f"_send/{safe}/{_short(dst_task)}", "_Send", [tensor], src_device, attrs, [])
    recv = NodeDef(
        f"_recv/{safe}/{_short(dst_task)}",
        "_Recv",
        [],
        dst_device,
        {**attrs, "tensor_type": dtype, "tensor_shape": shape},
        [(dtype, shape)],
    )
    src_part.nodes.append(send)
    part_of(dst_device).nodes.append(recv)
    sends[memo_key] = recv.name
    return recv.name


def _short(task):
    # "/job:ps/replica:0/task:1" -> "ps_1"
    parts = dict(p.split(":", 1) for p in task.strip("/").split("/"))
    return f"{parts['job']}_{parts['task']}"
