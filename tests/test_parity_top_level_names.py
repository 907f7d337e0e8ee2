"""Top-level `tf.*` classes, dtypes, constants and variable/file helpers that nbdist had but no
test used (`tf.DType`, `tf.Tensor`, `tf.Operation`, `tf.VariableScope`, `tf.QueueBase`,
`tf.ReaderBase`, `tf.int8` as a placeholder's dtype, `tf.initialize_all_variables`, ...): each
used as a TF 1.x program uses it, with both libraries, and the results compared.
"""

import numpy as np
import pytest

import nbdist as tf


def _both(tf1):
    return pytest.param(tf, id="nbdist"), pytest.param(tf1, id="tf1")


def _each(tf1, check):
    """`check(lib)` under a new graph and session of each library; the two results."""
    out = []
    for lib in (tf, tf1):
        with lib.Graph().as_default(), lib.Session() as sess:
            out.append(check(lib, sess))
    return out


def test_version_constants_are_a_version_string_and_an_int(tf1):
    assert isinstance(tf.VERSION, str) and tf.__version__ == tf.VERSION
    assert isinstance(tf.GRAPH_DEF_VERSION, int) and isinstance(tf1.GRAPH_DEF_VERSION, int)
    assert tf.GRAPH_DEF_VERSION >= 0


@pytest.mark.parametrize("name", ["int8", "uint32", "uint64", "complex64", "complex128"])
def test_dtypes_feed_placeholders_and_fetch_the_same_values(tf1, name):
    data = {
        "int8": np.array([-128, -1, 0, 127], np.int8),
        "uint32": np.array([0, 1, 2**32 - 1], np.uint32),
        "uint64": np.array([0, 2**64 - 1], np.uint64),
        "complex64": np.array([1 + 2j, -0.5j], np.complex64),
        "complex128": np.array([3 - 4j, 1e-300 + 1e300j]),
    }[name]

    def run(lib, sess):
        dtype = {
            "int8": lib.int8,
            "uint32": lib.uint32,
            "uint64": lib.uint64,
            "complex64": lib.complex64,
            "complex128": lib.complex128,
        }[name]
        p = lib.placeholder(dtype, [None], name="p")
        out = lib.identity(p)
        assert out.dtype == dtype and p.dtype.name == name and isinstance(dtype, lib.DType)
        reversed_ = lib.reverse_v2(p, [0])
        return sess.run([out, reversed_], {p: data})

    ours, theirs = _each(tf1, run)
    for a, b in zip(ours, theirs, strict=True):
        assert a.dtype == b.dtype == data.dtype
        np.testing.assert_array_equal(a, b)


def test_dtype_attributes_match_tensorflow(tf1):
    names = ["float16", "float32", "float64", "int8", "uint8", "int32", "uint32", "uint64", "int64"]
    names += ["complex64", "complex128", "bool", "string"]
    for name in names:
        ours, theirs = tf.as_dtype(name), tf1.as_dtype(name)
        assert isinstance(ours, tf.DType) and isinstance(theirs, tf1.DType)
        for attr in ("name", "is_floating", "is_integer", "is_complex", "is_unsigned", "is_bool", "size"):
            assert getattr(ours, attr) == getattr(theirs, attr), (name, attr)
        assert ours.as_numpy_dtype == theirs.as_numpy_dtype or name == "string", name
        assert ours.as_datatype_enum == theirs.as_datatype_enum, name
        assert ours.real_dtype.name == theirs.real_dtype.name and ours.base_dtype == ours
        assert ours.is_compatible_with(name) and not ours.is_compatible_with(tf.int16)
        if ours.is_floating or ours.is_integer:
            assert (ours.min, ours.max) == (theirs.min, theirs.max), name
        else:
            for lib_dtype in (ours, theirs):
                with pytest.raises(TypeError, match="Cannot find minimum"):
                    lib_dtype.min  # noqa: B018 - the property raises


def test_tensor_and_operation_attributes_match_tensorflow(tf1):
    def run(lib, sess):
        a = lib.constant([[1.0, 2.0]], name="a")
        b = lib.placeholder(lib.float32, [None, 2], name="b")
        with lib.control_dependencies([a.op]):
            c = lib.add(a, b, name="c")
        d = lib.square(c, name="d")
        assert isinstance(c, lib.Tensor) and isinstance(c.op, lib.Operation)
        assert lib.get_default_graph().get_operation_by_name("c") is c.op
        op = c.op
        return (
            c.name,
            c.value_index,
            c.dtype.name,
            c.get_shape().as_list(),
            c.shape.as_list(),
            c.graph is lib.get_default_graph(),
            [o.name for o in c.consumers()],
            op.name,
            op.type in ("Add", "AddV2"),
            [t.name for t in op.inputs],
            [t.name for t in op.outputs],
            [o.name for o in op.control_inputs],
            b.op.get_attr("dtype") == lib.float32,
            d.op.outputs[0] is d,
            sess.run(d, {b: [[1.0, 1.0]]}).tolist(),
            op.node_def.name if hasattr(op.node_def, "name") else op.node_def["name"],
        )

    ours, theirs = _each(tf1, run)
    assert ours == theirs


def test_variable_scope_objects_match_tensorflow(tf1):
    def run(lib, sess):
        with lib.variable_scope("outer", initializer=lib.constant_initializer(2.0)) as scope:
            assert isinstance(scope, lib.VariableScope)
            v = lib.get_variable("v", [2])
        with lib.variable_scope(scope, reuse=True) as again:
            same = lib.get_variable("v", [2])
            reuse = again.reuse
        made = lib.VariableScope(reuse=False, name="made", dtype=lib.float64)
        with lib.variable_scope(made):
            w = lib.get_variable("w", [1], initializer=lib.zeros_initializer())
        sess.run(lib.global_variables_initializer())
        return (
            scope.name,
            scope.original_name_scope,
            v.name,
            same is v,
            reuse,
            made.name,
            made.reuse,
            w.name,
            w.dtype.base_dtype.name,
            sess.run(v).tolist(),
            lib.get_variable_scope().name,
        )

    ours, theirs = _each(tf1, run)
    assert ours == theirs


def test_queue_reader_and_accumulator_bases_match_tensorflow(tf1, tmp_path):
    (tmp_path / "a.txt").write_bytes(b"first")

    def run(lib, sess):
        q = lib.FIFOQueue(3, [lib.int32, lib.float32], shapes=[[], [2]], names=["i", "x"], name="q")
        assert isinstance(q, lib.QueueBase)
        enq = q.enqueue({"i": 4, "x": [1.0, 2.0]})
        sess.run(enq)
        got = sess.run(q.dequeue())
        files = lib.train.string_input_producer([str(tmp_path / "a.txt")], shuffle=False)
        reader = lib.WholeFileReader(name="reader")
        assert isinstance(reader, lib.ReaderBase) and isinstance(files, lib.QueueBase)
        key, value = reader.read(files)
        coord = lib.train.Coordinator()
        threads = lib.train.start_queue_runners(sess, coord=coord)
        read = sess.run([key, value])
        read.append(sess.run(reader.num_records_produced()))
        coord.request_stop()
        coord.join(threads)
        acc = lib.ConditionalAccumulator(lib.float32, shape=[2], name="acc")
        assert isinstance(acc, lib.ConditionalAccumulatorBase)
        sess.run([acc.apply_grad([1.0, 3.0], local_step=0), acc.apply_grad([3.0, 5.0], local_step=0)])
        count = sess.run(acc.num_accumulated())
        mean = sess.run(acc.take_grad(1))
        return (
            [d.name for d in q.dtypes],
            [s.as_list() for s in q.shapes],
            q.names,
            q.name,
            got["i"].tolist(),
            got["x"].tolist(),
            read[0].endswith(b"a.txt"),
            read[1:],
            acc.dtype.name,
            acc.name,
            count.tolist(),
            mean.tolist(),
        )

    ours, theirs = _each(tf1, run)
    assert ours == theirs


def test_sparse_tensor_value_is_fetched_and_fed_as_in_tensorflow(tf1):
    def run(lib, sess):
        sp = lib.SparseTensor([[0, 1], [2, 0]], [1.5, -2.0], [3, 2])
        fetched = sess.run(sp)
        assert isinstance(fetched, lib.SparseTensorValue)
        fed = lib.SparseTensor(
            lib.placeholder(lib.int64, [None, 2]),
            lib.placeholder(lib.float32, [None]),
            lib.placeholder(lib.int64, [2]),
        )
        value = lib.SparseTensorValue(indices=[[1, 1]], values=[7.0], dense_shape=[2, 3])
        dense = sess.run(lib.sparse_tensor_to_dense(fed), {fed: value})
        return [f.tolist() for f in fetched], dense.tolist(), value._fields

    ours, theirs = _each(tf1, run)
    assert ours == theirs


def test_var_len_feature_parses_as_in_tensorflow(tf1):
    def example(lib, ints):
        feature = lib.train.Feature(int64_list=lib.train.Int64List(value=ints))
        return lib.train.Example(features=lib.train.Features(feature={"ids": feature})).SerializeToString()

    def run(lib, sess):
        spec = lib.VarLenFeature(lib.int64)
        assert spec.dtype == lib.int64
        parsed = lib.parse_example(
            [example(lib, [3, 1, 4]), example(lib, []), example(lib, [5])], {"ids": spec}
        )
        return [v.tolist() for v in sess.run(parsed["ids"])]

    ours, theirs = _each(tf1, run)
    assert ours == theirs


def test_initializers_of_all_variables_match_tensorflow(tf1):
    def run(lib, sess):
        a = lib.Variable([1.0, 2.0], name="a")
        b = lib.Variable(3, name="b")
        local = lib.Variable([5], name="local", collections=[lib.GraphKeys.LOCAL_VARIABLES])
        before = sess.run([lib.is_variable_initialized(a), lib.is_variable_initialized(local)])
        sess.run(lib.initialize_variables([b]))
        after_b = sess.run([lib.is_variable_initialized(a), lib.is_variable_initialized(b)])
        sess.run(lib.initialize_all_variables())
        sess.run(lib.initialize_local_variables())
        sess.run(lib.initialize_all_tables())
        return before, after_b, sess.run(lib.is_variable_initialized(local)), sess.run([a, b, local])

    ours, theirs = _each(tf1, run)
    assert [np.asarray(x).tolist() for x in ours[3]] == [np.asarray(x).tolist() for x in theirs[3]]
    assert ours[:3] == theirs[:3]


def test_count_up_to_counts_and_stops_as_tensorflow(tf1):
    def run(lib, sess):
        v = lib.Variable(0, name="counter")
        up = lib.count_up_to(v, 2)
        assert up.dtype == lib.int32 and up.shape.as_list() == []
        sess.run(v.initializer)
        seen = [sess.run(up), sess.run(up)]
        with pytest.raises(lib.errors.OutOfRangeError, match="2"):
            sess.run(up)
        return seen, sess.run(v)

    ours, theirs = _each(tf1, run)
    assert ours == theirs


@pytest.mark.parametrize("which", ["uniform", "normal"])
def test_glorot_initializers_draw_with_tensorflows_scale(tf1, which):
    fan_in, fan_out = 60, 40
    limit = np.sqrt(6.0 / (fan_in + fan_out))

    def run(lib, sess):
        make = lib.glorot_uniform_initializer if which == "uniform" else lib.glorot_normal_initializer
        w = lib.get_variable("w", [fan_in, fan_out], initializer=make(seed=3))
        w64 = lib.get_variable(
            "w64", [fan_in, fan_out], initializer=make(seed=4, dtype=lib.float64), dtype=lib.float64
        )
        sess.run(lib.global_variables_initializer())
        return sess.run(w), sess.run(w64)

    for draw, draw64 in _each(tf1, run):
        assert draw.dtype == np.float32 and draw64.dtype == np.float64 and draw.shape == (fan_in, fan_out)
        if which == "uniform":
            assert np.abs(draw).max() <= limit and abs(draw.std() - limit / np.sqrt(3)) < 0.01
        else:  # a truncated normal of the glorot variance 2 / (fan_in + fan_out)
            assert np.abs(draw).max() <= 2 * np.sqrt(2.0 / (fan_in + fan_out)) / 0.87962566103423978 + 1e-6
            assert abs(draw.std() - np.sqrt(2.0 / (fan_in + fan_out))) < 0.01


def test_random_shuffle_permutes_the_first_dimension_as_tensorflow(tf1):
    rows = np.arange(12, dtype=np.float32).reshape(6, 2)

    def run(lib, sess):
        lib.set_random_seed(7)
        out = lib.random_shuffle(lib.constant(rows), seed=2)
        empty = lib.random_shuffle(lib.zeros([0, 3], lib.int32))
        assert out.shape.as_list() == [6, 2] and out.dtype == lib.float32
        return sess.run([out, empty])

    for shuffled, empty in _each(tf1, run):
        assert sorted(map(tuple, shuffled.tolist())) == list(map(tuple, rows.tolist()))
        assert empty.shape == (0, 3) and empty.dtype == np.int32


def test_write_file_read_file_and_matching_files_match_tensorflow(tf1, tmp_path):
    def run(lib, sess):
        folder = tmp_path / lib.__name__
        folder.mkdir()
        sess.run(lib.write_file(str(folder / "one.bin"), lib.constant(b"\x00payload\xff")))
        sess.run(lib.write_file(str(folder / "two.bin"), b""))
        found = sess.run(lib.matching_files(str(folder / "*.bin")))
        none = sess.run(lib.matching_files([str(folder / "*.txt")]))
        read = sess.run([lib.read_file(str(folder / "one.bin")), lib.read_file(str(folder / "two.bin"))])
        with pytest.raises(lib.errors.NotFoundError):
            sess.run(lib.read_file(str(folder / "missing.bin")))
        return [f.rpartition(b"/")[2] for f in sorted(found.tolist())], none.tolist(), read

    ours, theirs = _each(tf1, run)
    assert ours == theirs
