"""Toxics as sans-I/O stages: what each Toxiproxy 2.x toxic does to a stream of chunks, and when.

Contract. A `Stage` is one toxic on one link (one direction of one connection). The pump feeds it
items with `push(item, now)` and collects the items whose time has come with `pop_ready(now)`;
`next_deadline()` says when the next one will be ready. Items are `Chunk` (bytes plus the time they
left the previous stage), `EOF` (close the destination after everything before it) and `RESET`
(abort both sockets with an RST). A stage never sleeps and never touches a socket: it only decides
*when* each piece of data may go on, so every timing rule below is unit-testable with a fake clock.
Each stage releases items in non-decreasing time order, which is what lets stages be chained: a
stage processes one item after another, as a Toxiproxy `ToxicStub` goroutine does.

Semantics follow Shopify/toxiproxy 2.x (toxics/*.go, link.go, toxic_collection.go):

- latency: each chunk is held until `ts + latency ± jitter` (ms; jitter uniform in [-j, j)), and
  never before the chunk ahead of it (a stub handles one chunk at a time), so a stream of chunks
  is delayed, not throttled. Chained latency toxics add up.
- bandwidth: `rate` KB/s with KB = 1000 bytes (Toxiproxy sleeps len/rate ms); chunks larger than
  100 ms worth of data are cut into 100 ms pieces, each released when its bytes have "gone
  through". rate 0 means unlimited.
- slow_close: data passes untouched; the EOF is held for `delay` ms.
- timeout: while the toxic is active every chunk is *dropped* (Toxiproxy >= 2.1.5: "data will be
  dropped until the toxic is removed"; older 2.x versions held it). With `timeout` > 0 the link is
  closed `timeout` ms after the toxic was attached to it; with 0 it is never closed by the toxic.
  Removing a timeout toxic closes every link it was attached to (Toxiproxy's TimeoutToxic.Cleanup
  closes the stub), whatever its toxicity roll was. So a partition made of timeout=0 toxics blocks
  open connections (their data is lost, not delayed), and healing it closes those connections;
  clients reconnect, and new connections flow normally.
- reset_peer: the first chunk (or EOF) seen after the toxic is attached is dropped, and `timeout`
  ms later the connection is reset: both sockets are closed with SO_LINGER 0 so the peers get an
  RST. Toxiproxy sets SO_LINGER only when the toxic was present when the connection opened (a
  toxic added later degrades to a FIN); here the reset is always an RST, which is what the toxic is
  documented to do.
- slicer: each chunk is cut recursively into pieces of about `average_size` ± `size_variation`
  bytes, a piece every `delay` µs. size_variation 0 splits at midpoints (Toxiproxy would panic).
- limit_data: passes the first `bytes` bytes of the link (counted across toxic updates), then
  closes it.
- noop: passes everything; also stands in for a toxic whose toxicity roll said "not this link".

Toxicity: Toxiproxy draws `rand() < toxicity` every time a stub (re)starts; here the draw is made
once per (link, toxic) when the toxic is attached or updated, so a connection keeps its fate.
"""

from __future__ import annotations

import random
from collections import deque
from dataclasses import dataclass
from typing import Final

# A stage holding more than this many bytes makes the pump stop reading its source (TCP
# back-pressure), like Toxiproxy's bounded channels. Latency gets a deep buffer (Toxiproxy gives it
# 1024 chunks) so a delayed link still carries full throughput; pacing toxics get a shallow one.
DEEP_BACKLOG: Final = 16 * 1024 * 1024
SHALLOW_BACKLOG: Final = 64 * 1024

# Timers may fire a hair early (clock resolution); an item this close to due is due.
_EPSILON: Final = 1e-6


@dataclass(slots=True)
class Chunk:
    """Bytes on a link; `ts` is when they left the previous stage (or the source socket)."""

    data: bytes
    ts: float


class _Marker:
    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


EOF: Final = _Marker("EOF")
RESET: Final = _Marker("RESET")

Item = Chunk | _Marker


class Stage:
    """Base stage: passes every item on immediately, in order."""

    max_backlog: int = DEEP_BACKLOG

    def __init__(self) -> None:
        self._out: deque[tuple[float, Item]] = deque()
        self._last = float("-inf")  # release time of the latest queued item: keeps order
        self.held_bytes = 0

    # -- called by the link -------------------------------------------------------------------
    def push(self, item: Item, now: float) -> None:
        if isinstance(item, Chunk):
            self.on_chunk(item, now)
        elif item is EOF:
            self.on_eof(now)
        else:  # RESET always passes straight on: the connection is going away
            self._emit(now, item)

    def pop_ready(self, now: float) -> list[Item]:
        ready: list[Item] = []
        out = self._out
        while out and out[0][0] <= now + _EPSILON:
            at, item = out.popleft()
            if isinstance(item, Chunk):
                self.held_bytes -= len(item.data)
                item.ts = at  # the next stage's clock starts when this one let go
            ready.append(item)
        return ready

    def next_deadline(self) -> float | None:
        return self._out[0][0] if self._out else None

    def take_held(self) -> list[Item]:
        """Everything not yet released, in order; used when the toxic is removed or replaced."""
        items = [item for _, item in self._out]
        self._out.clear()
        self.held_bytes = 0
        return items

    # -- toxic behaviour ----------------------------------------------------------------------
    def on_chunk(self, chunk: Chunk, now: float) -> None:
        self._emit(now, chunk)

    def on_eof(self, now: float) -> None:
        self._emit(now, EOF)

    def _emit(self, at: float, item: Item) -> None:
        at = max(at, self._last)
        self._last = at
        self._out.append((at, item))
        if isinstance(item, Chunk):
            self.held_bytes += len(item.data)


class NoopStage(Stage):
    """`noop`, and any toxic that lost its toxicity roll on this link."""


class LatencyStage(Stage):
    def __init__(self, latency_ms: int, jitter_ms: int, rng: random.Random) -> None:
        super().__init__()
        self.latency_ms = latency_ms
        self.jitter_ms = jitter_ms
        self._rng = rng

    def delay(self) -> float:
        delay = self.latency_ms
        if self.jitter_ms > 0:
            delay += self._rng.randrange(-self.jitter_ms, self.jitter_ms)
        return delay / 1000.0

    def on_chunk(self, chunk: Chunk, now: float) -> None:
        self._emit(chunk.ts + self.delay(), chunk)


class BandwidthStage(Stage):
    max_backlog = SHALLOW_BACKLOG

    def __init__(self, rate_kb: int) -> None:
        super().__init__()
        self.rate_kb = rate_kb

    def on_chunk(self, chunk: Chunk, now: float) -> None:
        if self.rate_kb <= 0:
            self._emit(now, chunk)
            return
        bytes_per_s = self.rate_kb * 1000.0
        piece_max = self.rate_kb * 100  # 100 ms worth, as Toxiproxy splits
        start = max(self._last, chunk.ts)
        data = chunk.data
        sent = 0
        while sent < len(data):
            piece = data[sent : sent + piece_max]
            sent += len(piece)
            self._emit(start + sent / bytes_per_s, Chunk(piece, chunk.ts))


class SlowCloseStage(Stage):
    def __init__(self, delay_ms: int) -> None:
        super().__init__()
        self.delay_ms = delay_ms

    def on_eof(self, now: float) -> None:
        self._emit(max(now, self._last) + self.delay_ms / 1000.0, EOF)


class TimeoutStage(Stage):
    def __init__(self, timeout_ms: int, now: float) -> None:
        super().__init__()
        self.timeout_ms = timeout_ms
        if timeout_ms > 0:
            self._emit(now + timeout_ms / 1000.0, EOF)

    def on_chunk(self, chunk: Chunk, now: float) -> None:
        pass  # dropped on the ground, as Toxiproxy does

    def on_eof(self, now: float) -> None:
        # The source closed: Toxiproxy closes the stub at once. An EOF already scheduled by the
        # timer may sit behind; the link stops at the first terminal item anyway.
        self._out.appendleft((now, EOF))


class ResetPeerStage(Stage):
    def __init__(self, timeout_ms: int) -> None:
        super().__init__()
        self.timeout_ms = timeout_ms
        self.triggered = False

    def _trigger(self, now: float) -> None:
        if not self.triggered:
            self.triggered = True
            self._emit(now + self.timeout_ms / 1000.0, RESET)

    def on_chunk(self, chunk: Chunk, now: float) -> None:
        self._trigger(now)  # the chunk itself is consumed and dropped

    def on_eof(self, now: float) -> None:
        self._trigger(now)


class SlicerStage(Stage):
    max_backlog = SHALLOW_BACKLOG

    def __init__(
        self, average_size: int, size_variation: int, delay_us: int, rng: random.Random
    ) -> None:
        super().__init__()
        self.average_size = average_size
        self.size_variation = size_variation
        self.delay_us = delay_us
        self._rng = rng
        self._free_at = float("-inf")  # a stub sleeps `delay` after its last piece, too

    def cuts(self, size: int) -> list[tuple[int, int]]:
        """[start, end) offsets of the pieces of a chunk of `size` bytes."""
        pieces: list[tuple[int, int]] = []
        stack = [(0, size)]
        while stack:
            start, end = stack.pop()
            if (end - start) - self.average_size <= self.size_variation or end - start < 2:
                pieces.append((start, end))
                continue
            mid = start + (end - start) // 2
            if self.size_variation > 0:
                mid += self._rng.randrange(-self.size_variation, self.size_variation)
            mid = min(max(mid, start + 1), end - 1)  # both halves non-empty: always progresses
            stack.append((mid, end))  # right pushed first so the left half comes out first
            stack.append((start, mid))
        return pieces

    def on_chunk(self, chunk: Chunk, now: float) -> None:
        at = max(self._free_at, chunk.ts)
        step = self.delay_us / 1_000_000.0
        for start, end in self.cuts(len(chunk.data)):
            self._emit(at, Chunk(chunk.data[start:end], chunk.ts))
            at += step
        self._free_at = at


class LimitDataStage(Stage):
    def __init__(self, limit: int, transmitted: int = 0) -> None:
        super().__init__()
        self.limit = limit
        self.transmitted = transmitted
        self.closed = False

    def on_chunk(self, chunk: Chunk, now: float) -> None:
        if self.closed:
            return
        remaining = self.limit - self.transmitted
        if remaining < len(chunk.data):
            chunk = Chunk(chunk.data[: max(remaining, 0)], chunk.ts)
        if chunk.data:
            self._emit(now, chunk)
            self.transmitted += len(chunk.data)
        if self.limit - self.transmitted <= 0:
            self.closed = True
            self._emit(now, EOF)


@dataclass(frozen=True, slots=True)
class ToxicType:
    """A toxic type's attributes (name -> default) in Toxiproxy's JSON order."""

    name: str
    attributes: tuple[tuple[str, int], ...]


TOXIC_TYPES: Final[dict[str, ToxicType]] = {
    t.name: t
    for t in (
        ToxicType("latency", (("latency", 0), ("jitter", 0))),
        ToxicType("bandwidth", (("rate", 0),)),
        ToxicType("slow_close", (("delay", 0),)),
        ToxicType("timeout", (("timeout", 0),)),
        ToxicType("reset_peer", (("timeout", 0),)),
        ToxicType("slicer", (("average_size", 0), ("size_variation", 0), ("delay", 0))),
        ToxicType("limit_data", (("bytes", 0),)),
        ToxicType("noop", ()),
    )
}


def make_stage(
    toxic_type: str,
    attributes: dict[str, int],
    toxicity: float,
    now: float,
    rng: random.Random,
    previous: Stage | None = None,
) -> Stage:
    """Build the stage for one toxic on one link; `previous` is the stage it replaces (update)."""
    if rng.random() >= toxicity:
        return NoopStage()
    a = attributes
    match toxic_type:
        case "latency":
            return LatencyStage(a["latency"], a["jitter"], rng)
        case "bandwidth":
            return BandwidthStage(a["rate"])
        case "slow_close":
            return SlowCloseStage(a["delay"])
        case "timeout":
            return TimeoutStage(a["timeout"], now)
        case "reset_peer":
            return ResetPeerStage(a["timeout"])
        case "slicer":
            return SlicerStage(a["average_size"], a["size_variation"], a["delay"], rng)
        case "limit_data":
            # Toxiproxy keeps limit_data's byte count in per-link state that survives updates.
            done = previous.transmitted if isinstance(previous, LimitDataStage) else 0
            return LimitDataStage(a["bytes"], done)
        case _:
            return NoopStage()
