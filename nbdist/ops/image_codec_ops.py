"""`tf.image`'s codecs: `DecodePng` / `EncodePng` / `DecodeJpeg` / `EncodeJpeg` /
`DecodeImage` on Pillow (imported on first use), and `is_jpeg`. PNG pixels are exact; JPEG's
may differ from TF's libjpeg by a few levels (another decoder's rounding)."""

import io

import numpy as np

from nbdist.graph import dtypes as _dtypes
from nbdist.graph.tensor_shape import TensorShape
from nbdist.ops import registry
from nbdist.ops._shapes import invalid_argument
from nbdist.ops.constant_op import convert_to_tensor
from nbdist.ops.image_codec_more_ops import bmp_array

__all__ = ["decode_image", "decode_jpeg", "decode_png", "encode_jpeg", "encode_png", "is_jpeg"]

_MODES = {1: "L", 2: "LA", 3: "RGB", 4: "RGBA"}


def _pil():
    from PIL import Image  # noqa: PLC0415 - Pillow loads only when an image is coded

    return Image


def _decode(node, contents, channels, dtype=np.uint8):
    data = np.asarray(contents, dtype=object).item()
    try:
        image = _pil().open(io.BytesIO(data))
        image.load()
    except Exception as e:  # noqa: BLE001 - Pillow raises many kinds for bad bytes
        raise invalid_argument(
            node, f"{node.op}: cannot decode the image ({type(e).__name__}: {e})"
        ) from None
    if image.mode in ("I;16", "I;16B", "I") and dtype == np.uint16:
        pixels = np.asarray(image, dtype=np.uint16)[..., None]
    else:
        if channels == 0:
            channels = {
                "L": 1,
                "LA": 2,
                "RGB": 3,
                "RGBA": 4,
                "P": 4 if "transparency" in image.info else 3,
            }.get(image.mode, 3)
        pixels = np.asarray(image.convert(_MODES[channels]), dtype=np.uint8)
        if dtype == np.uint16:
            pixels = pixels.astype(np.uint16) * 257
    return pixels.reshape(*pixels.shape[:2], -1)


def _encode(node, image, fmt, **options):
    if image.ndim != 3 or image.shape[-1] not in _MODES:
        raise invalid_argument(
            node, f"{node.op}: image must be [height, width, 1-4], got {list(image.shape)}"
        )
    mode = _MODES[image.shape[-1]]
    if image.dtype == np.uint16:
        if mode != "L":
            raise invalid_argument(node, f"{node.op}: nbdist encodes uint16 images with one channel only")
        pil = _pil().fromarray(np.ascontiguousarray(image[..., 0], np.uint16))  # mode I;16
    else:
        pil = _pil().fromarray(image[..., 0] if mode == "L" else image, mode)
    buffer = io.BytesIO()
    pil.save(buffer, fmt, **options)
    return np.array(buffer.getvalue(), dtype=object)


def _image_shape(channels_attr="channels"):
    def shape_fn(inputs, attrs):
        channels = attrs.get(channels_attr, 0)
        return [(_dtypes.as_dtype(attrs.get("dtype", "uint8")), TensorShape([None, None, channels or None]))]

    return shape_fn


for _type in ("DecodePng", "DecodeJpeg"):
    registry.shape(_type)(_image_shape())
    registry.no_gradient(_type)
registry.shape("DecodeImage")(lambda inputs, attrs: [(_dtypes.as_dtype(attrs["dtype"]), TensorShape(None))])
registry.no_gradient("DecodeImage")
for _type in ("EncodePng", "EncodeJpeg"):
    registry.shape(_type)(lambda inputs, attrs: [(_dtypes.string, TensorShape([]))])
    registry.no_gradient(_type)


@registry.kernel("DecodePng")
def _decode_png_kernel(ctx, node, contents):
    return _decode(node, contents, node.attr["channels"], _dtypes.as_dtype(node.attr["dtype"]).np)


@registry.kernel("DecodeJpeg")
def _decode_jpeg_kernel(ctx, node, contents):
    return _decode(node, contents, node.attr["channels"])


def _animated(data):
    return data[:4] == b"GIF8" or (data[:4] == b"RIFF" and data[8:12] == b"WEBP")


def _frames(node, contents, channels):
    """Every frame of a GIF (RGB) or WebP, ``[frames, height, width, channels]``, as TF's
    `decode_image` gives them with ``expand_animations=True``."""
    from PIL import ImageSequence  # noqa: PLC0415

    image = _pil().open(io.BytesIO(np.asarray(contents, dtype=object).item()))
    channels = channels or (4 if image.format == "WEBP" and "A" in image.getbands() else 3)
    return np.stack(
        [np.asarray(f.convert(_MODES[channels]), np.uint8) for f in ImageSequence.Iterator(image)]
    )


@registry.kernel("DecodeImage")
def _decode_image_kernel(ctx, node, contents):
    data = np.asarray(contents, dtype=object).item()
    if node.attr.get("expand_animations", True) and _animated(data):
        pixels = _frames(node, contents, node.attr["channels"])
    elif data[:2] == b"BM":  # TF's own BMP reading (Pillow drops a 32-bit BMP's alpha)
        pixels = bmp_array(node, data, node.attr["channels"])
    else:
        pixels = _decode(node, contents, node.attr["channels"])
    dtype = _dtypes.as_dtype(node.attr["dtype"]).np
    if dtype == np.uint8:
        return pixels
    if np.issubdtype(dtype, np.floating):
        return (pixels / np.float32(255)).astype(dtype)  # TF's convert_image_dtype
    return pixels.astype(dtype) * ((np.iinfo(dtype).max + 1) // 256)


@registry.kernel("EncodePng")
def _encode_png_kernel(ctx, node, image):
    level = node.attr["compression"]
    return _encode(node, image, "PNG", compress_level=6 if level < 0 else level)


@registry.kernel("EncodeJpeg")
def _encode_jpeg_kernel(ctx, node, image):
    return _encode(node, image.astype(np.uint8), "JPEG", quality=node.attr["quality"])


def _contents(contents):
    return convert_to_tensor(contents, dtype=_dtypes.string, name="contents")


def decode_png(contents, channels=0, dtype=_dtypes.uint8, name=None):
    """`tf.image.decode_png`: a PNG's pixels, ``[height, width, channels]`` uint8 or uint16
    (`channels` 0 keeps the file's)."""
    attrs = {"channels": int(channels), "dtype": _dtypes.as_dtype(dtype).name}
    return registry.make_op("DecodePng", [_contents(contents)], attrs, name=name or "DecodePng").outputs[0]


def decode_jpeg(contents, channels=0, ratio=1, fancy_upscaling=True, try_recover_truncated=False,
                acceptable_fraction=1, dct_method="", name=None):  # fmt: skip
    """`tf.image.decode_jpeg`: a JPEG's pixels as uint8 (Pillow's libjpeg; `ratio` and the
    decoder options other than `channels` are accepted and ignored)."""
    attrs = {"channels": int(channels), "dtype": "uint8"}
    return registry.make_op("DecodeJpeg", [_contents(contents)], attrs, name=name or "DecodeJpeg").outputs[0]


def decode_image(contents, channels=None, dtype=_dtypes.uint8, name=None, expand_animations=True):
    """`tf.image.decode_image`: a PNG, JPEG, GIF, BMP or WebP's pixels, converted to `dtype`
    by TF's `convert_image_dtype` rule; a GIF's or WebP's every frame
    (``[frames, height, width, channels]``), or the first only if not `expand_animations`."""
    attrs = {
        "channels": int(channels or 0),
        "dtype": _dtypes.as_dtype(dtype).name,
        "expand_animations": bool(expand_animations),
    }
    return registry.make_op("DecodeImage", [_contents(contents)], attrs, name=name or "decode_image").outputs[
        0
    ]


def encode_png(image, compression=-1, name=None):
    """`tf.image.encode_png`: a uint8 (or one-channel uint16) ``[height, width, channels]``
    image as PNG bytes; `compression` 0-9, -1 the default."""
    image = convert_to_tensor(image, name="image")
    attrs = {"compression": int(compression)}
    return registry.make_op("EncodePng", [image], attrs, name=name or "EncodePng").outputs[0]


def encode_jpeg(image, format="", quality=95, progressive=False, optimize_size=False,  # noqa: A002
                chroma_downsampling=True, density_unit="in", x_density=300, y_density=300,
                xmp_metadata="", name=None):  # fmt: skip
    """`tf.image.encode_jpeg`: a uint8 image as JPEG bytes at `quality` (other options are
    accepted and ignored)."""
    image = convert_to_tensor(image, name="image")
    if image.dtype != _dtypes.uint8:
        raise TypeError(f"tf.image.encode_jpeg: image must be uint8, got {image.dtype.name}")
    return registry.make_op(
        "EncodeJpeg", [image], {"quality": int(quality)}, name=name or "EncodeJpeg"
    ).outputs[0]


registry.shape("IsJpeg")(lambda inputs, attrs: [(_dtypes.bool, TensorShape([]))])
registry.kernel("IsJpeg")(
    lambda ctx, node, c: np.asarray(np.asarray(c, dtype=object).item()[:3] == b"\xff\xd8\xff")
)
registry.no_gradient("IsJpeg")


def is_jpeg(contents, name=None):
    """`tf.image.is_jpeg`: whether `contents` start with JPEG's magic bytes."""
    return registry.make_op("IsJpeg", [_contents(contents)], name=name or "is_jpeg").outputs[0]
