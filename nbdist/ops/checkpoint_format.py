"""nbdist's checkpoint bytes, in TF's V2 file layout (``prefix.index`` + ``prefix.data-*``).

A checkpoint with prefix ``P`` written from ``n`` devices is::

    P.data-00000-of-0000n   raw tensor bytes of shard 0 (one per device), back to back
    ...
    P.index                 b"NBDCKPT1" + msgpack map (below)

The index map is ``{"format": 1, "num_shards": n, "tensors": {name: entry}}`` with
``entry = {"shard": k, "offset": bytes, "nbytes": bytes, "dtype": "float32",
"shape": [..], "crc32": int}``. Numeric tensors are stored as C-order little-endian
bytes of their dtype, each at a 64-byte aligned offset; string tensors as one msgpack
list of their flattened items. Nothing is ever pickled. Every read checks the magic,
the bounds and the CRC-32 of each tensor, so a damaged file is an error, never garbage.

Writing is two-phase, so a crash never leaves a readable half-checkpoint under ``P``:
each device writes its shard to ``P.data-0000k-of-0000n.tmp-<token>`` and returns its
index entries (`write_shard`); one merge (`merge_shards`) then renames the data files
to their final names and writes ``P.index`` under a temporary name and renames it last.
A ``P.index`` therefore exists only when all of ``P``'s data files are complete.

A failed write deletes what it wrote (a half-written ``.tmp`` shard on a full disk kept the
disk full). A task killed mid-save cannot, so each save also deletes the temporary files of
earlier saves of its basename (``model.ckpt-*.data-*.tmp-*`` beside ``model.ckpt-200``) that no
save in progress owns: `write_shard` those of other steps, `merge_shards` all others. This
assumes what TF's ``checkpoint`` state file assumes too: one save of a basename at a time.
"""

import contextlib
import os
import re
import threading
import time
import uuid
import zlib

import msgpack
import numpy as np

MAGIC = b"NBDCKPT1"
FORMAT_VERSION = 1
_ALIGN = 64
# Test-only pause point: when set to a path, `merge_shards` creates that file after the data
# shards are written and before any rename, then sleeps (bounded), so a test can kill the saving
# process exactly there and check that the previous checkpoint still restores.
PAUSE_ENV = "NBDIST_TEST_CKPT_PAUSE_FILE"
_PAUSE_S = 60.0


def data_path(prefix, shard, num_shards):
    """TF's data file name: ``prefix.data-0000k-of-0000n``."""
    return f"{prefix}.data-{shard:05d}-of-{num_shards:05d}"


def index_path(prefix):
    return f"{prefix}.index"


def _fsync_write(path, chunks):
    """Writes `chunks` to `path` and syncs it; on any failure deletes `path` and re-raises."""
    try:
        with open(path, "wb") as f:
            for chunk in chunks:
                f.write(chunk)
            f.flush()
            os.fsync(f.fileno())
    except BaseException:
        _remove_quietly(path)
        raise


def _remove_quietly(path):
    with contextlib.suppress(OSError):  # gone already, or not ours to delete: nothing to undo
        os.remove(path)


_writing = set()  # absolute paths of the temporary data files this process is writing right now
_writing_lock = threading.Lock()
_TMP_SUFFIX = r"\.(?:data-\d{5}-of-\d{5}|index)\.tmp-[0-9a-f]{12}"


def remove_stale_tmp(prefix, keep_own=False):
    """Deletes temporary files left by earlier saves of `prefix`'s basename; returns their paths.

    ``dir/model.ckpt-200`` covers ``dir/model.ckpt-<step>.data-*.tmp-*`` and ``.index.tmp-*``
    (and ``dir/model.ckpt.…`` of saves without a step). Files this process is writing are
    kept, and with `keep_own` those of `prefix` itself (other shards of this save may still be
    being written on other tasks). Best effort: a file that cannot be deleted is left.
    """
    directory, name = os.path.split(prefix)
    base = re.sub(r"-\d+$", "", name)
    pattern = re.compile(re.escape(base) + r"(?:-\d+)?" + _TMP_SUFFIX)
    own = re.compile(re.escape(name) + _TMP_SUFFIX)
    try:
        names = os.listdir(directory or ".")
    except OSError:
        return []
    removed = []
    for candidate in names:
        if not pattern.fullmatch(candidate) or (keep_own and own.fullmatch(candidate)):
            continue
        path = os.path.join(directory, candidate)
        with _writing_lock:
            if os.path.abspath(path) in _writing:
                continue
        _remove_quietly(path)
        removed.append(path)
    return removed


def _tensor_bytes(value):
    array = np.asarray(value)
    if array.dtype == object or array.dtype.kind in "SU":
        items = [v.encode() if isinstance(v, str) else bytes(v) for v in array.reshape(-1)]
        return "string", msgpack.packb(items, use_bin_type=True)
    return array.dtype.name, np.ascontiguousarray(array).astype(array.dtype.newbyteorder("<")).tobytes()


def write_shard(prefix, shard, num_shards, names, values):
    """Writes one device's tensors to a temporary data file.

    Args:
        prefix: the checkpoint prefix (``dir/model.ckpt-100``); its directory must exist.
        shard, num_shards: this file's number and the total (one shard per device).
        names: checkpoint keys (variable op names), one per value.
        values: numpy arrays.

    Returns:
        A msgpack map ``{"tmp": path, "final": path, "tensors": {name: entry}}`` for
        `merge_shards`: small metadata only, the tensor bytes stay in the file.

    Raises:
        OSError: the write failed (a full disk: ENOSPC); the temporary file is deleted.
    """
    final = data_path(prefix, shard, num_shards)
    tmp = f"{final}.tmp-{uuid.uuid4().hex[:12]}"
    entries, chunks, offset = {}, [], 0
    for name, value in zip(names, values):
        dtype, data = _tensor_bytes(value)
        pad = (-offset) % _ALIGN
        if pad:
            chunks.append(b"\0" * pad)
            offset += pad
        entries[name] = {
            "shard": shard,
            "offset": offset,
            "nbytes": len(data),
            "dtype": dtype,
            "shape": list(np.shape(value)),
            "crc32": zlib.crc32(data),
        }
        chunks.append(data)
        offset += len(data)
    with _writing_lock:
        _writing.add(os.path.abspath(tmp))
    try:
        remove_stale_tmp(prefix, keep_own=True)  # frees what killed or failed saves left first
        _fsync_write(tmp, chunks)
    finally:
        with _writing_lock:
            _writing.discard(os.path.abspath(tmp))
    return msgpack.packb({"tmp": tmp, "final": final, "tensors": entries}, use_bin_type=True)


def _pause_for_tests():
    marker = os.environ.get(PAUSE_ENV)
    if marker:
        with open(marker, "w") as f:
            f.write(str(os.getpid()))
        time.sleep(_PAUSE_S)


def merge_shards(prefix, shard_infos):
    """Commits a checkpoint: renames the shards' data files, then writes ``prefix.index``.

    Args:
        prefix: the checkpoint prefix.
        shard_infos: the `write_shard` results of every shard (msgpack bytes).

    Raises:
        ValueError: if two shards hold the same key or the shard count is inconsistent.
        OSError: a write or rename failed; this save's temporary files are deleted.
    """
    infos = [msgpack.unpackb(bytes(b), raw=False) for b in shard_infos]
    tensors = {}
    for info in infos:
        for name, entry in info["tensors"].items():
            if name in tensors:
                raise ValueError(f"checkpoint key {name!r} is written by two shards of {prefix!r}")
            tensors[name] = entry
    _pause_for_tests()
    body = msgpack.packb(
        {"format": FORMAT_VERSION, "num_shards": len(infos), "tensors": tensors}, use_bin_type=True
    )
    tmp = f"{index_path(prefix)}.tmp-{uuid.uuid4().hex[:12]}"
    try:
        _fsync_write(tmp, [MAGIC, body])  # the index first: the renames below need no space
        for info in infos:
            os.replace(info["tmp"], info["final"])
        os.replace(tmp, index_path(prefix))
    except BaseException:
        for path in [tmp, *(info["tmp"] for info in infos)]:
            _remove_quietly(path)
        raise
    remove_stale_tmp(prefix)


def read_index(prefix):
    """The index map of the checkpoint at `prefix`.

    Raises:
        FileNotFoundError: no ``prefix.index`` (naming it).
        ValueError: the file is not an nbdist checkpoint index, or is damaged.
    """
    path = index_path(prefix)
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        raise FileNotFoundError(
            f"no checkpoint at {prefix!r}: {path!r} does not exist "
            "(tf.train.latest_checkpoint(dir) names the newest complete one)"
        ) from None
    if not raw.startswith(MAGIC):
        raise ValueError(f"{path!r} is not an nbdist checkpoint index (expected magic {MAGIC!r})")
    try:
        index = msgpack.unpackb(raw[len(MAGIC) :], raw=False)
    except (ValueError, msgpack.UnpackException) as e:
        raise ValueError(f"{path!r} is damaged: {e}") from None
    if not isinstance(index, dict) or index.get("format") != FORMAT_VERSION:
        raise ValueError(f"{path!r} has an unsupported format {index.get('format')!r}")
    return index


def read_tensors(prefix, names, index=None):
    """Reads `names` from the checkpoint at `prefix`; returns numpy arrays in order.

    Raises:
        KeyError: a name that the checkpoint does not hold (listing what it holds).
        ValueError: a truncated or corrupted tensor (bounds or CRC-32 mismatch).
    """
    index = index or read_index(prefix)
    tensors = index["tensors"]
    out, files = [], {}
    try:
        for name in names:
            entry = tensors.get(name)
            if entry is None:
                held = ", ".join(sorted(tensors)[:10])
                raise KeyError(f"Key {name} not found in checkpoint {prefix!r} (it holds: {held})")
            path = data_path(prefix, entry["shard"], index["num_shards"])
            f = files.get(path) or files.setdefault(path, open(path, "rb"))  # noqa: SIM115 - closed below
            f.seek(entry["offset"])
            data = f.read(entry["nbytes"])
            if len(data) != entry["nbytes"] or zlib.crc32(data) != entry["crc32"]:
                raise ValueError(f"checkpoint data for {name!r} in {path!r} is truncated or corrupted")
            out.append(_decode(entry, data))
    finally:
        for f in files.values():
            f.close()
    return out


def _decode(entry, data):
    shape = tuple(entry["shape"])
    if entry["dtype"] == "string":
        items = msgpack.unpackb(data, raw=True)
        array = np.empty(len(items), dtype=object)
        array[:] = items
        return array.reshape(shape)
    dtype = np.dtype(entry["dtype"]).newbyteorder("<")
    return np.frombuffer(data, dtype=dtype).astype(dtype.newbyteorder("="), copy=True).reshape(shape)


def remove(prefix):
    """Deletes a checkpoint's index and data files (as TF's `remove_checkpoint`)."""
    try:
        num_shards = read_index(prefix)["num_shards"]
    except (FileNotFoundError, ValueError):
        num_shards = None
    paths = [index_path(prefix)]
    if num_shards:
        paths += [data_path(prefix, k, num_shards) for k in range(num_shards)]
    for path in paths:
        with contextlib.suppress(FileNotFoundError):
            os.remove(path)
