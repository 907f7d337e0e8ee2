"""String codecs against real TensorFlow: web-safe base64 and `decode_compressed` (at `tf.io`
and the top level), and the dense Unicode ops `tf.strings.unicode_encode`,
`unicode_transcode` and `unicode_script`, each run in both libraries on the same inputs,
with TF's errors for bad input."""

import gzip
import zlib

import numpy as np
import pytest

import nbdist as tf

_RNG = np.random.default_rng(32)
RAW = np.array(
    [bytes(_RNG.integers(0, 256, n, dtype=np.uint8)) for n in (0, 1, 2, 3, 4, 5, 30, 301)], dtype=object
)
TEXT = np.array(["", "hello", "héllo wörld", "日本語", "🙂x🙂", "a\x00b\x1fc"], dtype=object)
B64 = np.array(["aGVsbG8", "aGVsbG8=", "", "YQ", "YQ==", "YR", "-_-_", "_w"], dtype=object)
ZLIB = np.array(
    [zlib.compress(s) for s in (b"abc", b"x" * 1000, b"", "日本".encode())], dtype=object
).reshape(2, 2)
GZIP = np.array([gzip.compress(s.encode()) for s in TEXT], dtype=object)
BROKEN_UTF8 = np.array(
    [
        b"a\xffb\xc3",
        b"\x01x\xe2\x82",
        "héllo".encode(),
        b"\xed\xa0\x80 \xf4\x90\x80\x80 \xe0\x80\xaf \xf0\x9f\x99",
    ],
    dtype=object,
)
WORDS = np.array([["a", "b", "c", "d"], ["e", "", "g", "héh"]], dtype=object)
CODE_POINTS = np.array([[72, 0x110000, -1, 0xD800, 105], [0x1F642, 0xE9, 0, 0x10FFFF, 0x4E00]], np.int32)
# Scripts of ICU's TF's Unicode version (newer code points are Unknown there).
SCRIPT_POINTS = np.array(
    [65, 0x3B1, 0x5D0, 0x4E00, 0x30A2, 0x3042, 0x410, 48, 0x300, -1, 0x110000, 0x10FFFF, 0x627, 0x905,
     0xE01, 0xAC00, 0x10A0, 0x1200, 0x13A0, 0x1780, 0x1820, 0x16A0, 0x10330, 0x1F600, 0x2028, 0x378],
    np.int32,
)  # fmt: skip


def _value(lib, build):
    with lib.Graph().as_default(), lib.Session() as sess:
        return sess.run(build(lib))


CASES = {
    "encode_base64": lambda t: [
        t.io.encode_base64(RAW),
        t.io.encode_base64(RAW.reshape(2, 4), pad=True),
        t.encode_base64(t.constant(b"\xff\xfe\xfd")),
    ],
    "decode_base64": lambda t: [
        t.io.decode_base64(B64),
        t.decode_base64(t.io.encode_base64(RAW, pad=True)),
        t.io.decode_base64(t.io.encode_base64(RAW.reshape(4, 2))),
    ],
    "decode_compressed": lambda t: [
        t.io.decode_compressed(ZLIB, "ZLIB"),
        t.decode_compressed(GZIP, compression_type="GZIP"),
        t.io.decode_compressed(RAW),
    ],
    "unicode_encode": lambda t: [
        t.strings.unicode_encode(CODE_POINTS, "UTF-8"),
        t.strings.unicode_encode(CODE_POINTS, "UTF-16-BE", errors="ignore"),
        t.strings.unicode_encode(CODE_POINTS[0], "UTF-32-BE", replacement_char=63),
        t.strings.unicode_encode(np.zeros((2, 0), np.int32), "UTF-8"),
    ],
    "unicode_transcode": lambda t: [
        t.strings.unicode_transcode(BROKEN_UTF8, "UTF-8", "UTF-16-BE"),
        t.strings.unicode_transcode(TEXT.reshape(2, 3), "UTF-8", "UTF-32-BE"),
        t.strings.unicode_transcode(BROKEN_UTF8, "UTF-8", "UTF-8", errors="ignore"),
        t.strings.unicode_transcode(
            TEXT, "UTF-8", "UTF-8", replacement_char=63, replace_control_characters=True
        ),
        t.strings.unicode_transcode(BROKEN_UTF8, "ISO-8859-1", "UTF-8"),
        t.strings.unicode_transcode([b"a\x80"], "US-ASCII", "UTF-8"),
        t.strings.unicode_transcode([b"\xd8\x00\x00a\xdc\x00"], "UTF-16-BE", "UTF-8", replacement_char=35),
    ],
    "ngrams": lambda t: [
        t.strings.ngrams(WORDS, 2),
        t.strings.ngrams(WORDS[0], 3, separator="-"),
        t.strings.ngrams(WORDS, (1, 2)),
        t.strings.ngrams(WORDS, 2, pad_values=("<s>", "</s>")),
        t.strings.ngrams(WORDS, 5),
        t.strings.ngrams(WORDS, 5, preserve_short_sequences=True),
        t.strings.ngrams(WORDS, [3, 4], pad_values="P", padding_width=1),
        t.strings.ngrams(WORDS, 4, pad_values="P"),
        t.strings.ngrams(np.zeros((2, 0), object), 2),
    ],
    "unicode_script": lambda t: [
        t.strings.unicode_script(SCRIPT_POINTS),
        t.strings.unicode_script(SCRIPT_POINTS[:24].reshape(4, 6)),
    ],
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_codec_matches_tensorflow(tf1, name):
    for ours, theirs in zip(_value(tf, CASES[name]), _value(tf1, CASES[name]), strict=True):
        ours, theirs = np.asarray(ours), np.asarray(theirs)
        assert (ours.dtype, ours.shape) == (theirs.dtype, theirs.shape)
        assert ours.tolist() == theirs.tolist()


def test_static_shapes_are_tensorflows(tf1):
    def shapes(t):
        with t.Graph().as_default():
            x = t.placeholder(t.string, [None, 3])
            c = t.placeholder(t.int32, [4, None])
            return [
                t.io.decode_base64(x).shape.as_list(),
                t.strings.unicode_transcode(x, "UTF-8", "UTF-8").shape.as_list(),
                t.strings.unicode_encode(c, "UTF-8").shape.as_list(),
                t.strings.unicode_encode(c[0], "UTF-8").shape.as_list(),
                t.strings.unicode_script(c).shape.as_list(),
                t.strings.ngrams(x, 2).shape.as_list(),
                t.strings.ngrams(x[0], (1, 2)).shape.as_list(),
            ]

    assert shapes(tf) == shapes(tf1)


BAD_RUNS = {
    "a+b/": ("decode_base64", "Invalid character found in base64"),
    "aGVsbG8==": ("decode_base64", "Invalid character found in base64"),
    "Y": ("decode_base64", "length cannot be 1 modulo 4"),
}


@pytest.mark.parametrize("lib_name", ["nbdist", "tensorflow"])
def test_bad_input_raises_as_in_tensorflow(tf1, lib_name):
    t = tf if lib_name == "nbdist" else tf1
    with t.Graph().as_default(), t.Session() as sess:
        for value, (_, message) in BAD_RUNS.items():
            with pytest.raises(t.errors.InvalidArgumentError, match=message):
                sess.run(t.io.decode_base64([value]))
        with pytest.raises(t.errors.DataLossError, match="inflate"):
            sess.run(t.io.decode_compressed([b"garbage"], "ZLIB"))
        with pytest.raises(t.errors.InvalidArgumentError, match="GZIP or NONE are supported"):
            sess.run(t.io.decode_compressed([b"x"], "LZ4"))
        with pytest.raises(
            t.errors.InvalidArgumentError, match="out of range for Unicode, or is a surrogate"
        ):
            sess.run(t.strings.unicode_encode([72, 0x110000], "UTF-8", errors="strict"))
        with pytest.raises(t.errors.InvalidArgumentError, match="Invalid formatting on input string"):
            sess.run(t.strings.unicode_transcode([b"a\xff"], "UTF-8", "UTF-8", errors="strict"))
        with pytest.raises(ValueError, match="'output_encoding' of 'UnicodeEncode' Op passed string 'UTF-7'"):
            t.strings.unicode_encode([1, 2], "UTF-7")
        with pytest.raises(ValueError, match="padding_width must be greater than 0"):
            t.strings.ngrams(["a"], 2, pad_values="P", padding_width=0)
        with pytest.raises(ValueError, match="pad_values must be provided"):
            t.strings.ngrams(["a"], 2, padding_width=1)
        with pytest.raises(
            TypeError, match="Expected int32 passed to parameter 'input' of op 'UnicodeScript'"
        ):
            t.strings.unicode_script(["a"])
        with pytest.raises(
            TypeError, match="Expected string passed to parameter 'input' of op 'DecodeBase64'"
        ):
            t.io.decode_base64([1])
        with pytest.raises(ValueError, match="rank must be at least 1"):
            t.strings.unicode_encode(3, "UTF-8")
