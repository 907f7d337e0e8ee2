"""More of `tf.io` / `tf.image`'s codecs, on Pillow as ops/image_codec_ops.py: ``DecodeBmp``,
``DecodeGif`` (every frame, ``[frames, height, width, 3]``), ``DecodeWebP`` (TF's
``[frames, height, width, channels]``), ``ExtractJpegShape`` and ``DecodeAndCropJpeg``.
BMP, GIF and lossless WebP pixels are TF's exactly; JPEG's may differ by a few levels (another
decoder's rounding), as for `decode_jpeg`. None has a gradient."""

import io
import struct

import numpy as np

from nbdist.graph import dtypes as _dtypes
from nbdist.graph.tensor_shape import TensorShape
from nbdist.ops import registry
from nbdist.ops._shapes import invalid_argument
from nbdist.ops.constant_op import convert_to_tensor
from nbdist.ops.shape_ops import get_static_value

__all__ = ["decode_and_crop_jpeg", "decode_bmp", "decode_gif", "decode_webp", "extract_jpeg_shape"]

_MODES = {1: "L", 3: "RGB", 4: "RGBA"}


def _open(node, contents, fmt, draft=None):
    """The Pillow image of `contents`, which must be of format `fmt` (``"BMP"``, ...); a JPEG
    decoded straight to mode `draft` (``"L"``: libjpeg's own luminance, as TF's) if given."""
    from PIL import Image  # noqa: PLC0415 - Pillow loads only when an image is decoded

    data = np.asarray(contents, dtype=object).item()
    try:
        image = Image.open(io.BytesIO(data))
        if draft:
            image.draft(draft, image.size)
        image.load()
    except Exception as e:  # noqa: BLE001 - Pillow raises many kinds for bad bytes
        raise invalid_argument(
            node, f"{node.op}: cannot decode the image ({type(e).__name__}: {e})"
        ) from None
    if image.format != fmt:
        raise invalid_argument(
            node,
            f"{node.op}: the contents are not a {fmt} image (Pillow reads {image.format or 'no format'})",
        )
    return image


def _contents(contents):
    return convert_to_tensor(contents, dtype=_dtypes.string, name="contents")


def _op(op_type, inputs, attrs, name):
    return registry.make_op(op_type, inputs, attrs, name=name or op_type).outputs[0]


registry.shape("DecodeBmp")(
    lambda inputs, attrs: [(_dtypes.uint8, TensorShape([None, None, attrs["channels"] or None]))]
)


@registry.shape("DecodeAndCropJpeg")
def _decode_and_crop_shape(inputs, attrs):
    window = get_static_value(inputs[1])  # TF's: a known window gives the height and width
    h, w = (None, None) if window is None or np.size(window) != 4 else (int(window[2]), int(window[3]))
    return [(_dtypes.uint8, TensorShape([h, w, attrs["channels"] or None]))]


registry.shape("DecodeGif")(lambda inputs, attrs: [(_dtypes.uint8, TensorShape([None, None, None, 3]))])
registry.shape("DecodeWebP")(
    lambda inputs, attrs: [
        (_dtypes.as_dtype(attrs["dtype"]), TensorShape([None, None, None, attrs["channels"] or None]))
    ]
)
registry.shape("ExtractJpegShape")(
    lambda inputs, attrs: [(_dtypes.as_dtype(attrs["output_type"]), TensorShape([3]))]
)
for _type in ("DecodeBmp", "DecodeGif", "DecodeWebP", "ExtractJpegShape", "DecodeAndCropJpeg"):
    registry.no_gradient(_type)


# -- BMP ---------------------------------------------------------------------------------------
def _bmp_pixels(node, data):
    """An uncompressed 8, 24 or 32-bit BMP's pixels as stored (BGR(A) reordered to RGB(A)),
    ``[height, width, bits / 8]``, read as TF's decoder reads them."""
    if data[:2] != b"BM" or len(data) < 54:
        raise invalid_argument(node, f"{node.op}: not a BMP file (it starts with {data[:2]!r}, not b'BM')")
    offset, _, width, height, _, bpp, compression = struct.unpack_from("<IIiiHHI", data, 10)
    if bpp not in (8, 24, 32) or compression not in (0, 3):
        raise invalid_argument(node, f"{node.op}: {bpp}-bit BMP (compression {compression}) is not supported")
    channels, rows = bpp // 8, abs(height)
    stride = (width * channels + 3) // 4 * 4
    if width <= 0 or offset + stride * rows > len(data):
        raise invalid_argument(node, f"{node.op}: the BMP's pixel data is truncated ({len(data)} bytes)")
    raw = np.frombuffer(data, np.uint8, stride * rows, offset).reshape(rows, stride)[:, : width * channels]
    pixels = raw.reshape(rows, width, channels)
    if height > 0:  # bottom-up rows
        pixels = pixels[::-1]
    if channels >= 3:
        pixels = pixels[..., [2, 1, 0, 3][:channels]]
    return pixels


def bmp_array(node, data, channels):
    """TF's decoding of BMP bytes `data` to ``[height, width, channels]`` (0: the file's)."""
    if channels not in (0, 3, 4):
        raise invalid_argument(node, f"`channels` must be 0, 3 or 4 for BMP, but got {channels}")
    pixels = _bmp_pixels(node, data)
    if channels == 0 or channels == pixels.shape[-1]:
        return np.ascontiguousarray(pixels)
    if pixels.shape[-1] == 1:
        pixels = np.repeat(pixels, 3, axis=-1)
    if channels == 3:
        return np.ascontiguousarray(pixels[..., :3])
    return np.concatenate([pixels, np.full((*pixels.shape[:2], 1), 255, np.uint8)], axis=-1)


@registry.kernel("DecodeBmp")
def _decode_bmp_kernel(ctx, node, contents):
    return bmp_array(node, np.asarray(contents, dtype=object).item(), node.attr["channels"])


def decode_bmp(contents, channels=0, name=None):
    """`tf.io.decode_bmp`: a BMP's pixels, ``[height, width, channels]`` uint8 (`channels` 0:
    the file's; 3 or 4 to convert)."""
    return _op("DecodeBmp", [_contents(contents)], {"channels": int(channels)}, name)


# -- GIF ---------------------------------------------------------------------------------------
def gif_frames(node, image):
    """Every frame of a GIF as RGB, composed as displayed: ``[frames, height, width, 3]``."""
    from PIL import ImageSequence  # noqa: PLC0415

    return np.stack(
        [np.asarray(frame.convert("RGB"), dtype=np.uint8) for frame in ImageSequence.Iterator(image)]
    )


@registry.kernel("DecodeGif")
def _decode_gif_kernel(ctx, node, contents):
    return gif_frames(node, _open(node, contents, "GIF"))


def decode_gif(contents, name=None):
    """`tf.io.decode_gif`: every frame of a GIF, ``[frames, height, width, 3]`` uint8."""
    return _op("DecodeGif", [_contents(contents)], {}, name)


# -- WebP --------------------------------------------------------------------------------------
@registry.kernel("DecodeWebP")
def _decode_webp_kernel(ctx, node, contents):
    image = _open(node, contents, "WEBP")
    has = 4 if "A" in image.getbands() else 3
    channels = node.attr["channels"] or has
    if channels != has:
        raise invalid_argument(
            node,
            f"{node.op}: Number of channels requested does not match input ({channels} vs the file's {has})",
        )
    from PIL import ImageSequence  # noqa: PLC0415

    frames = [np.asarray(f.convert(_MODES[channels]), dtype=np.uint8) for f in ImageSequence.Iterator(image)]
    return np.stack(frames).astype(_dtypes.as_dtype(node.attr["dtype"]).np)


def decode_webp(contents, channels=0, dtype=_dtypes.uint8, name=None):
    """`tf.io.decode_webp`: a WebP's frames, ``[frames, height, width, channels]`` (one frame
    for a still image, as TF); `channels` 0 keeps the file's (3, or 4 with alpha).

    Raises:
        TypeError: `dtype` is not uint8.
    """
    if _dtypes.as_dtype(dtype) != _dtypes.uint8:
        raise TypeError(
            f"tf.io.decode_webp: nbdist decodes WebP to uint8 only, got {_dtypes.as_dtype(dtype).name}"
        )
    return _op("DecodeWebP", [_contents(contents)], {"channels": int(channels), "dtype": "uint8"}, name)


# -- JPEG --------------------------------------------------------------------------------------
def _jpeg(node, contents, draft=None):
    data = np.asarray(contents, dtype=object).item()
    if data[:3] != b"\xff\xd8\xff":
        raise invalid_argument(node, f"{node.op}: Invalid JPEG data, size {len(data)}")
    return _open(node, contents, "JPEG", draft)


@registry.kernel("ExtractJpegShape")
def _extract_jpeg_shape_kernel(ctx, node, contents):
    image = _jpeg(node, contents)
    width, height = image.size
    return np.array([height, width, len(image.getbands())], _dtypes.as_dtype(node.attr["output_type"]).np)


def extract_jpeg_shape(contents, output_type=_dtypes.int32, name=None):
    """`tf.io.extract_jpeg_shape`: ``[height, width, channels]`` of a JPEG, from its header."""
    output_type = _dtypes.as_dtype(output_type)
    if output_type not in (_dtypes.int32, _dtypes.int64):
        raise TypeError(f"extract_jpeg_shape: output_type must be int32 or int64, got {output_type.name}")
    return _op("ExtractJpegShape", [_contents(contents)], {"output_type": output_type.name}, name)


@registry.kernel("DecodeAndCropJpeg")
def _decode_and_crop_jpeg_kernel(ctx, node, contents, crop_window):
    image = _jpeg(node, contents, "L" if node.attr["channels"] == 1 else None)
    window = np.asarray(crop_window).reshape(-1)
    if window.size != 4:
        raise invalid_argument(
            node, f"{node.op}: crop_window must be [y, x, height, width], got {window.tolist()}"
        )
    y, x, h, w = (int(v) for v in window)
    width, height = image.size
    if min(y, x) < 0 or h <= 0 or w <= 0 or y + h > height or x + w > width:
        raise invalid_argument(node, "jpeg::Uncompress failed. Invalid JPEG data or crop window.")
    channels = node.attr["channels"] or (1 if image.mode == "L" else 3)
    pixels = np.asarray(image.convert(_MODES[channels]), dtype=np.uint8)[y : y + h, x : x + w]
    return pixels.reshape(h, w, channels)


def decode_and_crop_jpeg(
    contents,
    crop_window,
    channels=0,
    ratio=1,
    fancy_upscaling=True,
    try_recover_truncated=False,
    acceptable_fraction=1,
    dct_method="",
    name=None,
):
    """`tf.io.decode_and_crop_jpeg`: the window ``[y, x, height, width]`` of a JPEG's pixels
    (uint8; the decoder options other than `channels` are accepted and ignored, as by
    `decode_jpeg`)."""
    window = convert_to_tensor(crop_window, dtype=_dtypes.int32, name="crop_window")
    return _op("DecodeAndCropJpeg", [_contents(contents), window], {"channels": int(channels)}, name)
