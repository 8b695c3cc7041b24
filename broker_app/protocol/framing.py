"""Sans-I/O Kafka framing: a 4-byte big-endian size prefix, then that many bytes.

FrameDecoder.feed(data) returns every frame completed by `data` (possibly none). A frame larger
than `max_frame_bytes` raises FrameTooLarge as soon as its size prefix is seen, before buffering
it, so a hostile peer cannot make the broker allocate; a negative size raises InvalidFrameSize.
After an error the decoder is unusable: the caller closes the connection.
"""

from __future__ import annotations

import struct

from .errors import FrameTooLarge, InvalidFrameSize

_SIZE = struct.Struct(">i")

DEFAULT_MAX_FRAME_BYTES = 100 * 1024 * 1024  # Kafka's socket.request.max.bytes


class FrameDecoder:
    def __init__(self, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES) -> None:
        self.max_frame_bytes = max_frame_bytes
        self._buf = bytearray()
        self._need: int | None = None  # body size of the frame being read, once known

    @property
    def buffered(self) -> int:
        """Bytes received but not yet returned as a frame (non-zero at EOF = truncated frame)."""
        return len(self._buf)

    def feed(self, data: bytes) -> list[bytes]:
        self._buf += data
        frames: list[bytes] = []
        buf = self._buf
        pos = 0
        while True:
            if self._need is None:
                if len(buf) - pos < 4:
                    break
                (size,) = _SIZE.unpack_from(buf, pos)
                if size < 0:
                    raise InvalidFrameSize(size)
                if size > self.max_frame_bytes:
                    raise FrameTooLarge(size, self.max_frame_bytes)
                self._need = size
                pos += 4
            if len(buf) - pos < self._need:
                break
            frames.append(bytes(buf[pos : pos + self._need]))
            pos += self._need
            self._need = None
        if pos:
            del buf[:pos]
        return frames


def encode_frame(payload: bytes) -> bytes:
    return _SIZE.pack(len(payload)) + payload
