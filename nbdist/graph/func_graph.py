"""`FuncGraph`: a graph that records a function's ops - a `tf.while_loop`'s condition or body.

TF 2 records each function of a functional op (``While``, ``If``) in its own graph and keeps
it in the op; nbdist's `while_loop` does the same (ops/while_ops.py). Recording in a
`FuncGraph` is recording in a graph whose default scopes start where the loop is made (name
scope, devices, seed): a tensor of an enclosing graph that the function reads is *captured* -
it becomes a placeholder of this graph, and the functional op takes the outer tensor as an
extra input. Its ops and placeholders become a `SubgraphDef` (graph_def.py) in the op's attrs,
so the function travels with the graph to whichever task runs the op.
"""

from nbdist.graph.graph import Graph, Tensor

# Variables live outside a function (as TF 2's functions lift them): made in a body, they
# would be made anew on every iteration.
_VARIABLE_OPS = frozenset({"VariableV2", "Variable", "VarHandleOp"})


class FuncGraph(Graph):
    """The graph of one function, inside `outer` (a `Graph`, or a `FuncGraph` when nested).

    Args:
        outer: the graph the functional op is made in.
        what: what the function is, for error messages (``"body of while loop 'while'"``).
    """

    def __init__(self, outer, what):
        super().__init__()
        self.outer = outer
        self.what = what
        self.seed = outer.seed
        self.captures = {}  # outer tensor (of `outer`) -> its placeholder here, in capture order
        self.outer_control_inputs = []  # ops of `outer` an op here was told to wait for
        self._name_stack = outer.get_name_scope()
        self._device_stack[:] = outer.device_functions()

    def capture(self, tensor):
        """`tensor` as this graph sees it: itself, or the placeholder standing for it."""
        if tensor.graph is self:
            return tensor
        if tensor.graph is not self.outer:
            if not isinstance(self.outer, FuncGraph):
                raise ValueError(
                    f"tensor {tensor.name} is from a different graph than the {self.what}; "
                    "build all ops of one computation in the same tf.Graph"
                )
            tensor = self.outer.capture(tensor)  # through every enclosing function
        placeholder = self.captures.get(tensor)
        if placeholder is None:
            placeholder = self.add_placeholder(tensor.dtype, tensor.shape, f"captured/{tensor.op.name}")
            self.captures[tensor] = placeholder
        return placeholder

    def add_placeholder(self, dtype, shape, name):
        """A placeholder for one of the function's inputs, outside any scope or context."""
        context = self.get_control_flow_context()
        self.set_control_flow_context(None)
        saved_stack, self._name_stack = self._name_stack, ""
        try:
            with self.control_dependencies(None):
                op = Graph.create_op(
                    self,
                    "Placeholder",
                    [],
                    [(dtype, shape)],
                    name=name,
                    attrs={"dtype": dtype, "shape": shape},
                )
        finally:
            self._name_stack = saved_stack
            self.set_control_flow_context(context)
        return op.outputs[0]

    def create_op(self, op_type, inputs, output_specs, name=None, attrs=None, control_inputs=()):
        if op_type in _VARIABLE_OPS:
            raise ValueError(
                f"cannot create a variable ({op_type} {name!r}) inside the {self.what}: it would be "
                "made anew on every iteration. Create it before the loop and use it inside"
            )
        inputs = [self.capture(t) if isinstance(t, Tensor) and t.graph is not self else t for t in inputs]
        mine = []
        for c in control_inputs:
            (mine if c.graph is self else self.outer_control_inputs).append(c)
        return super().create_op(op_type, inputs, output_specs, name=name, attrs=attrs, control_inputs=mine)

    def control_dependencies(self, control_inputs):
        if control_inputs is not None:
            control_inputs = list(control_inputs)
            outer = [c for c in control_inputs if getattr(c, "graph", self) is not self]
            self.outer_control_inputs.extend(getattr(c, "op", c) for c in outer)
            control_inputs = [c for c in control_inputs if getattr(c, "graph", self) is self]
        return super().control_dependencies(control_inputs)

    def __repr__(self):
        return f"<nbdist.FuncGraph of the {self.what} with {len(self._ops)} ops>"
