"""`tf.train.export_meta_graph`, `tf.train.import_meta_graph`: a graph with its collections and
saver, written to a ``.meta`` file and read back — TF 1.x's "restore a trained model from
.meta + checkpoint":

    saver.save(sess, "/tmp/run/model.ckpt", global_step=2)      # also writes model.ckpt-2.meta
    tf.reset_default_graph()
    saver = tf.train.import_meta_graph("/tmp/run/model.ckpt-2.meta")
    with tf.Session() as sess:
        saver.restore(sess, "/tmp/run/model.ckpt-2")
        sess.run("logits:0", {"x:0": batch})

A meta graph is nbdist's plain data (`MetaGraphDef`): its GraphDef (`nbdist.graph.graph_def`),
its collections (TF's ``CollectionDef`` kinds: node names, bytes, int64s, floats, variables
and queue runners by their ops' names) and its saver's `SaverDef`. The file is
``b"NBDMETA1"`` then that data in msgpack, arrays as (dtype, shape, bytes): decoding yields only
plain data and numpy arrays of number/bool dtypes or strings, it never runs code (nothing is
ever unpickled).

A ``.meta`` file that real TensorFlow wrote (a binary ``MetaGraphDef`` protobuf): its GraphDef
is read through `nbdist.export.from_tf` when every op is one nbdist has and the graph holds no
TF saver (TF's checkpoints are not nbdist's); otherwise the error says what is out of scope.
"""

import contextlib
import logging
import os
import types

import msgpack
import numpy as np

from nbdist.graph import graph_def as _graph_def
from nbdist.graph.graph import Operation, Tensor, get_default_graph
from nbdist.ops import state_ops
from nbdist.train.queue_runner import QueueRunner

_log = logging.getLogger("nbdist")
MAGIC = b"NBDMETA1"
_EXT_ARRAY, _EXT_STRINGS, _EXT_TUPLE = 1, 2, 3
_NUMERIC_KINDS = frozenset("biufc")
SAVER_DEF_FIELDS = (
    "filename_tensor_name",
    "save_tensor_name",
    "restore_op_name",
    "max_to_keep",
    "sharded",
    "keep_checkpoint_every_n_hours",
    "version",
)


class MetaGraphDef:
    """TF's ``MetaGraphDef`` as plain data.

    Attributes:
        meta_info_def: dict: ``meta_graph_version``, ``tags``, ``tensorflow_version``,
            ``tensorflow_git_version`` (nbdist's).
        graph_def: the GraphDef dict (`Graph.as_graph_def()`).
        saver_def: a `SaverDef` (read back: an object with its fields), or None.
        collection_def: ``{key: {kind: [values]}}``, kind one of ``node_list``, ``bytes_list``,
            ``int64_list``, ``float_list``, ``variable_list`` (VariableDef dicts),
            ``queue_runner_list`` (QueueRunnerDef dicts), ``saver_list`` (SaverDef dicts).
    """

    def __init__(self, meta_info_def=None, graph_def=None, saver_def=None, collection_def=None):
        self.meta_info_def = dict(meta_info_def or {})
        self.graph_def = graph_def if graph_def is not None else {"versions": {"producer": 1}, "node": []}
        self.saver_def = saver_def
        self.collection_def = dict(collection_def or {})

    def to_dict(self):
        saver = self.saver_def
        return {
            "meta_info_def": self.meta_info_def,
            "graph_def": self.graph_def,
            "saver_def": None if saver is None else {f: getattr(saver, f) for f in SAVER_DEF_FIELDS},
            "collection_def": self.collection_def,
        }

    @classmethod
    def from_dict(cls, d):
        if not isinstance(d, dict) or not isinstance(d.get("graph_def"), dict):
            raise _graph_def.MalformedGraphDefError(
                "malformed meta graph: a map with a 'graph_def' map is needed"
            )
        saver = d.get("saver_def")
        return cls(
            d.get("meta_info_def"),
            d["graph_def"],
            None if saver is None else types.SimpleNamespace(**{f: saver.get(f) for f in SAVER_DEF_FIELDS}),
            d.get("collection_def"),
        )

    def SerializeToString(self):  # noqa: N802 - protobuf's method name
        """The bytes of nbdist's ``.meta`` file."""
        return MAGIC + msgpack.packb(self.to_dict(), default=_pack_ext, use_bin_type=True, strict_types=True)

    @classmethod
    def FromString(cls, data):  # noqa: N802 - protobuf's method name
        if not data.startswith(MAGIC):
            raise _graph_def.MalformedGraphDefError("not an nbdist meta graph (no NBDMETA1 header)")
        try:
            d = msgpack.unpackb(data[len(MAGIC) :], ext_hook=_unpack_ext, raw=False, strict_map_key=False)
        except (ValueError, TypeError, msgpack.UnpackException) as e:
            raise _graph_def.MalformedGraphDefError(f"malformed nbdist meta graph: {e}") from None
        return cls.from_dict(d)

    def __repr__(self):
        return (
            f"MetaGraphDef({len(self.graph_def.get('node', []))} nodes, "
            f"collections {sorted(self.collection_def)}, saver={self.saver_def is not None})"
        )


# -- the file's encoding: plain data, arrays by value ------------------------------------------------
def _pack_ext(obj):
    if isinstance(obj, np.ndarray):
        if obj.dtype.kind in _NUMERIC_KINDS:
            data = np.ascontiguousarray(obj, obj.dtype.newbyteorder("<")).tobytes()
            return msgpack.ExtType(
                _EXT_ARRAY, msgpack.packb([obj.dtype.newbyteorder("<").str, list(obj.shape), data])
            )
        flat = [v if isinstance(v, (bytes, str)) else bytes(v) for v in obj.ravel().tolist()]
        return msgpack.ExtType(_EXT_STRINGS, msgpack.packb([list(obj.shape), flat], use_bin_type=True))
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, tuple):
        return msgpack.ExtType(
            _EXT_TUPLE, msgpack.packb(list(obj), default=_pack_ext, use_bin_type=True, strict_types=True)
        )
    if isinstance(obj, int):  # an int subclass (a shape's KnownDim): its int
        return int(obj)
    raise TypeError(
        f"a meta graph holds plain data and arrays; cannot write {type(obj).__name__}: {obj!r:.80}"
    )


def _unpack_ext(code, data):
    if code == _EXT_ARRAY:
        dtype, shape, raw = msgpack.unpackb(data, raw=False)
        dtype = np.dtype(dtype)
        if dtype.kind not in _NUMERIC_KINDS:
            raise ValueError(f"array of dtype {dtype} where a number or bool array is expected")
        return np.frombuffer(raw, dtype).reshape(shape).astype(dtype.newbyteorder("="))
    if code == _EXT_STRINGS:
        shape, flat = msgpack.unpackb(data, raw=False)
        array = np.empty(len(flat), object)
        array[:] = flat
        return array.reshape(shape)
    if code == _EXT_TUPLE:
        return tuple(msgpack.unpackb(data, ext_hook=_unpack_ext, raw=False, strict_map_key=False))
    raise ValueError(f"unknown extension {code}")


# -- collections ---------------------------------------------------------------------------------
def _collection_def(items, scope):
    """``(kind, values)`` of one collection's items (those under `scope`, the scope removed), or
    None when TF could not write them either."""
    if all(isinstance(i, (Tensor, Operation)) for i in items):
        return "node_list", [_strip_scope(i.name, scope) for i in items if _in_scope(i.name, scope)]
    for kind, cls in (("variable_list", state_ops.Variable), ("queue_runner_list", QueueRunner)):
        if all(isinstance(i, cls) for i in items):
            return kind, [p for p in (i.to_proto(scope or None) for i in items) if p is not None]
    if all(hasattr(i, "as_saver_def") for i in items):  # Savers
        defs = [i.as_saver_def() for i in items]
        return "saver_list", [_saver_def_dict(d, scope) for d in defs if d is not None]
    if all(isinstance(i, (bytes, str)) for i in items):
        return "bytes_list", [i.encode() if isinstance(i, str) else i for i in items]
    if all(isinstance(i, (int, np.integer)) and not isinstance(i, bool) for i in items):
        return "int64_list", [int(i) for i in items]
    if all(isinstance(i, (float, np.floating)) for i in items):
        return "float_list", [float(i) for i in items]
    return None


def _saver_def_dict(saver_def, scope):
    """A SaverDef's fields as a dict, its names without `scope` (as TF writes them)."""
    fields = {f: getattr(saver_def, f) for f in SAVER_DEF_FIELDS}
    for f in ("filename_tensor_name", "save_tensor_name", "restore_op_name"):
        fields[f] = _strip_scope(fields[f], scope) if _in_scope(fields[f], scope) else fields[f]
    return fields


def _in_scope(name, scope):
    bare = name.lstrip("^")
    return not scope or bare.startswith(scope)


def _strip_scope(name, scope):
    if not scope:
        return name
    caret = "^" if name.startswith("^") else ""
    return caret + name.lstrip("^")[len(scope) :]


def _scoped_graph_def(graph_def, scope, clear_devices):
    nodes = []
    for node in graph_def["node"]:
        if not _in_scope(node["name"], scope):
            continue
        outside = [i for i in node["input"] if not _in_scope(i, scope)]
        if outside:
            raise ValueError(
                f"node {node['name']!r} has inputs outside export_scope {scope[:-1]!r}: {outside}"
            )
        node = dict(node, name=_strip_scope(node["name"], scope))
        node["input"] = [_strip_scope(i, scope) for i in node["input"]]
        if clear_devices:
            node["device"] = ""
        nodes.append(node)
    return dict(graph_def, node=nodes)


def export_meta_graph(
    filename=None,
    meta_info_def=None,
    graph_def=None,
    saver_def=None,
    collection_list=None,
    as_text=False,
    graph=None,
    export_scope=None,
    clear_devices=False,
    clear_extraneous_savers=False,
    strip_default_attrs=False,
    save_debug_info=False,
    **kwargs,
):
    """`tf.train.export_meta_graph`: the graph, its collections and a saver as a `MetaGraphDef`.

    Args:
        filename: where to write it (nbdist's ``.meta`` format; see the module docstring);
            None writes nothing.
        meta_info_def: a dict merged into the meta info (``tags``, ...).
        graph_def: a GraphDef dict to write instead of `graph`'s.
        saver_def: a `SaverDef` to write (`Saver.export_meta_graph` gives its own).
        collection_list: the collection keys to write (default every key). A collection whose
            items are not graph elements, variables, queue runners, strings or numbers is left
            out with a warning, as TF does.
        as_text: accepted; nbdist's file is its binary format either way.
        graph: the graph (default: the default graph).
        export_scope: write only the nodes under this name scope, the scope removed.
        clear_devices: write no devices.

    Returns:
        The `MetaGraphDef`.

    Raises:
        ValueError: a node under `export_scope` takes an input from outside it.
    """
    graph = graph or get_default_graph()
    scope = f"{export_scope.rstrip('/')}/" if export_scope else ""
    graph_def = _scoped_graph_def(graph_def or graph.as_graph_def(), scope, clear_devices)
    info = {
        "meta_graph_version": "",
        "tags": [],
        "tensorflow_version": "nbdist",
        "tensorflow_git_version": "",
    }
    info.update(meta_info_def or {})
    if saver_def is not None and scope:  # its names without the scope, as TF writes them
        saver_def = types.SimpleNamespace(**_saver_def_dict(saver_def, scope))
    meta = MetaGraphDef(info, graph_def, saver_def)
    for key in graph.get_all_collection_keys() if collection_list is None else collection_list:
        items = graph.get_collection(key)
        if not items:
            continue
        kind = _collection_def(items, scope)
        if kind is None:
            level = logging.INFO if str(key).startswith("nbdist_") else logging.WARNING  # nbdist's own
            _log.log(level, "Issue encountered when serializing %s: items of this type are not written.", key)
            continue
        if kind[1]:
            meta.collection_def[str(key)] = {kind[0]: kind[1]}
    if filename:
        _write_atomically(filename, meta.SerializeToString())
    return meta


def _write_atomically(filename, data):
    parent = os.path.dirname(filename)
    if parent:
        os.makedirs(parent, exist_ok=True)
    tmp = f"{filename}.tmp{os.getpid()}"
    try:
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, filename)
    except OSError:
        with contextlib.suppress(OSError):
            os.remove(tmp)
        raise


def read_meta_graph_file(filename):
    """The `MetaGraphDef` of a ``.meta`` file nbdist wrote, or of a binary ``MetaGraphDef`` that
    real TensorFlow wrote (see the module docstring).

    Raises:
        OSError: the file cannot be read.
        ValueError: a TensorFlow meta graph nbdist cannot read (saying why), or neither format.
    """
    with open(filename, "rb") as f:
        data = f.read()
    if data.startswith(MAGIC):
        return MetaGraphDef.FromString(data)
    from nbdist.train import meta_graph_tf  # noqa: PLC0415 - only for TensorFlow's files

    return MetaGraphDef.from_dict(meta_graph_tf.meta_graph_of_tf_bytes(data, filename))


def import_graph_and_collections(
    meta,
    clear_devices=False,
    import_scope=None,
    input_map=None,
    restore_collections_predicate=None,
    saver_of_def=None,
):
    """Adds `meta`'s ops (under `import_scope`, `input_map` replacing inputs as in
    `tf.import_graph_def`) and collections (those `restore_collections_predicate` keeps) to the
    default graph; returns ``{name: Variable}`` of the variables its collections name.
    `saver_of_def(fields)` makes the `Saver` of a ``saver_list`` item (its names prefixed)."""
    graph = get_default_graph()
    prefix = f"{import_scope.rstrip('/')}/" if import_scope else ""
    graph_def = _scoped_graph_def(meta.graph_def, "", clear_devices)
    _graph_def.import_graph_def(graph_def, input_map=input_map, name=prefix.rstrip("/"))
    variables = {}
    for key, kinds in meta.collection_def.items():
        if restore_collections_predicate is not None and not restore_collections_predicate(key):
            continue
        for kind, values in kinds.items():
            for value in values:
                if kind == "saver_list":
                    if saver_of_def is not None:
                        graph.add_to_collection(key, saver_of_def(_prefixed_saver_def(value, prefix)))
                    continue
                graph.add_to_collection(key, _collection_item(graph, kind, value, prefix, variables))
    return variables


def _prefixed_saver_def(fields, prefix):
    fields = dict(fields)
    for f in ("filename_tensor_name", "save_tensor_name", "restore_op_name"):
        fields[f] = prefix + fields[f]
    return fields


def _collection_item(graph, kind, value, prefix, variables):
    if kind == "node_list":
        return graph.as_graph_element(prefix + value)
    if kind == "variable_list":
        name = value["variable_name"]
        if name not in variables:
            variables[name] = state_ops.Variable.from_proto(value, import_scope=prefix.rstrip("/") or None)
        return variables[name]
    if kind == "queue_runner_list":
        return QueueRunner.from_proto(value, import_scope=prefix.rstrip("/") or None)
    if kind == "bytes_list":
        return value
    if kind == "int64_list":
        return int(value)
    if kind == "float_list":
        return float(value)
    raise _graph_def.MalformedGraphDefError(f"malformed meta graph: unknown collection kind {kind!r}")
