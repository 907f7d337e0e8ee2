"""Variable scaffolding against real TF: `tf.make_template`, `tf.variable_creator_scope`,
`tf.VariableSynchronization` / `tf.VariableAggregation`, `tf.init_scope`, `tf.op_scope`,
`tf.variable_op_scope`, `tf.all_variables`, `tf.model_variables`, `tf.add_to_collections`,
`tf.no_regularizer`, `tf.create_partitioned_variables`: each built under both libraries,
names and values compared.
"""

import numpy as np
import pytest

import nbdist as tf

W0 = np.array([[1.0, -2.0], [0.5, 3.0]], dtype=np.float32)
X0 = np.array([[1.0, 2.0]], dtype=np.float32)


def _run(lib, build):
    """`build(lib)` in a new graph -> (what it returns besides tensors, fetched values)."""
    with lib.Graph().as_default():
        names, fetches = build(lib)
        with lib.Session() as sess:
            sess.run(lib.global_variables_initializer())
            return names, sess.run(fetches)


def _same(tf1, build):
    ours, theirs = _run(tf, build), _run(tf1, build)
    assert ours[0] == theirs[0]
    for a, b in zip(ours[1], theirs[1]):
        np.testing.assert_allclose(a, b)
    return ours


def _template_graph(lib, now):
    def dense(x, scale=1.0):
        w = lib.get_variable("w", initializer=lib.constant_initializer(W0), shape=[2, 2])
        return lib.matmul(x, w * scale, name="out")

    t = lib.make_template("dense", dense, create_scope_now_=now, scale=2.0)
    a = t(lib.constant(X0))
    b = t(lib.constant(X0 + 1))
    with lib.name_scope("outer"):
        c = t(lib.constant(X0 - 1))
    other = lib.make_template("dense", dense)(lib.constant(X0))
    props = (t.name, t.variable_scope.name, t.variable_scope_name, [v.name for v in t.variables])
    props += ([v.name for v in t.trainable_variables], t.non_trainable_variables, t.local_variables)
    names = [x.name for x in (a, b, c, other)] + [v.name for v in lib.global_variables()]
    return [*names, props], [a, b, c, other]


@pytest.mark.parametrize("now", [False, True])
def test_make_template_shares_variables_and_names_ops_as_tf(tf1, now):
    names, values = _same(tf1, lambda lib: _template_graph(lib, now))
    assert names[:4] == ["dense/out:0", "dense_1/out:0", "outer/dense/out:0", "dense_2/out:0"]
    assert names[4:6] == ["dense/w:0", "dense_1/w:0"]
    np.testing.assert_allclose(values[0], X0 @ (2 * W0))


def test_make_template_unique_name_is_used_as_given(tf1):
    def build(lib):
        t = lib.make_template(
            "ignored", lambda: lib.get_variable("v", [3], initializer=lib.ones_initializer())
        )
        v = t()
        return [v.name, t() is v], [v]

    _same(tf1, build)


@pytest.mark.parametrize("which", ["nbdist", "tf"])
def test_a_template_making_a_new_trainable_variable_after_its_first_call_raises(tf1, which):
    lib = tf if which == "nbdist" else tf1
    with lib.Graph().as_default():
        t = lib.make_template("bad", lambda x: x * lib.Variable(1.0))
        t(1.0)
        with pytest.raises(
            ValueError,
            match=r"(?s)Trainable variable created when calling a "
            r"template after the first time.*originally defined at:",
        ):
            t(2.0)
        with pytest.raises(ValueError, match="name cannot be None"):
            lib.make_template(None, lambda: None)


@pytest.mark.parametrize("which", ["nbdist", "tf"])
def test_variable_creator_scope_runs_the_innermost_creator_first(tf1, which):
    lib = tf if which == "nbdist" else tf1
    seen = []

    def untrainable(next_creator, **kwargs):
        seen.append(("outer", kwargs["name"], kwargs["trainable"]))
        kwargs["trainable"] = False
        return next_creator(**kwargs)

    def record(next_creator, **kwargs):
        seen.append(("inner", kwargs["name"], sorted(kwargs)))
        return next_creator(**kwargs)

    with lib.Graph().as_default():
        with lib.variable_creator_scope(untrainable), lib.variable_creator_scope(record):
            v = lib.Variable(1.0, name="v")
            w = lib.get_variable("w", [2])
        u = lib.Variable(2.0, name="u")
        assert [x.name for x in lib.trainable_variables()] == ["u:0"]
        assert (v.name, w.name, u.trainable) == ("v:0", "w:0", True)
    assert [s[:2] for s in seen] == [("inner", "v"), ("outer", "v"), ("inner", "w"), ("outer", "w")]
    assert seen[1][2] is None  # tf.Variable's trainable as given (None), before TF's default
    keys = seen[0][2]
    assert {"initial_value", "trainable", "synchronization", "aggregation", "dtype"} <= set(keys)


def test_variable_creator_scope_creator_may_return_its_own_variable(tf1):
    def build(lib):
        shared = lib.Variable(5.0, name="shared")
        with lib.variable_creator_scope(lambda next_creator, **kwargs: shared):
            got = lib.Variable(1.0, name="ignored")
        return [got is shared, [v.name for v in lib.global_variables()]], [got]

    _same(tf1, build)


def test_synchronization_and_aggregation_as_tf(tf1):
    def build(lib):
        on_read = lib.Variable(
            1.0,
            synchronization=lib.VariableSynchronization.ON_READ,
            aggregation=lib.VariableAggregation.SUM,
        )
        plain = lib.Variable(2.0, aggregation=2)
        got = lib.get_variable(
            "g",
            [2],
            synchronization=lib.VariableSynchronization.ON_READ,
            aggregation=lib.VariableAggregation.MEAN,
        )
        described = [
            (
                v.trainable,
                v.synchronization.name,
                v.synchronization.value,
                v.aggregation.name,
                v.aggregation.value,
            )
            for v in (on_read, plain, got)
        ]
        return [described, [v.name for v in lib.trainable_variables()]], [on_read, plain]

    names, _ = _same(tf1, build)
    assert names[0][0] == (False, "ON_READ", 3, "SUM", 1)


def test_partitioned_shards_keep_synchronization_and_aggregation(tf1):
    def build(lib):
        shards = lib.get_variable(
            "p",
            [4, 2],
            initializer=lib.zeros_initializer(),
            partitioner=lib.fixed_size_partitioner(2),
            synchronization=lib.VariableSynchronization.ON_READ,
            aggregation=lib.VariableAggregation.MEAN,
        )
        described = [(v.name, v.trainable, v.synchronization.name, v.aggregation.name) for v in shards]
        return [described, lib.trainable_variables()], list(shards)

    names, _ = _same(tf1, build)
    assert names[0] == [("p/part_0:0", False, "ON_READ", "MEAN"), ("p/part_1:0", False, "ON_READ", "MEAN")]


def test_custom_getter_of_a_template_sees_every_variable(tf1):
    def build(lib):
        seen = []

        def custom(getter, name, *args, **kwargs):  # TF passes `getter` and `name` by keyword
            seen.append(
                (name, kwargs["trainable"], kwargs["synchronization"].name, kwargs["aggregation"].name)
            )
            return getter(name, *args, **kwargs)

        t = lib.make_template(
            "g", lambda: lib.get_variable("w", [1], initializer=lib.ones_initializer()), custom_getter_=custom
        )
        v, again = t(), t()
        return [seen, v is again, v.name], [v]

    names, _ = _same(tf1, build)
    assert names[0] == [("g/w", True, "AUTO", "NONE")] * 2


def test_the_enums_have_tf_values(tf1):
    for ours, theirs in (
        (tf.VariableSynchronization, tf1.VariableSynchronization),
        (tf.VariableAggregation, tf1.VariableAggregation),
    ):
        assert [(m.name, m.value) for m in ours] == [(m.name, m.value) for m in theirs]
    assert tf.VariableAggregation.ONLY_FIRST_TOWER is tf.VariableAggregation.ONLY_FIRST_REPLICA


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"synchronization": 7}, "Invalid variable synchronization mode: 7 for variable: None"),
        ({"aggregation": "x"}, "Invalid variable aggregation mode: x for variable: None"),
    ],
)
def test_bad_synchronization_or_aggregation_raises_tf_error(tf1, kwargs, message):
    for lib in (tf, tf1):
        with lib.Graph().as_default(), pytest.raises(ValueError, match=message):
            lib.Variable(1.0, **kwargs)


def test_init_scope_lifts_out_of_control_dependencies(tf1):
    def build(lib):
        with lib.variable_scope("s"), lib.control_dependencies([lib.no_op(name="dep")]):
            inside = lib.constant(1.0, name="inside")
            with lib.init_scope():
                lifted = lib.constant(2.0, name="lifted")
                scope = lib.get_default_graph().get_name_scope()
        deps = [[op.name for op in t.op.control_inputs] for t in (inside, lifted)]
        return [lifted.name, scope, deps], [lifted]

    names, _ = _same(tf1, build)
    assert names[2] == [["s/dep"], []]


def test_init_scope_leaves_a_cond_branch(tf1):
    def build(lib):
        made = []

        def branch():
            with lib.init_scope():
                made.append(lib.constant(4.0, name="lifted"))
            return lib.constant(1.0) + 1

        out = lib.cond(lib.constant(False), branch, lambda: lib.constant(0.0))
        lifted = made[0]
        return [
            lifted.name,
            [op.name for op in lifted.op.control_inputs],
            [i.name for i in lifted.op.inputs],
        ], [
            lifted,
            out,
        ]

    names, values = _same(tf1, build)
    assert names == ["cond/lifted:0", [], []] and values == [4.0, 0.0]


def test_init_scope_leaves_a_while_loop_body(graph):
    made = []

    def body(i):
        with tf.init_scope():
            made.append(tf.constant(3, name="hoisted"))
        return i + 1

    tf.while_loop(lambda i: i < 2, body, [tf.constant(0)])
    assert made[0].graph is graph


def test_op_scope_and_variable_op_scope_reorder_name_scope_arguments(tf1):
    def build(lib):
        c = lib.constant(1.0)
        with lib.name_scope("ns"):
            with lib.op_scope([c], "op", "default") as a:
                pass
            with lib.op_scope([c], None, "default") as b:
                pass
            with lib.variable_op_scope([c], None, "vdef") as vs:
                v = lib.get_variable("q", [1], initializer=lib.zeros_initializer())
                d = lib.identity(c, name="d")
        return [a, b, vs.name, vs.original_name_scope, v.name, d.name], [v]

    names, _ = _same(tf1, build)
    assert names == ["ns/op/", "ns/default/", "vdef", "ns/vdef/", "vdef/q:0", "ns/vdef/d:0"]


def test_collections_helpers(tf1):
    def build(lib):
        a = lib.Variable(1.0, name="a")
        with lib.variable_scope("m"):
            b = lib.get_variable("b", [2], initializer=lib.ones_initializer())
        lib.add_to_collections([lib.GraphKeys.MODEL_VARIABLES, "mine"], b)
        lib.add_to_collections("single", a)
        lists = [
            [v.name for v in lib.all_variables()],
            [v.name for v in lib.model_variables()],
            [v.name for v in lib.model_variables("x")],
            [v.name for v in lib.get_collection("mine")],
            [v.name for v in lib.get_collection("single")],
        ]
        return lists, [a, b]

    names, _ = _same(tf1, build)
    assert names[:3] == [["a:0", "m/b:0"], ["m/b:0"], []]


def test_no_regularizer_turns_a_scope_regularizer_off(tf1):
    def build(lib):
        with lib.variable_scope("r", regularizer=lambda w: lib.reduce_sum(w, name="l")):
            lib.get_variable("kept", [2], initializer=lib.ones_initializer())
            lib.get_variable("off", [2], initializer=lib.ones_initializer(), regularizer=lib.no_regularizer)
        losses = lib.get_collection(lib.GraphKeys.REGULARIZATION_LOSSES)
        return [[t.name for t in losses], lib.no_regularizer(3)], losses

    names, values = _same(tf1, build)
    assert names == [["r/kept/Regularizer/l:0"], None]
    assert values == [2.0]


@pytest.mark.parametrize(("shape", "slicing"), [([5, 3], [2, 1]), ([4, 6], [1, 3]), ([3], [3])])
def test_create_partitioned_variables_as_tf(tf1, shape, slicing):
    full = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)

    def build(lib):
        parts = lib.create_partitioned_variables(shape, slicing, full, name="pv")  # sliced per shard
        more = lib.create_partitioned_variables(shape, slicing, lib.zeros_initializer())
        with lib.variable_scope("outer"):
            again = lib.create_partitioned_variables(shape, slicing, lib.ones_initializer(), name="pv")
        shared = lib.create_partitioned_variables(
            shape, slicing, lib.zeros_initializer(), name="pv", reuse=True
        )
        names = [[v.name for v in p] for p in (parts, more, again)] + [[v.shape.as_list() for v in parts]]
        return [*names, all(a is b for a, b in zip(parts, shared))], parts

    _, values = _same(tf1, build)
    axis = int(np.argmax(slicing))
    np.testing.assert_array_equal(np.concatenate(values, axis=axis), full)


def test_create_partitioned_variables_bad_arguments(tf1):
    for lib in (tf, tf1):
        with lib.Graph().as_default():
            with pytest.raises(ValueError, match="must have the length"):
                lib.create_partitioned_variables([4, 2], [2], lib.zeros_initializer())
            with pytest.raises(ValueError, match="rank at least 1"):
                lib.create_partitioned_variables([], [], lib.zeros_initializer())
