"""RecordBatch v2 (magic 2): header parsing, validation, offset stamping, decoding, building.

Contract:
- Batches are stored verbatim. The leader changes only baseOffset and partitionLeaderEpoch
  (`stamp_batch`), both outside the CRC, which covers attributes..end; compressed batches
  are never decompressed on the append path.
- `iter_batches` frames a buffer into (BatchHeader, memoryview) pairs without copying.
- `decode_records` decompresses (gzip, snappy with xerial framing, lz4 frame, zstd) and is
  meant for dump-log --print-data, ListOffsets by timestamp and tests, not the hot path; it is
  also the reference the validator's C record walk is tested against. `records_payload` is
  the bounded decompression both share.
- `build_batch` is a small producer-side builder for tests and the benchmark's null broker.

Layout (big-endian): baseOffset i64 @0, batchLength i32 @8, partitionLeaderEpoch i32 @12,
magic i8 @16, crc u32 @17, attributes i16 @21, lastOffsetDelta i32 @23, baseTimestamp i64 @27,
maxTimestamp i64 @35, producerId i64 @43, producerEpoch i16 @51, baseSequence i32 @53,
recordsCount i32 @57, records @61.
"""

from __future__ import annotations

import gzip
import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass

import crc32c

from broker_app.environment import wall_ms

from .errors import CorruptRecordError, InvalidRecordError

HEADER_STRUCT = struct.Struct(">qiibIhiqqqhii")
RECORD_BATCH_OVERHEAD = HEADER_STRUCT.size  # 61
LOG_OVERHEAD = 12  # baseOffset + batchLength: the part not counted in batchLength
CRC_OFFSET = 17
ATTRIBUTES_OFFSET = 21
MAGIC_OFFSET = 16
# Largest batchLength we will even try to frame; Kafka's cap is the segment size (int32).
MAX_BATCH_LENGTH = 2**31 - 1 - LOG_OVERHEAD

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_PARTITION_LEADER_EPOCH = -1
INT32_MAX = 2**31 - 1

COMPRESSION_NONE, COMPRESSION_GZIP, COMPRESSION_SNAPPY, COMPRESSION_LZ4, COMPRESSION_ZSTD = range(5)
COMPRESSION_NAMES = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}
TIMESTAMP_TYPE_MASK = 0x08
TRANSACTIONAL_MASK = 0x10
CONTROL_MASK = 0x20

_PREFIX = struct.Struct(">qi")  # baseOffset, batchLength
_STAMP = struct.Struct(">q")
_EPOCH = struct.Struct(">i")
_XERIAL_MAGIC = b"\x82SNAPPY\x00"
# Bound on one batch's decompressed records (not a Kafka setting: Kafka streams the inner
# records, this broker holds them in memory while it validates them). 16x message.max.bytes:
# clients batch about 1 MB before compression (librdkafka's batch.size), so real batches stay
# far below it, while a decompression bomb costs at most this much memory and CPU.
DEFAULT_MAX_DECOMPRESSED_BYTES = 16 * 1024 * 1024
ZSTD_MAX_WINDOW = 1 << 24  # zstd frames asking for a larger window are refused
_PIECE = 1 << 20  # decompress in pieces of this size, so a bomb never doubles the peak


def increment_sequence(sequence: int, increment: int) -> int:
    """Kafka's DefaultRecordBatch.incrementSequence: sequences wrap at INT32_MAX to 0."""
    if sequence > INT32_MAX - increment:
        return increment - (INT32_MAX - sequence) - 1
    return sequence + increment


@dataclass(frozen=True, slots=True)
class BatchHeader:
    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1

    @property
    def size(self) -> int:
        return LOG_OVERHEAD + self.batch_length

    @property
    def compression(self) -> int:
        return self.attributes & 0x07

    @property
    def timestamp_type(self) -> str:
        return "LogAppendTime" if self.attributes & TIMESTAMP_TYPE_MASK else "CreateTime"

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_MASK)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_MASK)

    @property
    def last_sequence(self) -> int:
        if self.base_sequence == NO_SEQUENCE:
            return NO_SEQUENCE
        return increment_sequence(self.base_sequence, self.last_offset_delta)

    @property
    def has_producer_id(self) -> bool:
        return self.producer_id >= 0


def parse_header(buf: bytes | memoryview, position: int = 0) -> BatchHeader:
    """Parse the 61-byte header at `position`; the caller ensures enough bytes."""
    return BatchHeader(*HEADER_STRUCT.unpack_from(buf, position))


def iter_batches(
    buf: bytes | bytearray | memoryview, *, allow_partial_tail: bool
) -> Iterator[tuple[BatchHeader, memoryview]]:
    """Yield (header, view) for each whole batch in `buf`.

    A trailing partial batch is skipped if `allow_partial_tail` (fetch responses may end
    mid-batch) and otherwise raises CorruptRecordError naming its position. A batchLength
    that cannot be a v2 batch always raises: framing past it would be guesswork.
    """
    view = memoryview(buf)
    end = len(view)
    pos = 0
    while pos < end:
        if end - pos < LOG_OVERHEAD:
            if allow_partial_tail:
                return
            raise CorruptRecordError(
                f"truncated batch at position {pos}: {end - pos} bytes, "
                f"need {LOG_OVERHEAD} for baseOffset+batchLength"
            )
        base_offset, batch_length = _PREFIX.unpack_from(view, pos)
        if batch_length < RECORD_BATCH_OVERHEAD - LOG_OVERHEAD or batch_length > MAX_BATCH_LENGTH:
            raise CorruptRecordError(
                f"batchLength {batch_length} out of range at position {pos} "
                f"(baseOffset {base_offset}); minimum is {RECORD_BATCH_OVERHEAD - LOG_OVERHEAD}"
            )
        size = LOG_OVERHEAD + batch_length
        if end - pos < size:
            if allow_partial_tail:
                return
            raise CorruptRecordError(
                f"truncated batch at position {pos} (baseOffset {base_offset}): "
                f"batch size {size}, only {end - pos} bytes present"
            )
        if view[pos + MAGIC_OFFSET] != 2:
            raise CorruptRecordError(
                f"bad magic {view[pos + MAGIC_OFFSET]} at position {pos} "
                f"(baseOffset {base_offset}); only magic 2 (RecordBatch v2) is supported"
            )
        yield parse_header(view, pos), view[pos : pos + size]
        pos += size


def compute_crc(view: bytes | memoryview) -> int:
    """CRC32C over attributes..end of one batch."""
    return crc32c.crc32c(memoryview(view)[ATTRIBUTES_OFFSET:])


def validate_batch(view: bytes | memoryview, header: BatchHeader | None = None) -> BatchHeader:
    """Check one framed batch: length, magic, CRC32C, record count. Returns its header."""
    view = memoryview(view)
    if len(view) < RECORD_BATCH_OVERHEAD:
        raise CorruptRecordError(
            f"batch of {len(view)} bytes is smaller than the v2 header ({RECORD_BATCH_OVERHEAD})"
        )
    h = header or parse_header(view)
    if h.magic != 2:
        raise CorruptRecordError(f"bad magic {h.magic} in batch at baseOffset {h.base_offset}")
    if h.size != len(view):
        raise CorruptRecordError(
            f"batchLength {h.batch_length} does not match the {len(view)} bytes framed "
            f"for baseOffset {h.base_offset}"
        )
    computed = compute_crc(view)
    if computed != h.crc:
        raise CorruptRecordError(
            f"CRC32C mismatch in batch at baseOffset {h.base_offset}: "
            f"stored crc {h.crc}, computed {computed}"
        )
    if h.records_count < 1 or h.last_offset_delta != h.records_count - 1:
        # Kafka: "Inner record count must match lastOffsetDelta + 1" (batches we store
        # are never compacted, so the count is exact).
        raise InvalidRecordError(
            f"recordsCount {h.records_count} does not match lastOffsetDelta "
            f"{h.last_offset_delta} + 1 in batch at baseOffset {h.base_offset}"
        )
    return h


def stamp_pieces(
    view: bytes | memoryview, base_offset: int, partition_leader_epoch: int
) -> list[bytes | memoryview]:
    """The batch as buffers to join, with baseOffset and partitionLeaderEpoch rewritten.

    Both fields precede the CRC'd region, so the CRC stays valid. The pieces view `view`
    (no copy): `b"".join` of the pieces of several batches is then the append's only copy of
    the data, where copying each batch first cost a second copy of every byte (and, for
    batches of hundreds of KB, the page faults of a second large allocation).
    """
    v = memoryview(view)
    if len(v) < 16:  # too short to hold both fields: the copy-and-patch's struct.error
        short = bytearray(v)
        _STAMP.pack_into(short, 0, base_offset)
        _EPOCH.pack_into(short, 12, partition_leader_epoch)
    return [_STAMP.pack(base_offset), v[8:12], _EPOCH.pack(partition_leader_epoch), v[16:]]


def stamp_batch(view: bytes | memoryview, base_offset: int, partition_leader_epoch: int) -> bytes:
    """Return a copy of the batch with baseOffset and partitionLeaderEpoch rewritten."""
    return b"".join(stamp_pieces(view, base_offset, partition_leader_epoch))


# --- decoding (dump-log, tests) ---------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Record:
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]]
    sequence: int = NO_SEQUENCE


def _read_varint(buf: bytes, pos: int) -> tuple[int, int]:
    """Zigzag varint (Kafka's ByteUtils.readVarlong); returns (value, new position)."""
    shift = 0
    raw = 0
    while True:
        if pos >= len(buf):
            raise InvalidRecordError(f"varint runs past the end of the records at byte {pos}")
        b = buf[pos]
        pos += 1
        raw |= (b & 0x7F) << shift
        if not b & 0x80:
            break
        shift += 7
        if shift > 63:
            raise InvalidRecordError(f"varint longer than 10 bytes ending at byte {pos}")
    return (raw >> 1) ^ -(raw & 1), pos


def _write_varint(value: int, out: bytearray) -> None:
    raw = (value << 1) ^ (value >> 63)
    raw &= 0xFFFFFFFFFFFFFFFF
    while raw >= 0x80:
        out.append((raw & 0x7F) | 0x80)
        raw >>= 7
    out.append(raw)


def _read_bytes(buf: bytes, pos: int, what: str) -> tuple[bytes | None, int]:
    n, pos = _read_varint(buf, pos)
    if n < 0:
        return None, pos
    if pos + n > len(buf):
        raise InvalidRecordError(f"{what} of {n} bytes runs past the end of the records")
    return bytes(buf[pos : pos + n]), pos + n


class DecompressedTooLargeError(CorruptRecordError):
    """A compressed batch would expand beyond the limit the caller set."""


def _too_large(codec: int, limit: int) -> DecompressedTooLargeError:
    return DecompressedTooLargeError(
        f"{COMPRESSION_NAMES[codec]} payload expands beyond the {limit}-byte limit"
    )


def _snappy_decompress(data: bytes, limit: int) -> bytes:
    import cramjam

    def block(raw: bytes, produced: int) -> bytes:
        # The raw format starts with the uncompressed length: check it before decoding,
        # so a lying header cannot make the native decoder allocate.
        if int(cramjam.snappy.decompress_raw_len(raw)) > limit - produced:
            raise _too_large(COMPRESSION_SNAPPY, limit)
        return bytes(cramjam.snappy.decompress_raw(raw))

    if data.startswith(_XERIAL_MAGIC):
        # xerial framing: 8-byte magic, version i32, compatible i32, then [len i32][block]...
        out = bytearray()
        pos = 16
        while pos < len(data):
            if len(data) - pos < 4:
                raise CorruptRecordError(f"xerial snappy block header truncated at byte {pos}")
            (n,) = struct.unpack_from(">i", data, pos)
            pos += 4
            if n < 0 or pos + n > len(data):
                raise CorruptRecordError(
                    f"xerial snappy block of {n} bytes at byte {pos}, {len(data) - pos} left"
                )
            out += block(data[pos : pos + n], len(out))
            pos += n
        return bytes(out)
    return block(data, 0)


def _gzip_decompress(data: bytes, limit: int) -> bytes | bytearray:
    out = bytearray()
    rest = data
    while rest:  # a gzip stream may hold several members, as GZIPInputStream reads them
        d = zlib.decompressobj(31)
        chunk = rest
        while not d.eof:
            # Pieces of at most 1 MiB (max_length >= 1: 0 would mean unlimited).
            piece = d.decompress(chunk, min(_PIECE, limit + 1 - len(out)))
            out += piece
            if len(out) > limit:
                raise _too_large(COMPRESSION_GZIP, limit)
            chunk = d.unconsumed_tail
            if not chunk and not piece:
                break
        if not d.eof:
            raise CorruptRecordError("gzip stream ends before its end marker")
        rest = d.unused_data
    return out  # no final copy: peak memory stays one buffer


def _lz4_decompress(data: bytes, limit: int) -> bytes | bytearray:
    import lz4.frame

    d = lz4.frame.LZ4FrameDecompressor()
    out = bytearray(d.decompress(data, max_length=min(_PIECE, limit + 1)))
    while len(out) <= limit and not d.eof and not d.needs_input:
        out += d.decompress(b"", max_length=min(_PIECE, limit + 1 - len(out)))
    if len(out) > limit:
        raise _too_large(COMPRESSION_LZ4, limit)
    if not d.eof:
        raise CorruptRecordError("lz4 frame ends before its end mark")
    return out  # no final copy: peak memory stays one buffer


def _zstd_decompress(data: bytes, limit: int) -> bytes | bytearray:
    import zstandard

    # Kafka's zstd frames may omit the content size; stream with a bounded window and output.
    d = zstandard.ZstdDecompressor(max_window_size=ZSTD_MAX_WINDOW)
    out = bytearray()
    with d.stream_reader(data, read_across_frames=True) as reader:
        while True:
            chunk = reader.read(min(_PIECE, limit + 1 - len(out)))
            if not chunk:
                break
            out += chunk
            if len(out) > limit:
                raise _too_large(COMPRESSION_ZSTD, limit)
    return out  # no final copy: peak memory stays one buffer


def _snappy_compress(data: bytes) -> bytes:
    import cramjam

    # One xerial block, like Kafka's SnappyOutputStream with a large block size.
    block = bytes(cramjam.snappy.compress_raw(data))
    return _XERIAL_MAGIC + struct.pack(">ii", 1, 1) + struct.pack(">i", len(block)) + block


def decompress(
    codec: int, data: bytes, limit: int = DEFAULT_MAX_DECOMPRESSED_BYTES
) -> bytes | bytearray:
    """Decompress a batch's records, never producing (or allocating) more than `limit` bytes:
    every codec is streamed with an output bound, none is a one-shot native call trusting a
    size the payload claims."""
    if codec == COMPRESSION_NONE:
        return data
    if codec == COMPRESSION_GZIP:
        return _gzip_decompress(data, limit)
    if codec == COMPRESSION_SNAPPY:
        return _snappy_decompress(data, limit)
    if codec == COMPRESSION_LZ4:
        return _lz4_decompress(data, limit)
    if codec == COMPRESSION_ZSTD:
        return _zstd_decompress(data, limit)
    raise CorruptRecordError(f"unknown compression codec {codec} in batch attributes")


def compress(codec: int, data: bytes) -> bytes:
    if codec == COMPRESSION_NONE:
        return data
    if codec == COMPRESSION_GZIP:
        return gzip.compress(data)
    if codec == COMPRESSION_SNAPPY:
        return _snappy_compress(data)
    if codec == COMPRESSION_LZ4:
        import lz4.frame

        return lz4.frame.compress(data)
    if codec == COMPRESSION_ZSTD:
        import zstandard

        return zstandard.ZstdCompressor().compress(data)
    raise ValueError(f"unknown compression codec {codec}")


def records_payload(
    view: bytes | memoryview, h: BatchHeader, limit: int, *, copy: bool = False
) -> bytes | bytearray | memoryview:
    """The inner records of one batch (bytes 61..h.size), decompressed within `limit` bytes.

    An uncompressed batch gives a view of `view` unless `copy`. CorruptRecordError (or its
    DecompressedTooLargeError) naming the batch when the payload does not decompress.
    """
    body = memoryview(view)[RECORD_BATCH_OVERHEAD : h.size]
    if h.compression == COMPRESSION_NONE:
        return bytes(body) if copy else body
    try:
        return decompress(h.compression, bytes(body), limit)
    except CorruptRecordError as exc:
        raise type(exc)(f"{exc} (batch at baseOffset {h.base_offset})") from exc
    except Exception as exc:  # codec libraries raise their own types
        raise CorruptRecordError(
            f"cannot decompress {COMPRESSION_NAMES.get(h.compression)} batch at baseOffset "
            f"{h.base_offset}: {type(exc).__name__}: {exc}"
        ) from exc


def decode_records(
    view: bytes | memoryview, limit: int = DEFAULT_MAX_DECOMPRESSED_BYTES
) -> list[Record]:
    """Decode every record of one batch (decompressing at most `limit` bytes).

    CorruptRecordError when the payload does not decompress; InvalidRecordError (its subclass)
    when the records do not parse: a length or count past the end, a negative header count, a
    null header key, or bytes left after recordsCount records (Kafka's DefaultRecord rules).
    """
    h = parse_header(view)
    body = records_payload(view, h, limit, copy=True)
    records: list[Record] = []
    pos = 0
    where = f"batch at baseOffset {h.base_offset}"
    for i in range(h.records_count):
        length, pos = _read_varint(body, pos)
        end = pos + length
        if length < 1 or end > len(body):
            raise InvalidRecordError(
                f"record {i} of {where} has length {length}, only {len(body) - pos} bytes left"
            )
        pos += 1  # record attributes, unused
        ts_delta, pos = _read_varint(body, pos)
        off_delta, pos = _read_varint(body, pos)
        key, pos = _read_bytes(body, pos, "key")
        value, pos = _read_bytes(body, pos, "value")
        n_headers, pos = _read_varint(body, pos)
        if n_headers < 0 or n_headers > (end - pos) // 2:
            raise InvalidRecordError(f"record {i} of {where}: invalid header count {n_headers}")
        headers: list[tuple[str, bytes | None]] = []
        for _ in range(n_headers):
            hk, pos = _read_bytes(body, pos, "header key")
            if hk is None:
                raise InvalidRecordError(f"record {i} of {where}: null header key")
            hv, pos = _read_bytes(body, pos, "header value")
            headers.append((hk.decode("utf-8", "replace"), hv))
        if pos != end:
            raise InvalidRecordError(
                f"record {i} of {where}: length says {length} bytes, fields used "
                f"{length + pos - end}"
            )
        seq = (
            NO_SEQUENCE
            if h.base_sequence == NO_SEQUENCE
            else increment_sequence(h.base_sequence, off_delta)
        )
        records.append(
            Record(h.base_offset + off_delta, h.base_timestamp + ts_delta, key, value, headers, seq)
        )
    if pos != len(body):
        raise InvalidRecordError(
            f"{where}: {len(body) - pos} bytes left after its {h.records_count} records"
        )
    return records


# --- building (tests, benchmark) ---------------------------------------------------------


def _encode_record(
    offset_delta: int,
    ts_delta: int,
    key: bytes | None,
    value: bytes | None,
    headers: list[tuple[str, bytes | None]] | None,
) -> bytes:
    body = bytearray(b"\x00")  # attributes
    _write_varint(ts_delta, body)
    _write_varint(offset_delta, body)
    for field in (key, value):
        if field is None:
            _write_varint(-1, body)
        else:
            _write_varint(len(field), body)
            body += field
    _write_varint(len(headers or ()), body)
    for hk, hv in headers or ():
        kb = hk.encode()
        _write_varint(len(kb), body)
        body += kb
        if hv is None:
            _write_varint(-1, body)
        else:
            _write_varint(len(hv), body)
            body += hv
    out = bytearray()
    _write_varint(len(body), out)
    return bytes(out + body)


def build_batch(
    records: list[tuple[bytes | None, bytes | None]]
    | list[tuple[bytes | None, bytes | None, list[tuple[str, bytes | None]]]],
    *,
    base_offset: int = 0,
    epoch: int = 0,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = NO_PRODUCER_EPOCH,
    base_sequence: int = NO_SEQUENCE,
    compression: int = COMPRESSION_NONE,
    timestamp: int | None = None,
    transactional: bool = False,
    control: bool = False,
) -> bytes:
    """Build one v2 batch from (key, value) or (key, value, headers) tuples."""
    if not records:
        raise ValueError("a record batch needs at least one record")
    ts = wall_ms() if timestamp is None else timestamp
    body = b"".join(
        _encode_record(i, 0, r[0], r[1], r[2] if len(r) > 2 else None)  # type: ignore[misc]
        for i, r in enumerate(records)
    )
    body = compress(compression, body)
    attributes = compression
    if transactional:
        attributes |= TRANSACTIONAL_MASK
    if control:
        attributes |= CONTROL_MASK
    batch_length = RECORD_BATCH_OVERHEAD - LOG_OVERHEAD + len(body)
    out = bytearray(RECORD_BATCH_OVERHEAD)
    HEADER_STRUCT.pack_into(
        out, 0, base_offset, batch_length, epoch, 2, 0, attributes, len(records) - 1,
        ts, ts, producer_id, producer_epoch, base_sequence, len(records),
    )  # fmt: skip
    out += body
    struct.pack_into(">I", out, CRC_OFFSET, compute_crc(out))
    return bytes(out)
