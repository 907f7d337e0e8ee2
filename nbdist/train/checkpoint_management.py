"""The ``checkpoint`` state file: `latest_checkpoint`, `get_checkpoint_state`, and friends.

The file is TF's text format of a ``CheckpointState`` message, so real TF reads nbdist's
state files (and the other way round)::

    model_checkpoint_path: "model.ckpt-200"
    all_model_checkpoint_paths: "model.ckpt-100"
    all_model_checkpoint_paths: "model.ckpt-200"
    all_model_checkpoint_timestamps: 1764700000.5
    all_model_checkpoint_timestamps: 1764700010.25
    last_preserved_timestamp: 1764699990.0

It is written to a temporary name and renamed over the old one, so a reader sees either
the previous state or the new one, never a torn file; and it is written only after the
checkpoint it names is complete (`nbdist.ops.checkpoint_format`).
"""

import contextlib
import logging
import os
import uuid

from nbdist import file_errors
from nbdist.ops import checkpoint_format

_log = logging.getLogger("nbdist")

_ESCAPES = {"\\": "\\\\", '"': '\\"', "'": "\\'", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_UNESCAPES = {"\\": "\\", '"': '"', "'": "'", "n": "\n", "r": "\r", "t": "\t"}


class CheckpointState:
    """TF's ``CheckpointState`` proto as a plain object (same field names)."""

    def __init__(
        self,
        model_checkpoint_path="",
        all_model_checkpoint_paths=(),
        all_model_checkpoint_timestamps=(),
        last_preserved_timestamp=0.0,
    ):
        self.model_checkpoint_path = model_checkpoint_path
        self.all_model_checkpoint_paths = list(all_model_checkpoint_paths)
        self.all_model_checkpoint_timestamps = list(all_model_checkpoint_timestamps)
        self.last_preserved_timestamp = last_preserved_timestamp

    def __repr__(self):
        return _to_text(self)

    def __eq__(self, other):
        return isinstance(other, CheckpointState) and vars(self) == vars(other)

    __hash__ = None  # mutable, like a proto message


def _quote(text):
    out = []
    for ch in text:
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif ord(ch) < 32 or ord(ch) == 127:
            out.append(f"\\{ord(ch):03o}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _unquote(text, path):
    if len(text) < 2 or text[0] != text[-1] or text[0] not in "\"'":
        raise ValueError(f"{path}: expected a quoted string, got {text!r}")
    body, out, i = text[1:-1], bytearray(), 0
    while i < len(body):
        ch = body[i]
        if ch != "\\":
            out += ch.encode()
            i += 1
            continue
        nxt = body[i + 1 : i + 2]
        if nxt in _UNESCAPES:
            out += _UNESCAPES[nxt].encode()
            i += 2
        elif nxt.isdigit():
            out.append(int(body[i + 1 : i + 4], 8))
            i += 4
        else:
            raise ValueError(f"{path}: bad escape in {text!r}")
    return out.decode()


def _to_text(state):
    lines = [f"model_checkpoint_path: {_quote(state.model_checkpoint_path)}"]
    lines += [f"all_model_checkpoint_paths: {_quote(p)}" for p in state.all_model_checkpoint_paths]
    lines += [f"all_model_checkpoint_timestamps: {t!r}" for t in state.all_model_checkpoint_timestamps]
    if state.last_preserved_timestamp:
        lines.append(f"last_preserved_timestamp: {state.last_preserved_timestamp!r}")
    return "\n".join(lines) + "\n"


def _parse(text, path):
    state = CheckpointState()
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.partition(":")
        if not sep:
            raise ValueError(f"{path}:{number}: expected 'field: value', got {line!r}")
        key, value = key.strip(), value.strip()
        if key == "model_checkpoint_path":
            state.model_checkpoint_path = _unquote(value, path)
        elif key == "all_model_checkpoint_paths":
            state.all_model_checkpoint_paths.append(_unquote(value, path))
        elif key == "all_model_checkpoint_timestamps":
            state.all_model_checkpoint_timestamps.append(float(value))
        elif key == "last_preserved_timestamp":
            state.last_preserved_timestamp = float(value)
        else:
            raise ValueError(f"{path}:{number}: unknown CheckpointState field {key!r}")
    return state


def _state_path(checkpoint_dir, latest_filename):
    return os.path.join(checkpoint_dir, latest_filename or "checkpoint")


def generate_checkpoint_state_proto(
    save_dir,
    model_checkpoint_path,
    all_model_checkpoint_paths=None,
    all_model_checkpoint_timestamps=None,
    last_preserved_timestamp=None,
):
    """A `CheckpointState` whose last kept path is `model_checkpoint_path` (TF's rules).

    Paths are made relative to `save_dir` when `save_dir` itself is relative, as TF does.
    """
    paths = list(all_model_checkpoint_paths or [])
    if not paths or paths[-1] != model_checkpoint_path:
        paths.append(model_checkpoint_path)
    if not os.path.isabs(save_dir):
        if not os.path.isabs(model_checkpoint_path):
            model_checkpoint_path = os.path.relpath(model_checkpoint_path, save_dir)
        paths = [p if os.path.isabs(p) else os.path.relpath(p, save_dir) for p in paths]
    return CheckpointState(
        model_checkpoint_path, paths, all_model_checkpoint_timestamps or (), last_preserved_timestamp or 0.0
    )


def update_checkpoint_state(
    save_dir,
    model_checkpoint_path,
    all_model_checkpoint_paths=None,
    latest_filename=None,
    all_model_checkpoint_timestamps=None,
    last_preserved_timestamp=None,
):
    """Atomically rewrites ``save_dir/checkpoint`` to name `model_checkpoint_path` as latest.

    Raises:
        RuntimeError: if the save path is the state file itself (as TF).
        OpError: writing failed: the class of its errno (`file_errors.from_os_error`), e.g.
            `ResourceExhaustedError` on a full disk; no temporary file is left.
    """
    state = generate_checkpoint_state_proto(
        save_dir,
        model_checkpoint_path,
        all_model_checkpoint_paths,
        all_model_checkpoint_timestamps,
        last_preserved_timestamp,
    )
    path = _state_path(save_dir, latest_filename)
    if os.path.abspath(path) == os.path.abspath(os.path.join(save_dir, state.model_checkpoint_path)):
        raise RuntimeError(
            f"Save path {model_checkpoint_path!r} conflicts with path used for checkpoint state. "
            "Please use a different save path."
        )
    os.makedirs(save_dir or ".", exist_ok=True)
    tmp = f"{path}.tmp-{uuid.uuid4().hex[:12]}"
    try:
        with open(tmp, "w") as f:
            f.write(_to_text(state))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as e:  # a full disk: ResourceExhaustedError, as TF's file_io raises
        with contextlib.suppress(OSError):
            os.remove(tmp)
        raise file_errors.from_os_error(
            e, None, None, f"cannot write the checkpoint state file {path!r}"
        ) from None


def get_checkpoint_state(checkpoint_dir, latest_filename=None):
    """The `CheckpointState` in ``checkpoint_dir/checkpoint``, or None if there is none.

    Relative paths in the file are joined to `checkpoint_dir`. A file that does not parse
    is logged and ignored (None), as TF does.
    """
    path = _state_path(checkpoint_dir, latest_filename)
    try:
        with open(path) as f:
            text = f.read()
    except FileNotFoundError:
        return None
    try:
        state = _parse(text, path)
    except ValueError as e:
        _log.warning("%s: Checkpoint ignored (%s)", path, e)
        return None
    if not state.model_checkpoint_path:
        raise ValueError(f"Invalid checkpoint state loaded from {checkpoint_dir!r}")
    if not os.path.isabs(state.model_checkpoint_path):
        state.model_checkpoint_path = os.path.join(checkpoint_dir, state.model_checkpoint_path)
    state.all_model_checkpoint_paths = [
        p if os.path.isabs(p) else os.path.join(checkpoint_dir, p) for p in state.all_model_checkpoint_paths
    ]
    return state


def checkpoint_exists(checkpoint_prefix):
    """Whether a complete V2 checkpoint exists at the prefix (its ``.index`` file does)."""
    return os.path.isfile(checkpoint_format.index_path(checkpoint_prefix))


def latest_checkpoint(checkpoint_dir, latest_filename=None):
    """The prefix of the newest complete checkpoint in `checkpoint_dir`, or None."""
    state = get_checkpoint_state(checkpoint_dir, latest_filename)
    if state and state.model_checkpoint_path:
        if checkpoint_exists(state.model_checkpoint_path):
            return state.model_checkpoint_path
        _log.error("Couldn't match files for checkpoint %s", state.model_checkpoint_path)
    return None


def get_checkpoint_mtimes(checkpoint_prefixes):
    """The modification time of each existing checkpoint's index file."""
    out = []
    for prefix in checkpoint_prefixes:
        with contextlib.suppress(OSError):
            out.append(os.path.getmtime(checkpoint_format.index_path(prefix)))
    return out


def remove_checkpoint(checkpoint_prefix, checkpoint_format_version=2, meta_graph_suffix="meta"):
    """Deletes the index and data files of a checkpoint, and its meta graph
    (``<prefix>.<meta_graph_suffix>``) as TF does (`checkpoint_format_version`: TF's
    ``SaverDef.V2``, the only format nbdist writes)."""
    checkpoint_format.remove(checkpoint_prefix)
    if meta_graph_suffix:
        with contextlib.suppress(FileNotFoundError):
            os.remove(f"{checkpoint_prefix}.{meta_graph_suffix}")
