"""Resources that outlive a step: variables (and, later, queues and accumulators).

A `ResourceManager` belongs to a worker (or a local Session); kernels reach it as
``ctx.resources`` and never import the runtime. Resources are keyed by container
and name, so a variable ``w1`` on a ps survives across steps, sessions and clients,
and a checkpoint can reach every variable a task holds (`variables()`).
"""

import threading

from nbdist import errors


class VariableResource:
    """One variable's storage: its current value (None until initialized) and a lock."""

    __slots__ = ("name", "device", "_value", "lock")

    def __init__(self, name, device):
        self.name = name
        self.device = device
        self._value = None
        self.lock = threading.Lock()

    @property
    def value(self):
        return self._value

    @value.setter
    def value(self, array):
        # Stored values are read-only: writers swap in a new array, so a value that was
        # read (fetched, queued on the wire) never changes under its holder.
        if array is not None:
            array.setflags(write=False)
        self._value = array

    def read(self):
        """The current value.

        Raises:
            FailedPreconditionError: naming the variable and its device if uninitialized.
        """
        value = self.value
        if value is None:
            where = f" on {self.device}" if self.device else ""
            raise errors.FailedPreconditionError(
                self.name,
                None,
                f"Attempting to use uninitialized value {self.name}{where}: "
                "run tf.global_variables_initializer() (or the variable's initializer) first",
            )
        return value

    @property
    def initialized(self):
        return self.value is not None

    def __repr__(self):
        state = "uninitialized" if self.value is None else f"{self.value.dtype}{list(self.value.shape)}"
        return f"<VariableResource {self.name} {state}>"


class ResourceManager:
    """Thread-safe map ``(container, name) -> resource`` that outlives steps.

    Args:
        device: where the resources live (the task's device, or the local session's);
            errors about a variable name it.
    """

    def __init__(self, device=""):
        self.device = device
        self._lock = threading.Lock()
        self._resources = {}

    def variable(self, node, container=""):
        """The `VariableResource` of a variable node, created empty on first use."""
        name = node.attr.get("shared_name") or node.name
        container = node.attr.get("container") or container
        device = self.device or node.device
        return self.get_or_create((container, "variable", name), lambda: VariableResource(name, device))

    def get_or_create(self, key, factory):
        with self._lock:
            res = self._resources.get(key)
            if res is None:
                res = self._resources[key] = factory()
            return res

    def lookup(self, key):
        with self._lock:
            return self._resources.get(key)

    def variables(self):
        """All variables held here, by name (for checkpoints and inspection)."""
        with self._lock:
            return {k[2]: r for k, r in self._resources.items() if k[1] == "variable"}

    def clear(self, container=None):
        """Drops every resource (of one container when given), as `Session.reset` does."""
        with self._lock:
            if container is None:
                self._resources.clear()
            else:
                for k in [k for k in self._resources if k[0] == container]:
                    del self._resources[k]
