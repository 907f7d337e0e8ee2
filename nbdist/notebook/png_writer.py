"""PNG bytes of a picture: a matplotlib Figure (`figure_png`), or an RGBA canvas buffer
written fast (`rgb_png`, for a live picture that is soon replaced)."""

import io
import struct
import zlib

import numpy as np


def rgb_png(rgba):
    """PNG bytes of an RGBA image (``(height, width, 4)`` uint8, e.g. a canvas's
    ``buffer_rgba()``), opaque, fast rather than small: no PNG row filter, zlib level 1.

    A live picture is soon replaced, and the training pays for it: Pillow's encoder (which
    tries its filters on every row) took 8.5 ms of a 23 ms dashboard picture, this takes 4
    (docs/benchmarks.md) for a file as large (50 KiB).
    """
    pixels = np.asarray(rgba)[:, :, :3]
    height, width, _ = pixels.shape
    rows = np.zeros((height, 1 + 3 * width), np.uint8)  # each row: filter type 0, then its bytes
    rows[:, 1:] = pixels.reshape(height, 3 * width)

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)  # 8-bit RGB, no interlace
    image = chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows, 1)) + chunk(b"IEND", b"")
    return b"\x89PNG\r\n\x1a\n" + image


def figure_png(fig):
    """PNG bytes of a matplotlib Figure."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()
