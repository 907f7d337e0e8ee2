"""Cutting a placed step into one partition per task, with `_Send`/`_Recv` pairs.

Every data edge whose two ends sit on different tasks becomes ``src -> _Send`` on the
producer's task and ``_Recv -> dst`` on the consumer's task, joined by a rendezvous
key ``"<send device>;<recv device>;<tensor name>"``. A control edge across tasks sends
an empty tensor after the source op has run. One `_Send` serves every consumer of a
tensor on the same task.

A `NoOp` that only relays control edges between ops of another task is bypassed first
(`bypass_relays`): its consumers wait for its control inputs directly. An optimizer's
``update`` group lands on the worker (the device setter puts every op but the variables
there) while the ops it orders - the ps's updates, then the global step's increment - are
all on the ps: kept, it cost every training step a round trip ps -> worker -> ps.
"""

import hashlib

import numpy as np

from nbdist import errors
from nbdist.graph import dtypes as _dtypes
from nbdist.graph.device import DeviceSpec, Task, task_prefix
from nbdist.graph.graph_def import NodeDef
from nbdist.graph.tensor_shape import TensorShape
from nbdist.ops import registry
from nbdist.ops.deadness import DEADNESS_SOURCES
from nbdist.ops.while_ops import LOOP_OPS
from nbdist.runtime.plan_compiler import split_input

# A relay that would leave fewer pairs of tasks to message each other is bypassed up to
# this many control edges (each a count in the executor; a relay between two groups of
# thousands of ops stays).
MAX_BYPASS_EDGES = 4096

# _Send / _Recv: the only ops that talk to the rendezvous (ctx.rendezvous).
registry.declare("_Send", stateful=True, takes_dead=True)  # a dead tensor is sent as dead
registry.shape("_Send")(lambda inputs, attrs: [])
registry.kernel("_Send")(lambda ctx, node, value: ctx.rendezvous.send(ctx, node, value))
registry.declare("_Recv", stateful=True, blocking=True, parks=True)
registry.shape("_Recv")(lambda inputs, attrs: [(attrs["tensor_type"], attrs["tensor_shape"])])
registry.kernel("_Recv")(lambda ctx, node: ctx.rendezvous.take(ctx, node))
registry.ready("_Recv")(lambda ctx, node: ctx.rendezvous.ready(ctx, node))
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


def partition(nodes, by_name, placement, feeds, fetches, targets):
    """``{task device: Partition}`` for the pruned, placed `nodes`.

    Args:
        nodes: needed `NodeDef`s in topological order.
        by_name: every node of the graph (producers of fed tensors may be pruned away).
        placement: ``name -> full device`` (also for producers of fed tensors).
        feeds, fetches: tensor names; targets: node names.
    """
    parts = {}
    nodes = bypass_relays(nodes, placement, {*targets, *(f.rpartition(":")[0] for f in fetches)})

    def part_of(device):
        key = task_prefix(device)
        if key not in parts:
            parts[key] = Partition(device)
        return parts[key]

    sends = {}  # (tensor name, dst task) -> recv node name
    # Any tensor may be dead when the step holds a tf.cond: its _Recvs say so (the executor
    # then checks for deadness in every partition that receives).
    extra = {"may_be_dead": True} if any(n.op in DEADNESS_SOURCES for n in nodes) else {}
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
        if node.op in LOOP_OPS:
            check_loop_on_one_task(node, device)
        part = part_of(device)
        new_inputs, controls = [], {}  # controls: source device -> crossing control inputs
        for inp in node.input:
            control = inp.startswith("^")
            src = inp[1:] if control else inp.rpartition(":")[0]
            src_device = placement.get(src, device)
            if task_prefix(src_device) == task_prefix(device):
                new_inputs.append(inp)
            elif control:
                controls.setdefault(src_device, []).append(inp)
            else:
                recv = _cross(
                    part_of,
                    sends,
                    inp,
                    src_device,
                    device,
                    by_name[src].output[int(inp.rpartition(":")[2])],
                    extra,
                )
                new_inputs.append(f"{recv}:0")
        for src_device, inps in controls.items():
            # All control edges from one task into this node share one trigger, one message.
            recv = _cross_control(part_of, sends, tuple(inps), src_device, device, extra)
            new_inputs.append(f"^{recv}")
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


def check_loop_on_one_task(node, device):
    """Refuses a `tf.while_loop` whose condition or body holds an op placed on another task
    than the loop (`device`): a loop runs whole on one task (docs/architecture.md says why).

    Raises:
        InvalidArgumentError: naming the op, its device, the loop and its task.
    """
    where = DeviceSpec.from_string(device)
    for part in ("cond", "body"):
        for inner in node.attr[part].nodes:
            spec = DeviceSpec.from_string(inner.device or "")
            if any(
                getattr(spec, f) is not None and getattr(spec, f) != getattr(where, f)
                for f in ("job", "replica", "task")
            ):
                loop = node.attr.get("loop", node.name)
                raise errors.InvalidArgumentError(
                    inner.name,
                    None,
                    f"op {inner.name!r} ({inner.op}) in the {'condition' if part == 'cond' else 'body'} of "
                    f"while loop {loop!r} is placed on {inner.device}, but the loop runs on "
                    f"{task_prefix(device)}: nbdist runs a while loop whole on one task. Place the "
                    "loop and everything in it on one task (with tf.device around tf.while_loop), "
                    "or compute the other task's part before or after the loop",
                )


def bypass_relays(nodes, placement, kept):
    """`nodes` without the `NoOp`s that only relay control edges across tasks.

    A NoOp (not in `kept`: fetched or a target) with control inputs only, some of whose
    edges cross tasks, is bypassed when that makes no more control edges cross tasks and
    no more edges in all (``inputs x consumers <= inputs + consumers``, as TF's dependency
    optimizer), or when it leaves fewer pairs of tasks to send a control message between
    (edges from one task to another travel in one message) with at most
    `MAX_BYPASS_EDGES` edges: each consumer then waits for the NoOp's control inputs itself
    (a chain of relays goes whole, one link at a time). Consumers are copied, never changed.

    The second rule is the optimizer's: its ``update`` group on the worker orders the ps's
    N updates before the ps's increment *and* its constant (created under the same control
    dependencies), N x 2 edges against N + 2, so TF's rule keeps it from 3 variables on:
    every step of an MNIST MLP (4 variables) paid a round trip ps -> worker -> ps.
    """
    consumers = {}
    for node in nodes:
        for inp in node.input:
            if inp.startswith("^"):
                consumers.setdefault(inp[1:], []).append(node)
    relayed = {}  # bypassed NoOp -> the control inputs its consumers wait for instead
    for node in nodes:  # topological: a NoOp's inputs are settled before it
        if node.op != "NoOp" or node.name in kept or node.data_inputs:
            continue
        outs = consumers.get(node.name, [])
        ins = _expanded(node.control_inputs, relayed)
        if not outs or any(i not in placement for i in ins):
            continue
        task = task_prefix(placement[node.name])
        in_tasks = [task_prefix(placement[i]) for i in ins]
        out_tasks = [task_prefix(placement[o.name]) for o in outs]
        before = sum(t != task for t in in_tasks) + sum(t != task for t in out_tasks)
        if before == 0:
            continue
        edges = len(ins) * len(outs)
        # TF's rule: no more edges in all, and no more of them crossing tasks.
        bypass = edges <= len(ins) + len(outs) and sum(a != b for a in in_tasks for b in out_tasks) <= before
        if not bypass and edges <= MAX_BYPASS_EDGES:  # fewer pairs of tasks to message each other
            sources, sinks = set(in_tasks), set(out_tasks)
            pairs_before = len(sources - {task}) + len(sinks - {task})
            bypass = sum(a != b for a in sources for b in sinks) < pairs_before
        if bypass:
            relayed[node.name] = ins
    if not relayed:
        return nodes
    out = []
    for node in nodes:
        if node.name in relayed:
            continue
        controls = node.control_inputs
        if any(c in relayed for c in controls):
            node = node.copy()
            data = [i for i in node.input if not i.startswith("^")]
            node.input = data + [f"^{c}" for c in dict.fromkeys(_expanded(controls, relayed))]
        out.append(node)
    return out


def _expanded(controls, relayed):
    """`controls` with each bypassed NoOp replaced by what it relayed."""
    out = []
    for c in controls:
        out.extend(relayed.get(c, [c]))
    return out


def _cross(part_of, sends, tensor, src_device, dst_device, spec, extra):
    """Adds (once per tensor and destination task) the `_Send`/`_Recv` pair for a data edge."""
    memo_key = (tensor, task_prefix(dst_device))
    if memo_key not in sends:
        if spec[0] is _dtypes.variant:
            raise errors.InvalidArgumentError(
                tensor.rpartition(":")[0],
                None,
                f"tensor {tensor!r} (a while loop's history, dtype variant) would have to go from "
                f"{task_prefix(src_device)} to {task_prefix(dst_device)}; it stays on its loop's task: "
                "place what reads it there",
            )
        safe = tensor.replace(":", "_")
        sends[memo_key] = _pair(part_of, tensor, safe, src_device, dst_device, spec, extra)
    return sends[memo_key]


def _cross_control(part_of, sends, inputs, src_device, dst_device, extra):
    """One `_ControlTrigger` after `inputs` (ops of one task) and its `_Send`/`_Recv` pair."""
    memo_key = (inputs, task_prefix(dst_device))
    if memo_key not in sends:
        safe = f"ctrl_{inputs[0][1:]}"
        if len(inputs) > 1:  # unique per group of sources, readable by its first one
            digest = hashlib.sha256("\n".join(inputs).encode()).hexdigest()[:8]
            safe += f"+{len(inputs) - 1}_{digest}"
        spec = (_dtypes.float32, TensorShape([0]))
        trigger = NodeDef(
            f"_trigger/{safe}/{_short(dst_device)}",
            "_ControlTrigger",
            list(inputs),
            src_device,
            {},
            [spec],
        )
        part_of(src_device).nodes.append(trigger)
        # tensor_name names the (first) op waited for; control_inputs lists them all.
        extra = {**extra, "tensor_name": inputs[0], "control_inputs": [i[1:] for i in inputs]}
        sends[memo_key] = _pair(part_of, f"{trigger.name}:0", safe, src_device, dst_device, spec, extra)
    return sends[memo_key]


def last_to_end(parts):
    """The task whose partition cannot end before every other partition of the step has, or
    None: the only one, or the one every node of each other partition leads to (a `_Send`
    to it, or an ancestor of one there) - the ps that applies every worker's gradients.

    Its run's end is the step's end (no other run has an op left), so it may answer the
    client itself (`fetch_delivery.StepFetches`: one message less on the step's path).
    """
    if len(parts) == 1:
        return next(iter(parts))
    for task in parts:
        if all(_leads_only_to(part, task) for other, part in parts.items() if other != task):
            return task
    return None


def _leads_only_to(part, task):
    """`part` fetches nothing, and each of its nodes is a `_Send` to `task` or feeds one."""
    if part.fetches:
        return False
    by_name = {n.name: n for n in part.nodes}
    todo = [n.name for n in part.nodes if n.op == "_Send" and task_prefix(n.attr["recv_device"]) == task]
    reached = set()
    while todo:
        name = todo.pop()
        if name in reached or name not in by_name:
            continue
        reached.add(name)
        node = by_name[name]
        todo += [split_input(i)[0] for i in node.data_inputs] + node.control_inputs
    return len(reached) == len(by_name)


def _pair(part_of, tensor, safe, src_device, dst_device, spec, extra=None):
    dtype, shape = spec
    dst = _short(dst_device)
    attrs = {
        "key": f"{src_device};{dst_device};{tensor}",
        "send_device": src_device,
        "recv_device": dst_device,
        "tensor_name": tensor,
        **(extra or {}),
    }
    send = NodeDef(f"_send/{safe}/{dst}", "_Send", [tensor], src_device, attrs, [])
    recv = NodeDef(
        f"_recv/{safe}/{dst}",
        "_Recv",
        [],
        dst_device,
        {**attrs, "tensor_type": dtype, "tensor_shape": shape},
        [spec],
    )
    part_of(src_device).nodes.append(send)
    part_of(dst_device).nodes.append(recv)
    return recv.name


def _short(device):
    # "/job:ps/replica:0/task:1/device:CPU:0" -> "ps_1"
    return Task.parse(device).slug
