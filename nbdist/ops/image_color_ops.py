"""`tf.image`'s HSV colour space: `RGBToHSV` / `HSVToRGB` and the hue and saturation
adjustments TF computes through it (`AdjustHue`, `AdjustSaturation`), with TF's formulas.
No gradients, as in TF 1.x."""

import numpy as np

from nbdist.graph import dtypes as _dtypes
from nbdist.graph.graph import get_default_graph
from nbdist.ops import registry
from nbdist.ops._shapes import invalid_argument, same_as_input
from nbdist.ops.constant_op import convert_to_tensor
from nbdist.ops.image_ops import convert_image_dtype
from nbdist.ops.random_ops import random_uniform

__all__ = ["adjust_hue", "adjust_saturation", "hsv_to_rgb", "random_hue", "random_saturation", "rgb_to_hsv"]


def _rgb_to_hsv(rgb):
    r, g, b = (rgb[..., i] for i in range(3))
    v = rgb.max(axis=-1)
    spread = v - rgb.min(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        s = np.where(v > 0, spread / np.where(v > 0, v, 1), 0)
        norm = 1.0 / (6.0 * spread)
        h = np.where(
            r == v, norm * (g - b), np.where(g == v, norm * (b - r) + 2.0 / 6.0, norm * (r - g) + 4.0 / 6.0)
        )
    h = np.where(spread > 0, h, 0)
    h = np.where(h < 0, h + 1, h)
    return np.stack([h, s, v], axis=-1).astype(rgb.dtype)


def _hsv_to_rgb(hsv):
    h, s, v = (hsv[..., i] for i in range(3))
    c = s * v
    m = v - c
    dh = h * 6
    category = dh.astype(np.int64)  # (truncation, as TF's static_cast<int>)
    x = c * (1 - np.abs(np.fmod(dh, 2) - 1))
    zero = np.zeros_like(c)
    table = [(c, x, zero), (x, c, zero), (zero, c, x), (zero, x, c), (x, zero, c), (c, zero, x)]
    out = np.zeros((*h.shape, 3), hsv.dtype)
    for k, channels in enumerate(table):
        mask = category == k
        for i in range(3):
            out[..., i] = np.where(mask, channels[i] + m, out[..., i])
    return out


def _check_rgb(node, images):
    if images.ndim < 1 or images.shape[-1] != 3:
        raise invalid_argument(node, f"{node.op}: input must have 3 channels, got shape {list(images.shape)}")


def _hsv_kernel(convert):
    def kernel(ctx, node, images):
        _check_rgb(node, images)
        return convert(images)

    return kernel


for _type, _fn in (("RGBToHSV", _rgb_to_hsv), ("HSVToRGB", _hsv_to_rgb)):
    registry.shape(_type)(same_as_input)
    registry.kernel(_type)(_hsv_kernel(_fn))
    registry.no_gradient(_type)


def _float_op(op_type, images, name):
    images = convert_to_tensor(images, name="images")
    if not images.dtype.is_floating:
        raise TypeError(f"tf.image: {op_type} takes float images, got {images.dtype.name}")
    return registry.make_op(op_type, [images], name=name or op_type).outputs[0]


def rgb_to_hsv(images, name=None):
    """`tf.image.rgb_to_hsv`: float RGB in [0, 1] to hue, saturation, value in [0, 1]."""
    return _float_op("RGBToHSV", images, name)


def hsv_to_rgb(images, name=None):
    """`tf.image.hsv_to_rgb`: HSV in [0, 1] back to RGB."""
    return _float_op("HSVToRGB", images, name)


# -- AdjustHue / AdjustSaturation -----------------------------------------------------------------
registry.shape("AdjustHue")(same_as_input)
registry.shape("AdjustSaturation")(same_as_input)
registry.no_gradient("AdjustHue")
registry.no_gradient("AdjustSaturation")


@registry.kernel("AdjustHue")
def _adjust_hue_kernel(ctx, node, images, delta):
    _check_rgb(node, images)
    hsv = _rgb_to_hsv(images.astype(np.float32))
    h = np.fmod(hsv[..., 0] + np.float32(delta), np.float32(1))
    hsv[..., 0] = np.where(h < 0, h + 1, h)
    return _hsv_to_rgb(hsv).astype(images.dtype)


@registry.kernel("AdjustSaturation")
def _adjust_saturation_kernel(ctx, node, images, scale):
    _check_rgb(node, images)
    hsv = _rgb_to_hsv(images.astype(np.float32))
    hsv[..., 1] = np.clip(hsv[..., 1] * np.float32(scale), 0, 1)
    return _hsv_to_rgb(hsv).astype(images.dtype)


def _adjust(op_type, image, amount, name, what):
    image = convert_to_tensor(image, name="image")
    with get_default_graph().name_scope(name or what):
        flt = (
            image
            if image.dtype in (_dtypes.float16, _dtypes.float32)
            else convert_image_dtype(image, _dtypes.float32)
        )
        amount = convert_to_tensor(amount, dtype=_dtypes.float32)
        adjusted = registry.make_op(op_type, [flt, amount], name=op_type).outputs[0]
        return convert_image_dtype(adjusted, image.dtype)


def adjust_hue(image, delta, name=None):
    """`tf.image.adjust_hue`: rotates each pixel's hue by `delta` (in [-1, 1], a full turn)."""
    return _adjust("AdjustHue", image, delta, name, "adjust_hue")


def adjust_saturation(image, saturation_factor, name=None):
    """`tf.image.adjust_saturation`: multiplies each pixel's saturation by `saturation_factor`,
    clipped to [0, 1]."""
    return _adjust("AdjustSaturation", image, saturation_factor, name, "adjust_saturation")


def random_hue(image, max_delta, seed=None):
    """`tf.image.random_hue`: `adjust_hue` by a delta uniform in ``[-max_delta, max_delta)``.

    Raises:
        ValueError: `max_delta` is outside [0, 0.5].
    """
    if max_delta > 0.5:
        raise ValueError("max_delta must be <= 0.5.")
    if max_delta < 0:
        raise ValueError("max_delta must be non-negative.")
    return adjust_hue(image, random_uniform([], -max_delta, max_delta, seed=seed))


def random_saturation(image, lower, upper, seed=None):
    """`tf.image.random_saturation`: `adjust_saturation` by a factor uniform in ``[lower, upper)``.

    Raises:
        ValueError: ``upper <= lower`` or ``lower < 0``.
    """
    if upper <= lower:
        raise ValueError("upper must be > lower.")
    if lower < 0:
        raise ValueError("lower must be non-negative.")
    return adjust_saturation(image, random_uniform([], lower, upper, seed=seed))
