"""The string hashes of TF's kernels, in Python, equal to TF's bit for bit.

- `hash64`: TF's ``Hash64(data, n, seed=0xDECAFCAFFE)`` (tensorflow/core/lib/hash/hash.cc, a
  MurmurHash64A variant), used by ``StringToHashBucket``.
- `fingerprint64`: FarmHash's ``Fingerprint64`` (``farmhashna::Hash64``, google/farmhash
  src/farmhash.cc), used by ``StringToHashBucketFast`` and ``Fingerprint``.
- `siphash24`: SipHash-2-4 (Aumasson and Bernstein, "SipHash: a fast short-input PRF", 2012)
  keyed by two 64-bit words, TF's ``StrongKeyedHash`` behind ``StringToHashBucketStrong``.

All take ``bytes`` and return an unsigned 64-bit ``int``; words are read little-endian, as
the C++ does on the machines TF runs on.
"""

import struct

__all__ = ["fingerprint64", "hash64", "siphash24"]

_MASK = (1 << 64) - 1


def _u64(b, i):
    return struct.unpack_from("<Q", b, i)[0]


def _u32(b, i):
    return struct.unpack_from("<I", b, i)[0]


def _rotr(v, shift):
    return v if shift == 0 else ((v >> shift) | (v << (64 - shift))) & _MASK


def _rotl(v, shift):
    return ((v << shift) | (v >> (64 - shift))) & _MASK


# -- TF's Hash64 -------------------------------------------------------------------------------
def hash64(data, seed=0xDECAFCAFFE):
    """TF's ``Hash64`` of `data`: 8-byte words mixed MurmurHash64A's way, the tail byte by byte."""
    m, r = 0xC6A4A7935BD1E995, 47
    n = len(data)
    h = (seed ^ (n * m)) & _MASK
    whole = n - n % 8
    for i in range(0, whole, 8):
        k = (_u64(data, i) * m) & _MASK
        k ^= k >> r
        k = (k * m) & _MASK
        h = ((h ^ k) * m) & _MASK
    tail = data[whole:]
    if tail:
        for j in range(len(tail) - 1, -1, -1):
            h ^= tail[j] << (8 * j)
        h = (h * m) & _MASK
    h ^= h >> r
    h = (h * m) & _MASK
    return h ^ (h >> r)


# -- FarmHash Fingerprint64 ----------------------------------------------------------------------
_K0 = 0xC3A5C85C97CB3127
_K1 = 0xB492B66FBE98F273
_K2 = 0x9AE16A3B2F90404F


def _shift_mix(v):
    return v ^ (v >> 47)


def _len16(u, v, mul):
    a = ((u ^ v) * mul) & _MASK
    a ^= a >> 47
    b = ((v ^ a) * mul) & _MASK
    b ^= b >> 47
    return (b * mul) & _MASK


def _len0to16(s, n):
    if n >= 8:
        mul = _K2 + n * 2
        a = (_u64(s, 0) + _K2) & _MASK
        b = _u64(s, n - 8)
        c = (_rotr(b, 37) * mul + a) & _MASK
        d = ((_rotr(a, 25) + b) * mul) & _MASK
        return _len16(c, d, mul)
    if n >= 4:
        mul = _K2 + n * 2
        return _len16((n + (_u32(s, 0) << 3)) & _MASK, _u32(s, n - 4), mul)
    if n > 0:
        y = (s[0] + (s[n >> 1] << 8)) & 0xFFFFFFFF
        z = (n + (s[n - 1] << 2)) & 0xFFFFFFFF
        return (_shift_mix(((y * _K2) ^ (z * _K0)) & _MASK) * _K2) & _MASK
    return _K2


def _len17to32(s, n):
    mul = _K2 + n * 2
    a = (_u64(s, 0) * _K1) & _MASK
    b = _u64(s, 8)
    c = (_u64(s, n - 8) * mul) & _MASK
    d = (_u64(s, n - 16) * _K2) & _MASK
    return _len16(
        (_rotr((a + b) & _MASK, 43) + _rotr(c, 30) + d) & _MASK,
        (a + _rotr((b + _K2) & _MASK, 18) + c) & _MASK,
        mul,
    )


def _len33to64(s, n):
    mul = _K2 + n * 2
    a = (_u64(s, 0) * _K2) & _MASK
    b = _u64(s, 8)
    c = (_u64(s, n - 8) * mul) & _MASK
    d = (_u64(s, n - 16) * _K2) & _MASK
    y = (_rotr((a + b) & _MASK, 43) + _rotr(c, 30) + d) & _MASK
    z = _len16(y, (a + _rotr((b + _K2) & _MASK, 18) + c) & _MASK, mul)
    e = (_u64(s, 16) * mul) & _MASK
    f = _u64(s, 24)
    g = ((y + _u64(s, n - 32)) * mul) & _MASK
    h = ((z + _u64(s, n - 24)) * mul) & _MASK
    return _len16(
        (_rotr((e + f) & _MASK, 43) + _rotr(g, 30) + h) & _MASK,
        (e + _rotr((f + a) & _MASK, 18) + g) & _MASK,
        mul,
    )


def _weak32(s, i, a, b):
    """FarmHash's ``WeakHashLen32WithSeeds`` of the 32 bytes at ``s[i:]`` and seeds `a`, `b`."""
    w, x, y, z = (_u64(s, i + 8 * k) for k in range(4))
    a = (a + w) & _MASK
    b = _rotr((b + a + z) & _MASK, 21)
    c = a
    a = (a + x + y) & _MASK
    b = (b + _rotr(a, 44)) & _MASK
    return (a + z) & _MASK, (b + c) & _MASK


def fingerprint64(data):
    """FarmHash's ``Fingerprint64`` (``farmhashna::Hash64``) of `data`."""
    s, n = bytes(data), len(data)
    if n <= 16:
        return _len0to16(s, n)
    if n <= 32:
        return _len17to32(s, n)
    if n <= 64:
        return _len33to64(s, n)
    seed = 81
    x = seed
    y = (seed * _K1 + 113) & _MASK
    z = (_shift_mix((y * _K2 + 113) & _MASK) * _K2) & _MASK
    v, w = (0, 0), (0, 0)
    x = (x * _K2 + _u64(s, 0)) & _MASK
    end = ((n - 1) // 64) * 64
    last64 = n - 64
    for i in range(0, end, 64):
        x = (_rotr((x + y + v[0] + _u64(s, i + 8)) & _MASK, 37) * _K1) & _MASK
        y = (_rotr((y + v[1] + _u64(s, i + 48)) & _MASK, 42) * _K1) & _MASK
        x ^= w[1]
        y = (y + v[0] + _u64(s, i + 40)) & _MASK
        z = (_rotr((z + w[0]) & _MASK, 33) * _K1) & _MASK
        v = _weak32(s, i, (v[1] * _K1) & _MASK, (x + w[0]) & _MASK)
        w = _weak32(s, i + 32, (z + w[1]) & _MASK, (y + _u64(s, i + 16)) & _MASK)
        z, x = x, z
    mul = _K1 + ((z & 0xFF) << 1)
    i = last64
    w0 = (w[0] + ((n - 1) & 63)) & _MASK
    v0 = (v[0] + w0) & _MASK
    w0 = (w0 + v0) & _MASK
    v, w = (v0, v[1]), (w0, w[1])
    x = (_rotr((x + y + v[0] + _u64(s, i + 8)) & _MASK, 37) * mul) & _MASK
    y = (_rotr((y + v[1] + _u64(s, i + 48)) & _MASK, 42) * mul) & _MASK
    x ^= (w[1] * 9) & _MASK
    y = (y + v[0] * 9 + _u64(s, i + 40)) & _MASK
    z = (_rotr((z + w[0]) & _MASK, 33) * mul) & _MASK
    v = _weak32(s, i, (v[1] * mul) & _MASK, (x + w[0]) & _MASK)
    w = _weak32(s, i + 32, (z + w[1]) & _MASK, (y + _u64(s, i + 16)) & _MASK)
    z, x = x, z
    return _len16(
        (_len16(v[0], w[0], mul) + _shift_mix(y) * _K0 + z) & _MASK,
        (_len16(v[1], w[1], mul) + x) & _MASK,
        mul,
    )


# -- SipHash-2-4 -------------------------------------------------------------------------------
def _sip_rounds(v, rounds):
    v0, v1, v2, v3 = v
    for _ in range(rounds):
        v0 = (v0 + v1) & _MASK
        v1 = _rotl(v1, 13) ^ v0
        v0 = _rotl(v0, 32)
        v2 = (v2 + v3) & _MASK
        v3 = _rotl(v3, 16) ^ v2
        v0 = (v0 + v3) & _MASK
        v3 = _rotl(v3, 21) ^ v0
        v2 = (v2 + v1) & _MASK
        v1 = _rotl(v1, 17) ^ v2
        v2 = _rotl(v2, 32)
    return [v0, v1, v2, v3]


def siphash24(key0, key1, data):
    """SipHash-2-4 of `data` under the 128-bit key ``(key0, key1)`` (two 64-bit words)."""
    k0, k1 = key0 & _MASK, key1 & _MASK
    v = [k0 ^ 0x736F6D6570736575, k1 ^ 0x646F72616E646F6D, k0 ^ 0x6C7967656E657261, k1 ^ 0x7465646279746573]
    n = len(data)
    padded = bytes(data) + b"\0" * (7 - n % 8) + bytes([n & 0xFF])
    for i in range(0, len(padded), 8):
        m = _u64(padded, i)
        v[3] ^= m
        v = _sip_rounds(v, 2)
        v[0] ^= m
    v[2] ^= 0xFF
    v = _sip_rounds(v, 4)
    return v[0] ^ v[1] ^ v[2] ^ v[3]
