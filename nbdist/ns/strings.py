"""`tf.strings`: TF's string names over ops/string_ops.py (`join` is `string_join`, ...)."""

from nbdist._facade import unsupported as _unsupported
from nbdist.ops.string_codec_ops import unicode_encode, unicode_script, unicode_transcode
from nbdist.ops.string_hash_ops import string_to_hash_bucket as to_hash_bucket
from nbdist.ops.string_hash_ops import string_to_hash_bucket_fast as to_hash_bucket_fast
from nbdist.ops.string_hash_ops import string_to_hash_bucket_strong as to_hash_bucket_strong
from nbdist.ops.string_ngrams_ops import ngrams
from nbdist.ops.string_ops import (
    as_string,
    format,  # noqa: A004 - TF's name
    length,
    lower,
    reduce_join,
    regex_full_match,
    regex_replace,
    split,
    substr,
    unsorted_segment_join,
    upper,
)
from nbdist.ops.string_ops import string_join as join
from nbdist.ops.string_ops import string_strip as strip
from nbdist.ops.string_ops import string_to_number as to_number

__all__ = [
    "as_string",
    "format",
    "join",
    "length",
    "lower",
    "ngrams",
    "reduce_join",
    "regex_full_match",
    "regex_replace",
    "split",
    "strip",
    "substr",
    "to_hash_bucket",
    "to_hash_bucket_fast",
    "to_hash_bucket_strong",
    "to_number",
    "unicode_encode",
    "unicode_script",
    "unicode_transcode",
    "unsorted_segment_join",
    "upper",
]


def __getattr__(name):
    return _unsupported("tf.strings", name)
