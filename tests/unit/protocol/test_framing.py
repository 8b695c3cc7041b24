"""FrameDecoder: size-prefixed frames split and joined arbitrarily, limits enforced."""

from __future__ import annotations

import struct

import pytest

from broker_app.protocol.errors import FrameTooLarge, InvalidFrameSize
from broker_app.protocol.framing import FrameDecoder, encode_frame


def test_frames_split_across_feeds_byte_by_byte() -> None:
    stream = encode_frame(b"hello") + encode_frame(b"") + encode_frame(b"world!")
    dec = FrameDecoder()
    out: list[bytes] = []
    for i in range(len(stream)):
        out += dec.feed(stream[i : i + 1])
    assert out == [b"hello", b"", b"world!"]
    assert dec.buffered == 0


def test_many_frames_in_one_feed_and_partial_tail() -> None:
    dec = FrameDecoder()
    stream = encode_frame(b"a") + encode_frame(b"bc") + encode_frame(b"def")[:5]
    assert dec.feed(stream) == [b"a", b"bc"]
    assert dec.buffered == 1  # the tail's body byte; the size prefix is consumed
    assert dec.feed(b"ef") == [b"def"]


def test_oversized_frame_rejected_from_its_prefix_alone() -> None:
    dec = FrameDecoder(max_frame_bytes=10)
    assert dec.feed(encode_frame(b"x" * 10)) == [b"x" * 10]
    with pytest.raises(FrameTooLarge, match="frame size 11 exceeds the maximum of 10"):
        dec.feed(struct.pack(">i", 11))


def test_negative_size_rejected() -> None:
    with pytest.raises(InvalidFrameSize, match="-5"):
        FrameDecoder().feed(struct.pack(">i", -5) + b"zzzz")
