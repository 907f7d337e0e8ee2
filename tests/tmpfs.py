"""A small tmpfs mounted for one test, to meet a real full disk (ENOSPC) rather than a mock.

Mounting needs root (CI runs as root); elsewhere the test is skipped, saying why.
"""

import contextlib
import errno
import os
import subprocess

import pytest


@contextlib.contextmanager
def mounted_tmpfs(directory, size="64k"):
    """Mounts a `size` tmpfs on `directory` (created) for the ``with`` block; unmounts after."""
    os.makedirs(directory, exist_ok=True)
    mount = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(directory)],
        capture_output=True,
        text=True,
        timeout=10,
        check=False,
    )
    if mount.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs to fill (needs root): {mount.stderr.strip() or mount.returncode}")
    try:
        yield directory
    finally:
        subprocess.run(["umount", "-l", str(directory)], capture_output=True, timeout=10, check=True)


def fill(directory):
    """Writes a filler file in `directory` until its filesystem is full; returns the filler's path."""
    path = os.path.join(directory, "filler")
    with open(path, "wb", buffering=0) as f:
        try:
            while True:
                f.write(b"\0" * 1024)
        except OSError as e:
            if e.errno != errno.ENOSPC:
                raise
    return path
