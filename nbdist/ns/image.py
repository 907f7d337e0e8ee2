"""`tf.image`: TF 1.x's image names (nbdist/ops/image_*.py); a name at two paths in TF
(``transpose`` / ``transpose_image``, ``resize`` / ``resize_images``) is one function here."""

from nbdist._facade import unsupported as _unsupported
from nbdist.ops.image_analysis_ops import (
    image_gradients,
    non_max_suppression,
    psnr,
    sobel_edges,
    ssim,
    total_variation,
)
from nbdist.ops.image_boxes_ops import combined_non_max_suppression, sample_distorted_bounding_box
from nbdist.ops.image_codec_more_ops import (
    decode_and_crop_jpeg,
    decode_bmp,
    decode_gif,
    decode_webp,
    extract_jpeg_shape,
)
from nbdist.ops.image_codec_ops import decode_image, decode_jpeg, decode_png, encode_jpeg, encode_png, is_jpeg
from nbdist.ops.image_color_ops import (
    adjust_hue,
    adjust_saturation,
    hsv_to_rgb,
    random_hue,
    random_saturation,
    rgb_to_hsv,
)
from nbdist.ops.image_crop_ops import crop_and_resize, draw_bounding_boxes, extract_glimpse
from nbdist.ops.image_nms_ops import (
    non_max_suppression_overlaps,
    non_max_suppression_padded,
    non_max_suppression_with_scores,
)
from nbdist.ops.image_ops import (
    adjust_brightness,
    adjust_contrast,
    adjust_gamma,
    central_crop,
    convert_image_dtype,
    crop_to_bounding_box,
    flip_left_right,
    flip_up_down,
    grayscale_to_rgb,
    pad_to_bounding_box,
    per_image_standardization,
    random_brightness,
    random_contrast,
    random_crop,
    random_flip_left_right,
    random_flip_up_down,
    resize_image_with_crop_or_pad,
    rgb_to_grayscale,
    rgb_to_yiq,
    rgb_to_yuv,
    rot90,
    transpose_image,
    yiq_to_rgb,
    yuv_to_rgb,
)
from nbdist.ops.image_ops import resize_image_with_crop_or_pad as resize_with_crop_or_pad
from nbdist.ops.image_ops import transpose_image as transpose
from nbdist.ops.image_quality_ops import adjust_jpeg_quality, random_jpeg_quality, ssim_multiscale
from nbdist.ops.image_resize_more_ops import resize_area, resize_bicubic, resize_image_with_pad
from nbdist.ops.image_resize_ops import ResizeMethod, resize_bilinear, resize_images, resize_nearest_neighbor
from nbdist.ops.image_resize_ops import resize_images as resize
from nbdist.ops.patches_ops import extract_image_patches, extract_patches

__all__ = [
    "ResizeMethod",
    "adjust_brightness",
    "adjust_contrast",
    "adjust_gamma",
    "adjust_hue",
    "adjust_jpeg_quality",
    "adjust_saturation",
    "central_crop",
    "combined_non_max_suppression",
    "convert_image_dtype",
    "crop_and_resize",
    "crop_to_bounding_box",
    "decode_and_crop_jpeg",
    "decode_bmp",
    "decode_gif",
    "decode_image",
    "decode_jpeg",
    "decode_png",
    "decode_webp",
    "draw_bounding_boxes",
    "encode_jpeg",
    "encode_png",
    "extract_glimpse",
    "extract_image_patches",
    "extract_jpeg_shape",
    "extract_patches",
    "flip_left_right",
    "flip_up_down",
    "grayscale_to_rgb",
    "hsv_to_rgb",
    "image_gradients",
    "is_jpeg",
    "non_max_suppression",
    "non_max_suppression_overlaps",
    "non_max_suppression_padded",
    "non_max_suppression_with_scores",
    "pad_to_bounding_box",
    "per_image_standardization",
    "psnr",
    "random_brightness",
    "random_contrast",
    "random_crop",
    "random_flip_left_right",
    "random_flip_up_down",
    "random_hue",
    "random_jpeg_quality",
    "random_saturation",
    "resize",
    "resize_area",
    "resize_bicubic",
    "resize_bilinear",
    "resize_image_with_crop_or_pad",
    "resize_image_with_pad",
    "resize_images",
    "resize_nearest_neighbor",
    "resize_with_crop_or_pad",
    "rgb_to_grayscale",
    "rgb_to_hsv",
    "rgb_to_yiq",
    "rgb_to_yuv",
    "rot90",
    "sample_distorted_bounding_box",
    "sobel_edges",
    "ssim",
    "ssim_multiscale",
    "total_variation",
    "transpose",
    "transpose_image",
    "yiq_to_rgb",
    "yuv_to_rgb",
]


def __getattr__(name):
    return _unsupported("tf.image", name)
