"""`tf.image`'s geometry and pixel-value functions: flips, rotations, crops and pads,
`convert_image_dtype`, brightness / contrast / gamma, standardisation, grayscale and the
YIQ / YUV colour spaces.

Each is TF 1.x's composition of existing ops (`tf.reverse`, `tf.slice`, `tf.pad`, casts and
arithmetic), so its gradient is the composition's, as in TF. Images are ``[height, width,
channels]`` or ``[batch, height, width, channels]``; sizes and offsets are Python ints (the
image's height and width must be known statically for the crops and pads).
"""

import numpy as np

from nbdist.graph import dtypes as _dtypes
from nbdist.graph.graph import get_default_graph
from nbdist.ops.cast_select_ops import cast
from nbdist.ops.clip_ops import clip_by_value
from nbdist.ops.concat_slice_ops import concat, pad, slice  # noqa: A004 - tf.slice
from nbdist.ops.constant_op import constant, convert_to_tensor
from nbdist.ops.math_ops import add, floordiv, maximum, multiply, sqrt, square
from nbdist.ops.random_ops import random_uniform
from nbdist.ops.reduction_ops import reduce_mean, reduce_sum
from nbdist.ops.reshape_ops import expand_dims, reverse, transpose
from nbdist.ops.shape_ops import shape, size
from nbdist.ops.unary_ops import identity

__all__ = [
    "adjust_brightness",
    "adjust_contrast",
    "adjust_gamma",
    "central_crop",
    "convert_image_dtype",
    "crop_to_bounding_box",
    "flip_left_right",
    "flip_up_down",
    "grayscale_to_rgb",
    "pad_to_bounding_box",
    "per_image_standardization",
    "random_brightness",
    "random_contrast",
    "random_crop",
    "random_flip_left_right",
    "random_flip_up_down",
    "resize_image_with_crop_or_pad",
    "rgb_to_grayscale",
    "rgb_to_yiq",
    "rgb_to_yuv",
    "rot90",
    "transpose_image",
    "yiq_to_rgb",
    "yuv_to_rgb",
]


def image_rank(image, what, ranks=(3, 4)):
    """The static rank of `image` (3 or 4), or a ValueError naming `what`."""
    ndims = image.shape.ndims
    if ndims not in ranks:
        raise ValueError(
            f"tf.image.{what}: 'image' (shape {image.shape}) must have "
            f"{' or '.join(map(str, ranks))} dimensions"
        )
    return ndims


def _height_width(image, what):
    ndims = image_rank(image, what)
    h, w = image.shape.dims[ndims - 3 : ndims - 1]
    if h is None or w is None:
        raise ValueError(
            f"tf.image.{what}: the image's height and width must be known, got shape {image.shape}"
        )
    return ndims, h, w


# -- flips, rotations, transposes -----------------------------------------------------------------
def flip_left_right(image):
    """`tf.image.flip_left_right`: reverses the width dimension."""
    image = convert_to_tensor(image, name="image")
    return reverse(image, [image_rank(image, "flip_left_right") - 2], name="flip_left_right")


def flip_up_down(image):
    """`tf.image.flip_up_down`: reverses the height dimension."""
    image = convert_to_tensor(image, name="image")
    return reverse(image, [image_rank(image, "flip_up_down") - 3], name="flip_up_down")


def _random_flip(image, axis, seed, what):
    image = convert_to_tensor(image, name="image")
    ndims = image_rank(image, what)
    with get_default_graph().name_scope(what):
        batch = [] if ndims == 3 else [shape(image)[0]]
        draw = random_uniform(batch, 0, 1.0, seed=seed)
        flips = cast(draw >= 0.5, image.dtype)  # TF: round(uniform); one draw per image
        if ndims == 4:
            flips = _reshape(flips, [-1, 1, 1, 1])
        return flips * reverse(image, [axis + ndims - 3]) + (1 - flips) * image


def _reshape(x, dims):
    from nbdist.ops.reshape_ops import reshape  # noqa: PLC0415 - only the batched flips use it

    return reshape(x, dims)


def random_flip_left_right(image, seed=None):
    """`tf.image.random_flip_left_right`: each image mirrored left-right with probability 1/2."""
    return _random_flip(image, 1, seed, "random_flip_left_right")


def random_flip_up_down(image, seed=None):
    """`tf.image.random_flip_up_down`: each image flipped upside down with probability 1/2."""
    return _random_flip(image, 0, seed, "random_flip_up_down")


def transpose_image(image, name=None):
    """`tf.image.transpose_image` (`tf.image.transpose`): swaps height and width."""
    image = convert_to_tensor(image, name="image")
    perm = [1, 0, 2] if image_rank(image, "transpose") == 3 else [0, 2, 1, 3]
    return transpose(image, perm, name=name or "transpose")


def rot90(image, k=1, name=None):
    """`tf.image.rot90`: rotates by ``k`` quarter turns counter-clockwise (`k` a Python int)."""
    image = convert_to_tensor(image, name="image")
    first = image_rank(image, "rot90") - 3  # the height axis
    with get_default_graph().name_scope(name or "rot90"):
        k = int(k) % 4
        perm = [0, 2, 1, 3][: first + 3] if first else [1, 0, 2]
        if k == 1:
            return transpose(reverse(image, [first + 1]), perm)
        if k == 2:
            return reverse(image, [first, first + 1])
        if k == 3:
            return reverse(transpose(image, perm), [first + 1])
        return image


# -- crops and pads -------------------------------------------------------------------------------
def crop_to_bounding_box(image, offset_height, offset_width, target_height, target_width):
    """`tf.image.crop_to_bounding_box`: the ``target_height x target_width`` box whose top-left
    corner is at (`offset_height`, `offset_width`).

    Raises:
        ValueError: the box does not lie inside the image.
    """
    image = convert_to_tensor(image, name="image")
    ndims, height, width = _height_width(image, "crop_to_bounding_box")
    if offset_width < 0 or offset_height < 0:
        raise ValueError("offset_width and offset_height must be >= 0.")
    if target_width <= 0 or target_height <= 0:
        raise ValueError("target_width and target_height must be > 0.")
    if width < target_width + offset_width:
        raise ValueError("width must be >= target + offset.")
    if height < target_height + offset_height:
        raise ValueError("height must be >= target + offset.")
    lead = [0] * (ndims - 3)
    return slice(
        image,
        [*lead, offset_height, offset_width, 0],
        [*(-1 for _ in lead), target_height, target_width, -1],
        name="crop_to_bounding_box",
    )


def pad_to_bounding_box(image, offset_height, offset_width, target_height, target_width):
    """`tf.image.pad_to_bounding_box`: `image` placed at (`offset_height`, `offset_width`) in a
    ``target_height x target_width`` image of zeros.

    Raises:
        ValueError: the image does not fit.
    """
    image = convert_to_tensor(image, name="image")
    ndims, height, width = _height_width(image, "pad_to_bounding_box")
    after_h = target_height - offset_height - height
    after_w = target_width - offset_width - width
    if offset_height < 0 or offset_width < 0:
        raise ValueError("offset_height and offset_width must be >= 0")
    if after_w < 0:
        raise ValueError("width must be <= target - offset")
    if after_h < 0:
        raise ValueError("height must be <= target - offset")
    paddings = [[0, 0]] * (ndims - 3) + [[offset_height, after_h], [offset_width, after_w], [0, 0]]
    return pad(image, paddings, name="pad_to_bounding_box")


def resize_image_with_crop_or_pad(image, target_height, target_width):
    """`tf.image.resize_image_with_crop_or_pad` (`resize_with_crop_or_pad`): centrally crops
    and / or pads with zeros to ``target_height x target_width``."""
    image = convert_to_tensor(image, name="image")
    _, height, width = _height_width(image, "resize_image_with_crop_or_pad")
    if target_height <= 0 or target_width <= 0:
        raise ValueError("target_height and target_width must be > 0")
    dh, dw = target_height - height, target_width - width
    cropped = image
    if dh < 0 or dw < 0:
        cropped = crop_to_bounding_box(
            image, max(-dh // 2, 0), max(-dw // 2, 0), min(target_height, height), min(target_width, width)
        )
    if dh > 0 or dw > 0:
        return pad_to_bounding_box(cropped, max(dh // 2, 0), max(dw // 2, 0), target_height, target_width)
    return cropped


def central_crop(image, central_fraction):
    """`tf.image.central_crop`: the central `central_fraction` of each dimension (in (0, 1])."""
    image = convert_to_tensor(image, name="image")
    if not 0.0 < central_fraction <= 1.0:
        raise ValueError("central_fraction must be within (0, 1]")
    if central_fraction == 1.0:
        return image
    ndims, height, width = _height_width(image, "central_crop")
    top = int((height - height * central_fraction) / 2)
    left = int((width - width * central_fraction) / 2)
    lead = [0] * (ndims - 3)
    return slice(
        image,
        [*lead, top, left, 0],
        [*(-1 for _ in lead), height - 2 * top, width - 2 * left, -1],
        name="central_crop",
    )


def random_crop(value, size, seed=None, name=None):
    """`tf.image.random_crop` (`tf.random_crop`): a slice of shape `size` at a random offset,
    seeded as TF's random ops.

    Raises:
        InvalidArgumentError: at run time, when `size` exceeds `value`'s shape.
    """
    value = convert_to_tensor(value, name="value")
    with get_default_graph().name_scope(name or "random_crop"):
        size = convert_to_tensor(size, dtype=_dtypes.int32, name="size")
        limit = shape(value) - size + 1
        offset = random_uniform(shape(size), 0, np.iinfo(np.int32).max, _dtypes.int32, seed=seed) % limit
        return slice(value, offset, size)


# -- pixel values --------------------------------------------------------------------------------
def _saturate_cast(x, dtype):
    lo = max(_limits(x.dtype)[0], _limits(dtype)[0])
    hi = min(_limits(x.dtype)[1], _limits(dtype)[1])
    if lo > _limits(x.dtype)[0] or hi < _limits(x.dtype)[1]:
        x = clip_by_value(x, constant(lo, x.dtype), constant(hi, x.dtype))
    return cast(x, dtype)


def _limits(dtype):
    info = np.finfo(dtype.np) if dtype.is_floating else np.iinfo(dtype.np)
    return float(info.min), float(info.max)


def convert_image_dtype(image, dtype, saturate=False, name=None):
    """`tf.image.convert_image_dtype`: TF's scaling between image dtypes: floats in [0, 1],
    integers over ``[0, dtype.max]``; float to integer multiplies by ``max + 0.5`` and
    truncates (`saturate` clips first, to avoid overflow); integer to integer shifts the range.

    Raises:
        AttributeError: `dtype` is neither a float nor an integer type (TF's error).
    """
    image = convert_to_tensor(image, name="image")
    dtype = _dtypes.as_dtype(dtype)
    if not (dtype.is_floating or dtype.is_integer):
        raise AttributeError("dtype must be either floating point or integer")
    if dtype == image.dtype:
        return identity(image, name=name)
    src = image.dtype
    with get_default_graph().name_scope(name or "convert_image"):
        if src.is_integer and dtype.is_integer:
            scale_in, scale_out = int(_limits(src)[1]), int(_limits(dtype)[1])
            if scale_in > scale_out:
                scaled = floordiv(image, constant((scale_in + 1) // (scale_out + 1), src))
                return _saturate_cast(scaled, dtype) if saturate else cast(scaled, dtype)
            converted = _saturate_cast(image, dtype) if saturate else cast(image, dtype)
            return multiply(converted, constant((scale_out + 1) // (scale_in + 1), dtype))
        if src.is_floating and dtype.is_floating:
            return cast(image, dtype)
        if src.is_integer:
            return multiply(cast(image, dtype), constant(1.0 / _limits(src)[1], dtype))
        scaled = multiply(image, constant(_limits(dtype)[1] + 0.5, src))
        return _saturate_cast(scaled, dtype) if saturate else cast(scaled, dtype)


def _as_float(image):
    """TF's rule: float16/float32 images are used as they are, others through float32."""
    if image.dtype in (_dtypes.float16, _dtypes.float32):
        return image
    return convert_image_dtype(image, _dtypes.float32)


def adjust_brightness(image, delta):
    """`tf.image.adjust_brightness`: adds `delta` (in [0, 1] units), saturating on the way back
    to `image`'s dtype."""
    image = convert_to_tensor(image, name="image")
    with get_default_graph().name_scope("adjust_brightness"):
        flt = _as_float(image)
        adjusted = add(flt, cast(delta, flt.dtype))
        return convert_image_dtype(adjusted, image.dtype, saturate=True)


def adjust_contrast(images, contrast_factor):
    """`tf.image.adjust_contrast`: ``(x - mean) * contrast_factor + mean``, the mean of each
    channel of each image (TF's `AdjustContrastv2`)."""
    images = convert_to_tensor(images, name="images")
    image_rank(images, "adjust_contrast")
    with get_default_graph().name_scope("adjust_contrast"):
        flt = _as_float(images)
        mean = reduce_mean(flt, axis=[-3, -2], keepdims=True)
        adjusted = (flt - mean) * cast(contrast_factor, flt.dtype) + mean
        return convert_image_dtype(adjusted, images.dtype, saturate=True)


def adjust_gamma(image, gamma=1, gain=1):
    """`tf.image.adjust_gamma`: ``gain * image ** gamma`` (in [0, 1] units).

    Raises:
        ValueError: `gamma` is negative.
    """
    image = convert_to_tensor(image, name="image")
    if not isinstance(gamma, type(image)) and gamma < 0:
        raise ValueError("Gamma should be a non-negative real number.")
    with get_default_graph().name_scope("adjust_gamma"):
        flt = _as_float(image)
        adjusted = cast(gain, flt.dtype) * flt ** cast(gamma, flt.dtype)
        return convert_image_dtype(adjusted, image.dtype, saturate=True)


def random_brightness(image, max_delta, seed=None):
    """`tf.image.random_brightness`: `adjust_brightness` by a delta uniform in
    ``[-max_delta, max_delta)``.

    Raises:
        ValueError: `max_delta` is negative.
    """
    if max_delta < 0:
        raise ValueError("max_delta must be non-negative.")
    delta = random_uniform([], -max_delta, max_delta, seed=seed)
    return adjust_brightness(image, delta)


def random_contrast(image, lower, upper, seed=None):
    """`tf.image.random_contrast`: `adjust_contrast` by a factor uniform in ``[lower, upper)``.

    Raises:
        ValueError: ``upper <= lower`` or ``lower < 0``.
    """
    if upper <= lower:
        raise ValueError("upper must be > lower.")
    if lower < 0:
        raise ValueError("lower must be non-negative.")
    factor = random_uniform([], lower, upper, seed=seed)
    return adjust_contrast(image, factor)


def per_image_standardization(image):
    """`tf.image.per_image_standardization`: each image scaled to mean 0 and variance 1,
    ``(x - mean) / max(stddev, 1 / sqrt(num_pixels))``, as float32."""
    image = convert_to_tensor(image, name="image")
    ndims = image_rank(image, "per_image_standardization")
    with get_default_graph().name_scope("per_image_standardization"):
        image = cast(image, _dtypes.float32)
        dims = image.shape.dims[-3:]
        if None not in dims:
            num_pixels = constant(float(np.prod(dims)), _dtypes.float32)
        else:
            num_pixels = cast(size(image), _dtypes.float32)
            if ndims == 4:
                num_pixels = num_pixels / cast(shape(image)[0], _dtypes.float32)
        axes = [-1, -2, -3]
        mean = reduce_mean(image, axis=axes, keepdims=True)
        stddev = sqrt(reduce_mean(square(image - mean), axis=axes, keepdims=True))
        adjusted = maximum(stddev, 1.0 / sqrt(num_pixels))
        return (image - mean) / adjusted


# -- colour spaces ------------------------------------------------------------------------------
def _channel_matmul(images, kernel):
    """``images[..., c] @ kernel``: the last dimension times a 3x3 matrix (TF's tensordot)."""
    k = constant(np.asarray(kernel), images.dtype)
    return reduce_sum(expand_dims(images, -1) * k, axis=-2)


def rgb_to_grayscale(images, name=None):
    """`tf.image.rgb_to_grayscale`: ITU-R 601 luma (0.2989 R + 0.5870 G + 0.1140 B), keeping a
    channel dimension of 1 and `images`' dtype."""
    images = convert_to_tensor(images, name="images")
    with get_default_graph().name_scope(name or "rgb_to_grayscale"):
        flt = convert_image_dtype(images, _dtypes.float32)
        weights = constant([0.2989, 0.5870, 0.1140], _dtypes.float32)
        gray = reduce_sum(flt * weights, axis=-1, keepdims=True)
        return convert_image_dtype(gray, images.dtype)


def grayscale_to_rgb(images, name=None):
    """`tf.image.grayscale_to_rgb`: the one channel repeated three times.

    Raises:
        ValueError: the last dimension is not 1.
    """
    images = convert_to_tensor(images, name="images")
    if images.shape.ndims is not None and (images.shape.ndims < 2 or images.shape.dims[-1] not in (1, None)):
        raise ValueError(f"Last dimension of a grayscale image should be size 1, got shape {images.shape}")
    return concat([images, images, images], -1, name=name or "grayscale_to_rgb")


_RGB_TO_YIQ = [
    [0.299, 0.59590059, 0.2115],
    [0.587, -0.27455667, -0.52273617],
    [0.114, -0.32134392, 0.31119955],
]
_YIQ_TO_RGB = [[1, 1, 1], [0.95598634, -0.27201283, -1.10674021], [0.6208248, -0.64720424, 1.70423049]]
_RGB_TO_YUV = [
    [0.299, -0.14714119, 0.61497538],
    [0.587, -0.28886916, -0.51496512],
    [0.114, 0.43601035, -0.10001026],
]
_YUV_TO_RGB = [[1, 1, 1], [0, -0.394642334, 2.03206185], [1.13988303, -0.58062185, 0]]


def rgb_to_yiq(images):
    """`tf.image.rgb_to_yiq`: float RGB in [0, 1] to YIQ."""
    return _channel_matmul(convert_to_tensor(images, name="images"), _RGB_TO_YIQ)


def yiq_to_rgb(images):
    """`tf.image.yiq_to_rgb`: YIQ back to RGB."""
    return _channel_matmul(convert_to_tensor(images, name="images"), _YIQ_TO_RGB)


def rgb_to_yuv(images):
    """`tf.image.rgb_to_yuv`: float RGB in [0, 1] to YUV."""
    return _channel_matmul(convert_to_tensor(images, name="images"), _RGB_TO_YUV)


def yuv_to_rgb(images):
    """`tf.image.yuv_to_rgb`: YUV back to RGB."""
    return _channel_matmul(convert_to_tensor(images, name="images"), _YUV_TO_RGB)
