"""`tf.image.ssim_multiscale` (TF's composition: SSIM's contrast-structure at each 2x
average-pooled scale, luminance at the last, a weighted geometric mean) and JPEG re-encoding:
`adjust_jpeg_quality` / `random_jpeg_quality` over `EncodeJpegVariableQuality` (Pillow's
libjpeg, so pixels are within JPEG's tolerance of TF's, not equal)."""

import io

import numpy as np

from nbdist.graph import dtypes as _dtypes
from nbdist.graph.graph import get_default_graph
from nbdist.graph.tensor_shape import TensorShape
from nbdist.ops import registry
from nbdist.ops._shapes import invalid_argument
from nbdist.ops.cast_select_ops import cast
from nbdist.ops.concat_slice_ops import concat, stack
from nbdist.ops.constant_op import constant, convert_to_tensor
from nbdist.ops.conv_ops import depthwise_conv2d
from nbdist.ops.image_codec_ops import decode_jpeg
from nbdist.ops.image_ops import convert_image_dtype
from nbdist.ops.math_ops import pow  # noqa: A004 - tf.pow
from nbdist.ops.pool_ops import avg_pool
from nbdist.ops.random_ops import random_uniform
from nbdist.ops.reduction_ops import reduce_mean, reduce_prod
from nbdist.ops.reshape_ops import reshape
from nbdist.ops.unary_ops import relu

__all__ = ["adjust_jpeg_quality", "random_jpeg_quality", "ssim_multiscale"]

_MSSSIM_WEIGHTS = (0.0448, 0.2856, 0.3001, 0.2363, 0.1333)


def _gaussian_kernel(size, sigma):
    """TF's ``_fspecial_gauss``: a normalised ``[size, size, 1, 1]`` Gaussian (float32)."""
    coords = np.arange(size, dtype=np.float32) - np.float32(size - 1) / np.float32(2)
    g = np.square(coords) * np.float32(-0.5 / np.square(np.float32(sigma)))
    g = (g[None, :] + g[:, None]).reshape(-1)
    g = np.exp(g - g.max())
    return (g / g.sum()).reshape(size, size, 1, 1).astype(np.float32)


def _ssim_per_channel(x, y, max_val, filter_size, filter_sigma, k1, k2):
    """TF's ``_ssim_per_channel`` on 4-D images: ``(ssim, cs)`` per image and channel."""
    height, width, depth = x.shape.dims[1:]
    if height < filter_size or width < filter_size:
        raise ValueError(
            f"tf.image.ssim_multiscale: an image of {height}x{width} at some scale is smaller than "
            f"filter_size {filter_size}; use larger images, fewer power_factors or a smaller filter_size"
        )
    kernel = constant(np.tile(_gaussian_kernel(filter_size, filter_sigma), [1, 1, depth, 1]))

    def reducer(t):
        return depthwise_conv2d(t, kernel, [1, 1, 1, 1], "VALID")

    c1, c2 = (k1 * max_val) ** 2, (k2 * max_val) ** 2
    mean0, mean1 = reducer(x), reducer(y)
    num0 = mean0 * mean1 * 2.0
    den0 = mean0 * mean0 + mean1 * mean1
    luminance = (num0 + c1) / (den0 + c1)
    num1 = reducer(x * y) * 2.0
    den1 = reducer(x * x + y * y)
    cs = (num1 - num0 + c2) / (den1 - den0 + c2)
    return reduce_mean(luminance * cs, [-3, -2]), reduce_mean(cs, [-3, -2])


def _halve(image):
    """TF's downscaling step: symmetric padding of an odd side by one, then a 2x2 average."""
    h, w = image.shape.dims[1:3]
    if h % 2:
        image = concat([image, image[:, h - 1 :]], 1)
    if w % 2:
        image = concat([image, image[:, :, w - 1 :]], 2)
    return avg_pool(image, [1, 2, 2, 1], [1, 2, 2, 1], "VALID")


def ssim_multiscale(
    img1, img2, max_val, power_factors=_MSSSIM_WEIGHTS, filter_size=11, filter_sigma=1.5, k1=0.01, k2=0.03
):
    """`tf.image.ssim_multiscale`: MS-SSIM (Wang et al. 2003) of two batches of images
    (``[..., h, w, c]``, static sizes), one scale per entry of `power_factors`, averaged over
    channels.

    Raises:
        ValueError: images of unknown or different static shapes, or too small for
            `filter_size` at the coarsest scale.
    """
    img1, img2 = convert_to_tensor(img1, name="img1"), convert_to_tensor(img2, name="img2")
    shape = img1.shape
    if shape.ndims is None or shape.ndims < 3 or not shape.is_fully_defined() or img2.shape != shape:
        raise ValueError(
            "tf.image.ssim_multiscale (nbdist): img1 and img2 need one fully known static shape, rank >= 3, "
            f"got {img1.shape} and {img2.shape}"
        )
    heads, tails = shape.as_list()[:-3], shape.as_list()[-3:]
    with get_default_graph().name_scope("MS-SSIM"):
        max_val = convert_image_dtype(cast(max_val, img1.dtype), _dtypes.float32)
        imgs = [reshape(convert_image_dtype(i, _dtypes.float32), [-1, *tails]) for i in (img1, img2)]
        mcs = []
        for k in range(len(power_factors)):
            with get_default_graph().name_scope(f"Scale{k}"):
                if k > 0:
                    imgs = [_halve(i) for i in imgs]
                ssim, cs = _ssim_per_channel(*imgs, max_val, filter_size, filter_sigma, k1, k2)
                mcs.append(relu(cs))
        mcs.pop()
        values = stack([*mcs, relu(ssim)], axis=-1)
        ms_ssim = reduce_prod(pow(values, np.asarray(power_factors, np.float32)), [-1])
        return reshape(reduce_mean(ms_ssim, [-1]), heads)


# -- EncodeJpegVariableQuality ----------------------------------------------------------------------
registry.shape("EncodeJpegVariableQuality")(lambda inputs, attrs: [(_dtypes.string, TensorShape([]))])
registry.no_gradient("EncodeJpegVariableQuality")

_MODES = {1: "L", 3: "RGB"}


@registry.kernel("EncodeJpegVariableQuality")
def _encode_jpeg_quality_kernel(ctx, node, image, quality):
    if image.ndim != 3 or image.shape[-1] not in _MODES:
        raise invalid_argument(
            node, f"{node.op}: image must be 3-dimensional with 1 or 3 channels, got {list(image.shape)}"
        )
    if np.ndim(quality) != 0 or not 0 <= int(quality) <= 100:
        raise invalid_argument(node, f"{node.op}: quality must be an integer in [0, 100], got {quality}")
    from PIL import Image  # noqa: PLC0415 - Pillow loads only when an image is coded

    pixels = image[..., 0] if image.shape[-1] == 1 else image
    buffer = io.BytesIO()
    Image.fromarray(np.ascontiguousarray(pixels), _MODES[image.shape[-1]]).save(
        buffer, "JPEG", quality=int(quality)
    )
    return np.array(buffer.getvalue(), dtype=object)


def adjust_jpeg_quality(image, jpeg_quality, dct_method="", name=None):
    """`tf.image.adjust_jpeg_quality`: a 3-D image (1 or 3 channels) JPEG-encoded at
    `jpeg_quality` (0-100, may be a tensor) and decoded again, in its own dtype."""
    with get_default_graph().name_scope(name or "adjust_jpeg_quality"):
        image = convert_to_tensor(image, name="image")
        channels = image.shape.as_list()[-1] if image.shape.ndims else None
        orig_dtype = image.dtype
        pixels = convert_image_dtype(image, _dtypes.uint8, saturate=True)
        quality = convert_to_tensor(jpeg_quality, dtype=_dtypes.int32)
        op_type = "EncodeJpegVariableQuality"
        encoded = registry.make_op(op_type, [pixels, quality], name=op_type).outputs[0]
        decoded = decode_jpeg(encoded, channels=channels or 0, dct_method=dct_method)
        return convert_image_dtype(decoded, orig_dtype, saturate=True)


def random_jpeg_quality(image, min_jpeg_quality, max_jpeg_quality, seed=None):
    """`tf.image.random_jpeg_quality`: `adjust_jpeg_quality` at a quality drawn uniformly from
    ``[min_jpeg_quality, max_jpeg_quality)``.

    Raises:
        ValueError: a bound outside [0, 100], or ``min >= max``.
    """
    if min(min_jpeg_quality, max_jpeg_quality) < 0 or max(min_jpeg_quality, max_jpeg_quality) > 100:
        raise ValueError("jpeg encoding range must be between 0 and 100.")
    if min_jpeg_quality >= max_jpeg_quality:
        raise ValueError("`min_jpeg_quality` must be less than `max_jpeg_quality`.")
    quality = random_uniform([], min_jpeg_quality, max_jpeg_quality, seed=seed, dtype=_dtypes.int32)
    return adjust_jpeg_quality(image, quality)
