"""`tf.gfile`: TF 1.x's file API (the local filesystem; TF's other filesystems - GCS, HDFS -
are out of scope). A failed operation raises the `tf.errors` class TF's gives
(`NotFoundError`, `AlreadyExistsError`, `PermissionDeniedError`, ...; `file_errors`).

    with tf.gfile.GFile(path, "w") as f:
        f.write("x,1\\n")
    tf.gfile.Glob(os.path.join(data_dir, "*.csv"))
"""

import glob as _glob
import os
import shutil
from typing import NamedTuple

from nbdist import errors, file_errors


def _raise(error, what):
    raise file_errors.from_os_error(error, None, None, what) from None


class FileStatistics(NamedTuple):
    """What `Stat` says of a path (TF's `FileStatistics`)."""

    length: int
    mtime_nsec: int
    is_directory: bool


class GFile:
    """`tf.gfile.GFile(name, mode="r")`: a file; text modes read and write `str`, binary `bytes`.

    Reading a file that does not exist raises `NotFoundError` when it is first read, as TF's
    (TF opens lazily).
    """

    def __init__(self, name, mode="r"):
        if mode not in ("r", "rb", "w", "wb", "a", "ab", "r+", "rb+", "w+", "wb+", "a+", "ab+"):
            raise errors.InvalidArgumentError(None, None, f"GFile: mode {mode!r} is not one of r, w, a (+b)")
        self.name = os.fspath(name)
        self.mode = mode
        self._file = None

    def _opened(self):
        if self._file is None:
            try:
                self._file = open(self.name, self.mode)  # noqa: SIM115 - closed by close() / __exit__
            except OSError as e:
                _raise(e, f"cannot open {self.name!r}")
        return self._file

    def read(self, n=-1):
        return self._opened().read(n)

    def readline(self):
        return self._opened().readline()

    def readlines(self):
        return self._opened().readlines()

    def write(self, data):
        self._opened().write(data)

    def seek(self, offset=None, whence=0, position=None):
        self._opened().seek(position if offset is None else offset, whence)

    def tell(self):
        return self._opened().tell()

    def size(self):
        return Stat(self.name).length

    def flush(self):
        if self._file is not None:
            self._file.flush()

    def close(self):
        if self._file is not None:
            self._file.close()
            self._file = None

    def __iter__(self):
        return iter(self._opened())

    def __next__(self):
        return next(self._opened())

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):  # a GFile read and dropped (``GFile(p).read()``) closes, as TF's does
        self.close()


Open = GFile
FastGFile = GFile


def Exists(filename):  # noqa: N802 - TF's public names
    return os.path.exists(filename)


def IsDirectory(dirname):  # noqa: N802
    return os.path.isdir(dirname)


def Glob(filename):  # noqa: N802
    """The paths matching the pattern `filename` (a list of patterns: all their matches)."""
    patterns = [filename] if isinstance(filename, (str, bytes, os.PathLike)) else list(filename)
    return [m for p in patterns for m in sorted(_glob.glob(os.fsdecode(p)))]


def ListDirectory(dirname):  # noqa: N802
    """The names in directory `dirname` (not their paths), in no particular order, as TF's."""
    try:
        return os.listdir(dirname)
    except OSError as e:
        _raise(e, f"cannot list {dirname!r}")


def MkDir(dirname):  # noqa: N802
    """Creates directory `dirname` (its parent must exist; an existing directory is fine, as TF's)."""
    try:
        os.mkdir(dirname)
    except FileExistsError:
        if not os.path.isdir(dirname):
            raise errors.AlreadyExistsError(
                None, None, f"{dirname!r} exists and is not a directory"
            ) from None
    except OSError as e:
        _raise(e, f"cannot create directory {dirname!r}")


def MakeDirs(dirname):  # noqa: N802
    try:
        os.makedirs(dirname, exist_ok=True)
    except OSError as e:
        _raise(e, f"cannot create directory {dirname!r}")


def Remove(filename):  # noqa: N802
    try:
        os.remove(filename)
    except OSError as e:
        _raise(e, f"cannot delete {filename!r}")


def DeleteRecursively(dirname):  # noqa: N802
    try:
        if os.path.isdir(dirname) and not os.path.islink(dirname):
            shutil.rmtree(dirname)
        else:
            os.remove(dirname)
    except OSError as e:
        _raise(e, f"cannot delete {dirname!r}")


def _refuse_existing(path, overwrite):
    if not overwrite and os.path.exists(path):
        raise errors.AlreadyExistsError(None, None, f"file already exists: {path!r} (pass overwrite=True)")


def Rename(oldname, newname, overwrite=False):  # noqa: N802
    _refuse_existing(newname, overwrite)
    try:
        os.replace(oldname, newname)
    except OSError as e:
        _raise(e, f"cannot rename {oldname!r} to {newname!r}")


def Copy(oldpath, newpath, overwrite=False):  # noqa: N802
    _refuse_existing(newpath, overwrite)
    try:
        shutil.copyfile(oldpath, newpath)
    except OSError as e:
        _raise(e, f"cannot copy {oldpath!r} to {newpath!r}")


def Stat(filename):  # noqa: N802
    try:
        st = os.stat(filename)
    except OSError as e:
        _raise(e, f"cannot stat {filename!r}")
    return FileStatistics(st.st_size, st.st_mtime_ns, os.path.isdir(filename))


def Walk(top, in_order=True):  # noqa: N802
    """``(dirname, subdirectories, files)`` per directory under `top` (top-down when `in_order`)."""
    if not os.path.isdir(top):
        return
    yield from os.walk(top, topdown=in_order)


__all__ = [
    "Copy",
    "DeleteRecursively",
    "Exists",
    "FastGFile",
    "GFile",
    "Glob",
    "IsDirectory",
    "ListDirectory",
    "MakeDirs",
    "MkDir",
    "Open",
    "Remove",
    "Rename",
    "Stat",
    "Walk",
]
