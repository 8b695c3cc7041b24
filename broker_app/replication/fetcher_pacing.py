"""FetchPacer: when a replica fetcher thread may start its next round, sans I/O.

Kafka's AbstractFetcherThread never spins: with no fetchable partition it waits on
`partitionMapCond.await(fetchBackOffMs)` (woken early when partitions are added), and a failed
fetch or a partition error delays the next attempt by replica.fetch.backoff.ms. This class makes
the same decision for one ReplicaFetcherThread from what its last round did:

- `RoundOutcome.sent == 0` — nothing was fetchable (every partition FENCED, or none left): only
  new metadata can change that, so wait (woken by `wake()`), re-checking after the backoff;
- a request failed or any partition answered an error (FENCED_LEADER_EPOCH, NOT_LEADER...,
  UNKNOWN_LEADER_EPOCH): wait the backoff;
- every request answered cleanly: go on at once (the leader's long poll, replica.fetch.wait.max.ms,
  paces an idle partition).

Consecutive rounds without progress double the wait, capped at MAX_BACKOFF_FACTOR x the backoff
(so CPU stays bounded however long the stall); `wake()` — new metadata, a partition added —
resets it and allows a round at once. The I/O edge must still yield to the event loop after a
round with no wait (asyncio.sleep(0)): a response that was already buffered completes an await
without suspending.

Differs from Kafka: Kafka delays only the partitions that failed and keeps fetching the others;
here the whole thread (one leader's partitions) waits, which is simpler and costs at most one
backoff of latency for healthy partitions sharing a leader with a failing one.
"""

from __future__ import annotations

from dataclasses import dataclass

MAX_BACKOFF_FACTOR = 10


@dataclass(frozen=True)
class RoundOutcome:
    """What one fetcher round did: requests sent, and whether any of them failed."""

    sent: int = 0  # OffsetForLeaderEpoch + Fetch requests that were sent
    errors: int = 0  # failed requests + partition-level errors in the answers

    @property
    def progressed(self) -> bool:
        return self.sent > 0 and self.errors == 0


class FetchPacer:
    def __init__(self, backoff_ms: int) -> None:
        if backoff_ms <= 0:
            raise ValueError(f"replica.fetch.backoff.ms must be > 0, got {backoff_ms}")
        self.backoff_ms = backoff_ms
        self.stalls = 0  # consecutive rounds without progress
        self.next_round_ms = 0
        self._woken = False  # wake() since the current round started

    def round_started(self) -> None:
        self._woken = False

    def round_done(self, outcome: RoundOutcome, now_ms: int) -> int:
        """Record a finished round; returns how long to wait (ms) before the next one.

        Metadata that arrived while the round was in flight (wake() after round_started())
        cancels the backoff: the partitions it changed deserve a round now.
        """
        if outcome.progressed or self._woken:
            self.stalls = 0
            self.next_round_ms = now_ms
            return 0
        self.stalls += 1
        delay = self.backoff_ms * min(2 ** (self.stalls - 1), MAX_BACKOFF_FACTOR)
        self.next_round_ms = now_ms + delay
        return delay

    def wake(self, now_ms: int) -> None:
        """New metadata (a partition added or re-added): the next round may start now."""
        self._woken = True
        self.stalls = 0
        self.next_round_ms = now_ms

    def delay_ms(self, now_ms: int) -> int:
        """How long until the next round may start (0: now)."""
        return max(0, self.next_round_ms - now_ms)
