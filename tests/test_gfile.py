"""`tf.gfile` against real TensorFlow's: the same results and the same error classes on the same
files (each library gets its own copy of the same tree)."""

import os

import nbdist as tf


def _tree(root):
    os.makedirs(root / "d" / "e")
    (root / "a.txt").write_text("one\ntwo\n")
    (root / "d" / "b.csv").write_text("x,1\n")
    (root / "d" / "e" / "c.csv").write_text("y,2\n")
    return root


def _ops(gfile, root):
    """Every operation on `root`, the result or the error class's name of each."""
    out = {}

    def record(name, fn):
        try:
            out[name] = fn()
        except Exception as e:  # noqa: BLE001 - the class is the result
            out[name] = type(e).__name__

    r = str(root)
    record("exists", lambda: (gfile.Exists(f"{r}/a.txt"), gfile.Exists(f"{r}/nope")))
    record("isdir", lambda: (gfile.IsDirectory(f"{r}/d"), gfile.IsDirectory(f"{r}/a.txt")))
    record("glob", lambda: sorted(os.path.relpath(p, r) for p in gfile.Glob(f"{r}/d/*.csv")))
    record(
        "glob_list", lambda: sorted(os.path.relpath(p, r) for p in gfile.Glob([f"{r}/*.txt", f"{r}/d/e/*"]))
    )
    record("listdir", lambda: sorted(gfile.ListDirectory(f"{r}/d")))
    record("listdir_missing", lambda: gfile.ListDirectory(f"{r}/nope"))
    record("read", lambda: gfile.GFile(f"{r}/a.txt").read())
    record("readlines", lambda: gfile.GFile(f"{r}/a.txt", "r").readlines())
    record("read_missing", lambda: gfile.GFile(f"{r}/nope.txt").read())
    record("stat", lambda: (gfile.Stat(f"{r}/a.txt").length, gfile.Stat(f"{r}/d").is_directory))
    record("stat_missing", lambda: gfile.Stat(f"{r}/nope"))

    def write_binary():
        with gfile.GFile(f"{r}/new.bin", "wb") as f:
            f.write(b"\x00\x01")
        return gfile.GFile(f"{r}/new.bin", "rb").read()

    record("write_binary", write_binary)
    record("mkdir", lambda: (gfile.MkDir(f"{r}/m"), gfile.IsDirectory(f"{r}/m"))[1])
    record("mkdir_again", lambda: gfile.MkDir(f"{r}/m"))
    record(
        "makedirs",
        lambda: (gfile.MakeDirs(f"{r}/p/q/s"), gfile.MakeDirs(f"{r}/p/q/s"), gfile.Exists(f"{r}/p/q/s"))[2],
    )
    record(
        "copy", lambda: (gfile.Copy(f"{r}/a.txt", f"{r}/copy.txt"), gfile.GFile(f"{r}/copy.txt").read())[1]
    )
    record("copy_existing", lambda: gfile.Copy(f"{r}/a.txt", f"{r}/copy.txt"))
    record("copy_overwrite", lambda: gfile.Copy(f"{r}/d/b.csv", f"{r}/copy.txt", overwrite=True))
    record("rename_existing", lambda: gfile.Rename(f"{r}/copy.txt", f"{r}/a.txt"))
    record("rename", lambda: (gfile.Rename(f"{r}/copy.txt", f"{r}/moved.txt"), gfile.Exists(f"{r}/copy.txt")))
    record("remove", lambda: (gfile.Remove(f"{r}/moved.txt"), gfile.Exists(f"{r}/moved.txt"))[1])
    record("remove_missing", lambda: gfile.Remove(f"{r}/moved.txt"))
    record(
        "walk",
        lambda: sorted((os.path.relpath(d, r), sorted(s), sorted(f)) for d, s, f in gfile.Walk(f"{r}/d")),
    )
    record("delete_recursively", lambda: (gfile.DeleteRecursively(f"{r}/d"), gfile.Exists(f"{r}/d"))[1])
    record("delete_missing", lambda: gfile.DeleteRecursively(f"{r}/d"))
    return out


def test_gfile_matches_tensorflow(tf1, tmp_path):
    ours = _ops(tf.gfile, _tree(tmp_path / "nbdist"))
    theirs = _ops(tf1.gfile, _tree(tmp_path / "tf"))
    assert ours.keys() == theirs.keys()
    for key in ours:
        assert ours[key] == theirs[key], f"{key}: nbdist {ours[key]!r}, TF {theirs[key]!r}"
