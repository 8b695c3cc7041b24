"""Sans-I/O toxic stages and links: exact timing decisions on a fake clock, no sockets."""

from __future__ import annotations

import random

import pytest

from harness.toxiproxy_server.link import Link
from harness.toxiproxy_server.model import ToxicSpec
from harness.toxiproxy_server.toxics import (
    EOF,
    RESET,
    BandwidthStage,
    Chunk,
    LatencyStage,
    LimitDataStage,
    NoopStage,
    ResetPeerStage,
    SlicerStage,
    SlowCloseStage,
    TimeoutStage,
    make_stage,
)


def drain(stage, now):
    return [i.data if isinstance(i, Chunk) else i for i in stage.pop_ready(now)]


def spec(name, type_, stream="downstream", toxicity=1.0, **attributes):
    from harness.toxiproxy_server.toxics import TOXIC_TYPES

    attrs = dict(TOXIC_TYPES[type_].attributes)
    attrs.update(attributes)
    return ToxicSpec(name, type_, stream, toxicity, attrs)


def data_of(items):
    return b"".join(i.data for i in items if isinstance(i, Chunk))


class TestLatency:
    def test_chunk_held_until_latency_elapsed(self):
        stage = LatencyStage(100, 0, random.Random(1))
        stage.push(Chunk(b"a", 10.0), 10.0)
        assert drain(stage, 10.099) == []
        assert stage.next_deadline() == pytest.approx(10.1)
        assert drain(stage, 10.1) == [b"a"]

    def test_streamed_chunks_are_delayed_not_serialised(self):
        stage = LatencyStage(100, 0, random.Random(1))
        for i in range(5):
            stage.push(Chunk(bytes([i]), 10.0 + i * 0.01), 10.0 + i * 0.01)
        # each chunk leaves 100 ms after it arrived: the stream is shifted, not throttled
        assert drain(stage, 10.141) == [b"\x00", b"\x01", b"\x02", b"\x03", b"\x04"]

    def test_jitter_stays_within_bounds_and_keeps_order(self):
        stage = LatencyStage(100, 50, random.Random(7))
        delays = [stage.delay() for _ in range(2000)]
        assert min(delays) >= 0.05 and max(delays) < 0.15
        assert len(set(delays)) > 10
        for i in range(50):
            stage.push(Chunk(bytes([i]), 0.001 * i), 0.001 * i)
        assert drain(stage, 1.0) == [bytes([i]) for i in range(50)]

    def test_eof_follows_the_data(self):
        stage = LatencyStage(100, 0, random.Random(1))
        stage.push(Chunk(b"x", 0.0), 0.0)
        stage.push(EOF, 0.01)
        assert drain(stage, 0.05) == []
        assert drain(stage, 0.1) == [b"x", EOF]


class TestBandwidth:
    def test_rate_in_kilobytes_per_second_split_in_100ms_pieces(self):
        stage = BandwidthStage(10)  # 10 KB/s = 10_000 B/s, pieces of 1000 bytes
        stage.push(Chunk(b"x" * 2500, 0.0), 0.0)
        assert drain(stage, 0.0999) == []
        assert drain(stage, 0.1) == [b"x" * 1000]
        assert drain(stage, 0.2) == [b"x" * 1000]
        assert stage.next_deadline() == pytest.approx(0.25)
        assert drain(stage, 0.25) == [b"x" * 500]

    def test_back_to_back_chunks_queue_behind_each_other(self):
        stage = BandwidthStage(1)  # 1000 B/s
        stage.push(Chunk(b"a" * 100, 0.0), 0.0)
        stage.push(Chunk(b"b" * 100, 0.0), 0.0)
        assert drain(stage, 0.1) == [b"a" * 100]
        assert drain(stage, 0.19) == []
        assert drain(stage, 0.2) == [b"b" * 100]

    def test_zero_rate_is_unlimited(self):
        stage = BandwidthStage(0)
        stage.push(Chunk(b"z" * 10_000_000, 0.0), 0.0)
        assert drain(stage, 0.0) == [b"z" * 10_000_000]


class TestSlicer:
    def test_pieces_reassemble_and_respect_size_bounds(self):
        stage = SlicerStage(10, 5, 1000, random.Random(3))
        payload = bytes(range(256)) * 4
        stage.push(Chunk(payload, 0.0), 0.0)
        items = stage.pop_ready(10.0)
        assert data_of(items) == payload
        sizes = [len(i.data) for i in items]
        assert len(sizes) > 20
        assert max(sizes) <= 15 and min(sizes) >= 1

    def test_pieces_are_spaced_by_delay_microseconds(self):
        stage = SlicerStage(10, 0, 1000, random.Random(3))  # 1 ms apart
        stage.push(Chunk(b"y" * 40, 0.0), 0.0)
        assert drain(stage, 0.0) == [b"y" * 10]
        assert drain(stage, 0.0005) == []
        assert drain(stage, 0.001) == [b"y" * 10]
        assert drain(stage, 0.003) == [b"y" * 10, b"y" * 10]

    def test_small_chunk_is_untouched(self):
        stage = SlicerStage(100, 10, 0, random.Random(3))
        stage.push(Chunk(b"short", 0.0), 0.0)
        assert drain(stage, 0.0) == [b"short"]


class TestTimeout:
    def test_zero_drops_data_and_never_closes(self):
        stage = TimeoutStage(0, now=0.0)
        stage.push(Chunk(b"lost", 0.0), 0.0)
        assert drain(stage, 1e6) == []
        assert stage.next_deadline() is None

    def test_positive_closes_after_timeout_from_attach(self):
        stage = TimeoutStage(500, now=2.0)
        stage.push(Chunk(b"lost", 2.1), 2.1)
        assert drain(stage, 2.49) == []
        assert drain(stage, 2.5) == [EOF]

    def test_source_eof_passes_at_once(self):
        stage = TimeoutStage(500, now=0.0)
        stage.push(EOF, 0.1)
        assert drain(stage, 0.1) == [EOF]


class TestOthers:
    def test_slow_close_holds_only_the_eof(self):
        stage = SlowCloseStage(300)
        stage.push(Chunk(b"data", 1.0), 1.0)
        stage.push(EOF, 1.0)
        assert drain(stage, 1.0) == [b"data"]
        assert drain(stage, 1.299) == []
        assert drain(stage, 1.3) == [EOF]

    def test_reset_peer_drops_first_chunk_and_resets_after_timeout(self):
        stage = ResetPeerStage(200)
        assert stage.next_deadline() is None  # nothing happens until data flows
        stage.push(Chunk(b"req", 5.0), 5.0)
        stage.push(Chunk(b"more", 5.1), 5.1)
        assert drain(stage, 5.19) == []
        assert drain(stage, 5.2) == [RESET]

    def test_limit_data_truncates_then_closes(self):
        stage = LimitDataStage(10)
        stage.push(Chunk(b"12345678", 0.0), 0.0)
        stage.push(Chunk(b"abcdef", 0.0), 0.0)
        stage.push(Chunk(b"never", 0.0), 0.0)
        assert drain(stage, 0.0) == [b"12345678", b"ab", EOF]

    def test_limit_data_count_survives_an_update(self):
        old = LimitDataStage(10)
        old.push(Chunk(b"1234567", 0.0), 0.0)
        new = make_stage("limit_data", {"bytes": 10}, 1.0, 0.0, random.Random(0), previous=old)
        new.push(Chunk(b"abcdef", 0.0), 0.0)
        assert drain(new, 0.0) == [b"abc", EOF]

    def test_toxicity_zero_gives_noop(self):
        rng = random.Random(0)
        assert isinstance(make_stage("timeout", {"timeout": 0}, 0.0, 0.0, rng), NoopStage)
        assert isinstance(make_stage("timeout", {"timeout": 0}, 1.0, 0.0, rng), TimeoutStage)

    def test_toxicity_is_a_probability_per_link(self):
        rng = random.Random(11)
        hits = sum(
            isinstance(
                make_stage("latency", {"latency": 1, "jitter": 0}, 0.3, 0.0, rng), LatencyStage
            )
            for _ in range(2000)
        )
        assert 450 < hits < 750


class TestLink:
    def test_no_toxics_is_passthrough(self):
        link = Link([], 0.0, random.Random(0))
        assert link.passthrough
        link.push(b"abc", 0.0)
        assert data_of(link.advance(0.0)) == b"abc"

    def test_chained_latencies_add_up(self):
        link = Link(
            [spec("a", "latency", latency=100), spec("b", "latency", latency=50)],
            0.0,
            random.Random(0),
        )
        link.push(b"x", 0.0)
        assert link.advance(0.1) == []
        assert link.next_deadline() == pytest.approx(0.15)
        assert data_of(link.advance(0.15)) == b"x"

    def test_toxic_added_live_catches_data_in_flight(self):
        link = Link([spec("lat", "latency", latency=100)], 0.0, random.Random(0))
        link.push(b"in flight", 0.0)
        link.add_toxic(spec("part", "timeout", timeout=0), 0.05)
        assert link.advance(1.0) == []  # released by latency into the partition: dropped

    def test_removed_toxic_flushes_what_it_held(self):
        link = Link([spec("lat", "latency", latency=10_000)], 0.0, random.Random(0))
        link.push(b"held", 0.0)
        link.remove_toxic(spec("lat", "latency", latency=10_000), 0.5)
        assert data_of(link.advance(0.5)) == b"held"
        assert link.passthrough

    def test_removing_timeout_closes_the_link(self):
        part = spec("part", "timeout", timeout=0)
        link = Link([part], 0.0, random.Random(0))
        link.push(b"dropped", 0.0)
        link.remove_toxic(part, 1.0)
        assert link.advance(1.0) == [EOF]
        assert link.finished
        link.push(b"after", 2.0)
        assert link.advance(2.0) == []

    def test_removing_timeout_closes_even_when_toxicity_spared_the_link(self):
        part = spec("part", "timeout", toxicity=0.0, timeout=0)
        link = Link([part], 0.0, random.Random(0))
        link.push(b"flows", 0.0)
        assert data_of(link.advance(0.0)) == b"flows"
        link.remove_toxic(part, 1.0)
        assert link.advance(1.0) == [EOF]

    def test_update_replaces_attributes_keeping_held_data(self):
        link = Link([spec("lat", "latency", latency=10_000)], 0.0, random.Random(0))
        link.push(b"a", 0.0)
        link.update_toxic(spec("lat", "latency", latency=100), 0.0)
        link.push(b"b", 0.0)
        # the held chunk re-enters the new stage at update time
        assert data_of(link.advance(0.1)) == b"ab"

    def test_backlog_pauses_reading_under_bandwidth(self):
        link = Link([spec("bw", "bandwidth", rate=1)], 0.0, random.Random(0))
        link.push(b"x" * 100_000, 0.0)
        assert link.backlogged()
        link.advance(200.0)
        assert not link.backlogged()
