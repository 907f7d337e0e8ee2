"""TFRecord files: TF's record framing, `tf.python_io`'s writer and iterator (TF's
``tensorflow/python/lib/io/tf_record.py``), and the framing of TensorBoard's event files.

A record is::

    uint64 length            little-endian
    uint32 masked_crc32c(length's 8 bytes)
    byte   data[length]
    uint32 masked_crc32c(data)

where ``masked_crc32c(b) = ((c >> 15) | (c << 17)) + 0xa282ead8 (mod 2**32)``, ``c`` the
CRC-32C (Castagnoli) of ``b``. A GZIP or ZLIB file is that byte stream compressed whole
(zlib's own streams, at zlib's default level, as TF writes them).

    with tf.python_io.TFRecordWriter("train.tfrecord") as writer:
        writer.write(example.SerializeToString())
    for record in tf.python_io.tf_record_iterator("train.tfrecord"):
        ...

A record that fails its checksum or ends early raises `tf.errors.DataLossError` naming the
file and the offset, as TF's reader does.
"""

import enum
import struct
import zlib

import google_crc32c

from nbdist import errors, file_errors

__all__ = ["TFRecordCompressionType", "TFRecordOptions", "TFRecordWriter", "tf_record_iterator"]

_LENGTH = struct.Struct("<Q")
_CRC = struct.Struct("<I")
_HEADER_BYTES = _LENGTH.size + _CRC.size
RECORD_OVERHEAD_BYTES = _HEADER_BYTES + _CRC.size  # a record's framing: length, its CRC, the data's CRC
_MASK_DELTA = 0xA282EAD8
_READ_CHUNK_BYTES = 256 * 1024


def masked_crc32c(data):
    """TF's masked CRC-32C of `data` (bytes), an int below 2**32."""
    crc = google_crc32c.value(bytes(data))
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + _MASK_DELTA) & 0xFFFFFFFF


def encode_record(data):
    """One record's bytes: the framing around `data`."""
    length = _LENGTH.pack(len(data))
    return b"".join((length, _CRC.pack(masked_crc32c(length)), data, _CRC.pack(masked_crc32c(data))))


class TFRecordCompressionType(enum.IntEnum):
    """How a TFRecord file is compressed (TF's values)."""

    NONE = 0
    ZLIB = 1
    GZIP = 2


_COMPRESSION_NAMES = {
    TFRecordCompressionType.NONE: "",
    TFRecordCompressionType.ZLIB: "ZLIB",
    TFRecordCompressionType.GZIP: "GZIP",
}
_ZLIB_WBITS = {"ZLIB": zlib.MAX_WBITS, "GZIP": zlib.MAX_WBITS | 16}


class TFRecordOptions:
    """Options of a TFRecord file: its compression and zlib's settings.

    Args:
        compression_type: a `TFRecordCompressionType`, or ``"GZIP"``, ``"ZLIB"``, ``""``/None.
        compression_level: zlib's level, 0-9 (default: zlib's default, 6).
        window_bits, mem_level, compression_strategy: zlib's deflate settings.
        flush_mode, input_buffer_size, output_buffer_size, compression_method: TF's buffer
            settings, accepted and not used (Python's zlib picks its own buffers).

    Raises:
        ValueError: an unknown compression type.
    """

    compression_type_map = _COMPRESSION_NAMES

    def __init__(
        self,
        compression_type=None,
        flush_mode=None,
        input_buffer_size=None,
        output_buffer_size=None,
        window_bits=None,
        compression_level=None,
        compression_method=None,
        mem_level=None,
        compression_strategy=None,
    ):
        if isinstance(compression_type, str) or compression_type is None:
            by_name = {v: k for k, v in _COMPRESSION_NAMES.items()}
            if (compression_type or "") not in by_name:
                raise ValueError(
                    f'Unsupported compression type {compression_type!r}: use "GZIP", "ZLIB" or "" '
                    "(or a tf.python_io.TFRecordCompressionType)"
                )
            compression_type = by_name[compression_type or ""]
        self.compression_type = TFRecordCompressionType(compression_type)
        self.flush_mode = flush_mode
        self.input_buffer_size = input_buffer_size
        self.output_buffer_size = output_buffer_size
        self.window_bits = window_bits
        self.compression_level = compression_level
        self.compression_method = compression_method
        self.mem_level = mem_level
        self.compression_strategy = compression_strategy

    @classmethod
    def get_compression_type_string(cls, options):
        """``"GZIP"``, ``"ZLIB"`` or ``""`` for `options` (a `TFRecordOptions`, a type, a string
        or None)."""
        return _COMPRESSION_NAMES[_as_options(options).compression_type]

    def _compressor(self):
        name = _COMPRESSION_NAMES[self.compression_type]
        if not name:
            return None
        level = zlib.Z_DEFAULT_COMPRESSION if self.compression_level is None else self.compression_level
        wbits = _ZLIB_WBITS[name] if self.window_bits is None else self.window_bits | (_ZLIB_WBITS[name] & 16)
        return zlib.compressobj(
            level,
            zlib.DEFLATED,
            wbits,
            self.mem_level or zlib.DEF_MEM_LEVEL,
            self.compression_strategy or zlib.Z_DEFAULT_STRATEGY,
        )

    def _decompressor(self):
        name = _COMPRESSION_NAMES[self.compression_type]
        return zlib.decompressobj(_ZLIB_WBITS[name]) if name else None

    def __repr__(self):
        return f"TFRecordOptions(compression_type={self.compression_type.name})"


def _as_options(options):
    if isinstance(options, TFRecordOptions):
        return options
    return TFRecordOptions(options)


class TFRecordWriter:
    """Writes records (bytes) to a TFRecord file at `path`, created or truncated.

    Args:
        path: the file's path.
        options: a `TFRecordOptions`, or a compression type (``"GZIP"``, ``"ZLIB"``).

    Raises:
        NotFoundError, PermissionDeniedError, ...: the file cannot be opened (TF's classes).
    """

    def __init__(self, path, options=None):
        self._path = str(path)
        self._compressor = _as_options(options)._compressor()
        try:
            self._file = open(self._path, "wb")  # noqa: SIM115 - closed by close()
        except OSError as e:
            raise file_errors.from_os_error(
                e, None, None, f"cannot open {self._path!r} for writing"
            ) from None
        self._closed = False

    @property
    def path(self):
        """The file being written (nbdist's addition)."""
        return self._path

    def write(self, record):
        """Appends one record: bytes (a ``str`` is written as UTF-8, as TF does).

        Raises:
            FailedPreconditionError: the writer is closed.
        """
        if self._closed:
            raise errors.FailedPreconditionError(None, None, f"Writer is closed ({self._path}).")
        if isinstance(record, str):
            record = record.encode()
        framed = encode_record(bytes(record))
        self._file.write(self._compressor.compress(framed) if self._compressor else framed)

    def flush(self):
        """Every record written so far reaches the file (a compressed stream is sync-flushed)."""
        if self._closed:
            raise errors.FailedPreconditionError(None, None, f"Writer is closed ({self._path}).")
        if self._compressor:
            self._file.write(self._compressor.flush(zlib.Z_SYNC_FLUSH))
        self._file.flush()

    def close(self):
        """Ends the stream and closes the file; a second close does nothing."""
        if self._closed:
            return
        self._closed = True
        try:
            if self._compressor:
                self._file.write(self._compressor.flush())
        finally:
            self._file.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()

    def __repr__(self):
        return f"<TFRecordWriter {self._path} ({'closed' if self._closed else 'open'})>"


def _chunks(path, options):
    """The file's (decompressed) bytes, a chunk at a time."""
    decompressor = _as_options(options)._decompressor()
    try:
        f = open(path, "rb")  # noqa: SIM115 - closed below
    except OSError as e:
        raise file_errors.from_os_error(e, None, None, f"cannot open {path!r} for reading") from None
    with f:
        while chunk := f.read(_READ_CHUNK_BYTES):
            if decompressor is None:
                yield chunk
                continue
            try:
                yield decompressor.decompress(chunk)
            except zlib.error as e:
                raise errors.DataLossError(
                    None, None, f"{path}: not a valid compressed stream: {e}"
                ) from None
        if decompressor is not None:
            yield decompressor.flush()


def tf_record_iterator(path, options=None):
    """Yields each record (bytes) of the TFRecord file at `path`, in order.

    Args:
        path: the file's path.
        options: a `TFRecordOptions`, or the compression type the file was written with.

    Raises:
        DataLossError: a record is corrupt (a checksum does not match) or truncated, naming
            the file and the record's offset.
        NotFoundError: no file at `path`.
    """
    path = str(path)
    buffer, offset = bytearray(), 0  # offset: of buffer[0] in the (decompressed) stream
    chunks = _chunks(path, options)
    exhausted = False

    def fill(nbytes):
        nonlocal exhausted
        while len(buffer) < nbytes and not exhausted:
            chunk = next(chunks, None)
            if chunk is None:
                exhausted = True
            else:
                buffer.extend(chunk)
        return len(buffer) >= nbytes

    while fill(1):
        if not fill(_HEADER_BYTES):
            raise _truncated(path, offset)
        length_bytes = bytes(buffer[: _LENGTH.size])
        (length_crc,) = _CRC.unpack_from(buffer, _LENGTH.size)
        if masked_crc32c(length_bytes) != length_crc:
            hint = " (Is this even a TFRecord file?)" if offset == 0 else ""
            raise errors.DataLossError(
                None,
                None,
                f"corrupted record at {offset}{hint} in {path}: the length's checksum does not match",
            )
        (length,) = _LENGTH.unpack(length_bytes)
        end = _HEADER_BYTES + length + _CRC.size
        if not fill(end):
            raise _truncated(path, offset)
        data = bytes(buffer[_HEADER_BYTES : _HEADER_BYTES + length])
        (data_crc,) = _CRC.unpack_from(buffer, _HEADER_BYTES + length)
        if masked_crc32c(data) != data_crc:
            raise errors.DataLossError(
                None,
                None,
                f"corrupted record at {offset + _HEADER_BYTES} in {path}: the data's checksum does not match",
            )
        del buffer[:end]
        offset += end
        yield data


def _truncated(path, offset):
    return errors.DataLossError(
        None, None, f"truncated record at {offset} in {path}: the file ends inside it"
    )
