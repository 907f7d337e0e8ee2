"""`ResourceManager.resource` remembers which resource a creator node names (a training step
looks up every variable it reads or updates), and forgets it when resources are dropped."""

from nbdist.graph.graph_def import NodeDef
from nbdist.ops.resources import VARIABLE, ResourceKind, ResourceManager


def _var(name, **attr):
    node = NodeDef(name, "VariableV2", [])
    node.attr.update(attr)
    return node


def test_the_same_node_finds_the_same_resource_until_it_is_dropped():
    rm = ResourceManager("/job:ps/task:0")
    node = _var("w")
    first = rm.resource(VARIABLE, node)
    assert rm.resource(VARIABLE, node) is first
    assert rm.resource(VARIABLE, _var("w")) is first  # another creator node of the same name
    rm.clear()
    again = rm.resource(VARIABLE, node)
    assert again is not first  # Session.reset dropped it: a new, empty one
    assert rm.resource(VARIABLE, node) is again


def test_containers_and_shared_names_are_kept_apart():
    rm = ResourceManager()
    node = _var("w")
    in_a = rm.resource(VARIABLE, node, container="a")
    assert rm.resource(VARIABLE, node, container="b") is not in_a
    assert rm.resource(VARIABLE, _var("v", shared_name="w"), container="a") is in_a
    rm.clear("b")  # another container dropped: this one's is found anew, and is the same
    assert rm.resource(VARIABLE, node, container="a") is in_a


def test_per_session_resources_are_per_session_and_go_with_it():
    kind = ResourceKind("counter", lambda name, device, attrs: object(), per_session=True)
    rm = ResourceManager()
    node = _var("it")
    one, two = rm.resource(kind, node, session="s1"), rm.resource(kind, node, session="s2")
    assert one is not two
    assert rm.resource(kind, node, session="s1") is one
    rm.clear_session("s1")
    assert rm.resource(kind, node, session="s1") is not one
    assert rm.resource(kind, node, session="s2") is two
