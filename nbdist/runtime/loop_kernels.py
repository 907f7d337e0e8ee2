"""The kernels of `tf.while_loop`'s ops (ops/while_ops.py): a loop runs its condition and body,
each compiled once into an `ExecutionPlan`, on the task its op was placed on.

Every iteration looks at the step first: a session that closed, an aborted step or a passed
deadline ends the loop there, with an error naming the loop and the iteration; an error of an
op inside names them too. A body that waits (a queue) waits as a step does, bounded by the same
deadline (the op is declared blocking: the partition runs off the server's I/O thread). A traced
step records one span per iteration (``<loop>/iteration:<k>``, op ``WhileIteration``) and, for
the first `TRACED_ITERATIONS`, the ops inside.
"""

import time

import numpy as np

from nbdist import errors
from nbdist.ops import registry
from nbdist.ops.while_ops import LOOP_OPS
from nbdist.runtime.executor import StepContext, plan_of

TRACED_ITERATIONS = 10  # a traced loop records its ops for this many iterations, then only spans
TRACED_SPANS = 1000  # ...and one span per iteration up to this many


class _LoopStep(StepContext):
    """The `StepContext` of a loop's condition or body: the step's resources, deadline and trace,
    ended when the step is (its abort and cancellation are the step's)."""

    __slots__ = ("step",)

    def __init__(self, step):
        super().__init__(
            step.resources,
            None,
            step.step_id,
            step.deadline,
            step.trace,
            step.device,
            step.session,
            step.master,
        )
        self.step = step

    def abort_error(self):
        return self.step.abort_error()


class _Iterations:
    """Checks and traces the iterations of one running loop."""

    def __init__(self, ctx, node, what):
        self.ctx, self.node, self.what = ctx, node, what
        self.loop = node.attr.get("loop", node.name)
        self.inner = _LoopStep(ctx)
        self.trace = ctx.trace

    def check(self, k):
        """Raises when the step was cancelled or its deadline passed, naming iteration `k`."""
        error = self.ctx.abort_error()
        if error is not None:
            raise type(error)(
                self.node.name, None, f"{error.message} (ended {self.what} {self.loop!r} at iteration {k})"
            )
        if self.ctx.deadline is not None and time.monotonic() > self.ctx.deadline:
            raise errors.DeadlineExceededError(
                self.node.name,
                None,
                f"{self.what} {self.loop!r} timed out at iteration {k} on "
                f"{self.ctx.device or 'the local device'}; raise the timeout with "
                "tf.RunOptions(timeout_in_ms=...) or bound the loop with maximum_iterations",
            )

    def run(self, plan, k, values):
        """Runs `plan` (the condition or body) for iteration `k`."""
        self.inner.trace = self.trace if k < TRACED_ITERATIONS else None
        try:
            return plan.run(self.inner, values)
        except errors.OpError as e:
            if f"{self.what} {self.loop!r}" in e.message:
                raise
            raise type(e)(
                e.node_def,
                e.op,
                f"{e.message}\n\tin {self.what} {self.loop!r} at iteration {k}",
                e.remote_traceback,
            ) from None

    def span(self, k, start):
        if self.trace is not None and k < TRACED_SPANS:
            self.trace.append(
                (f"{self.node.name}/iteration:{k}", "WhileIteration", start, time.perf_counter())
            )


def _while_kernel(ctx, node, *inputs):
    attrs = node.attr
    n_vars = attrs["n_vars"]
    values = list(inputs[:n_vars])
    limit = None
    first_capture = n_vars
    if attrs["has_maximum_iterations"]:
        limit = int(inputs[n_vars])
        first_capture += 1
    captures = list(inputs[first_capture:])
    cond, body = plan_of(attrs["cond"]), plan_of(attrs["body"])
    history = [] if attrs["back_prop"] else None
    accumulated = [[] for _ in attrs["accumulated"]]
    loop = _Iterations(ctx, node, "while loop")
    k = 0
    while True:
        loop.check(k)
        if limit is not None and k >= limit:
            break
        start = time.perf_counter()
        (go,) = loop.run(cond, k, values + captures)
        if not bool(go):
            break
        if history is not None:
            history.append(tuple(values))
        out = loop.run(body, k, values + captures)
        values = out[:n_vars]
        for stack, value in zip(accumulated, out[n_vars:]):
            stack.append(value)
        loop.span(k, start)
        k += 1
    stacked = [_stack(node, i, s, spec) for i, (s, spec) in enumerate(zip(accumulated, attrs["accumulated"]))]
    record = np.empty((), dtype=object)
    record[()] = history
    return (*values, *stacked, record, np.int32(k))


def _stack(node, i, values, spec):
    if not values:
        dtype, shape = spec
        return np.zeros((0, *[d or 0 for d in (shape.dims or [])]), dtype=dtype.np)
    try:
        return np.stack(values)
    except ValueError:
        shapes = sorted({tuple(np.shape(v)) for v in values})
        raise errors.InvalidArgumentError(
            node.name,
            None,
            f"while loop {node.attr.get('loop', node.name)!r}: the values of its output {i} differ in "
            f"shape between iterations ({shapes}) and cannot be stacked (tf.map_fn / tf.scan need "
            "one shape)",
        ) from None


def _while_grad_kernel(ctx, node, record, *inputs):
    """Runs the body's gradient function once per forward iteration, last first: the loop
    variables' gradients go from one to the next, the captures' gradients add up."""
    attrs = node.attr
    history = record[()]
    if history is None:
        raise errors.InvalidArgumentError(
            node.name, None, f"while loop {attrs['loop']!r} kept no history (back_prop=False): no gradient"
        )
    n_caps, n_var_grads = attrs["n_captures"], attrs["n_grads_of_vars"]
    captures = list(inputs[:n_caps])
    var_grads = list(inputs[n_caps : n_caps + n_var_grads])
    acc_grads = list(inputs[n_caps + n_var_grads :])
    capture_grads = [np.zeros_like(captures[i]) for i in attrs["diff_captures"]]
    plan = plan_of(attrs["body_grad"])
    loop = _Iterations(ctx, node, "gradient of while loop")
    for j, k in enumerate(reversed(range(len(history)))):
        loop.check(j)
        start = time.perf_counter()
        out = loop.run(plan, j, [*history[k], *captures, *var_grads, *[g[k] for g in acc_grads]])
        var_grads = out[:n_var_grads]
        for c, g in enumerate(out[n_var_grads:]):
            capture_grads[c] = capture_grads[c] + g
        loop.span(j, start)
    grads = (*var_grads, *capture_grads)
    return grads[0] if len(grads) == 1 else grads  # (a kernel gives its one output itself)


for _type in LOOP_OPS:
    registry.kernel(_type)(_while_kernel)
registry.kernel("WhileGrad")(_while_grad_kernel)
