"""DelayedFetch: a Fetch waiting for fetch.min.bytes or fetch.max.wait.ms (Kafka's DelayedFetch).

Contract: created when a first read returned fewer than `min_bytes`. `try_complete` completes
it as soon as, summed over its partitions, at least `min_bytes` are readable from each fetch
offset (up to the HW for consumers, the LEO for replicas), or some partition can no longer be
served as asked (not leader any more, fenced epoch, offset out of range, diverging): then the
answer must go out now so the client reacts. On completion or expiry `callback()` is called once;
the I/O edge re-reads every partition to build the response (Kafka does the same).
Keys: one per partition, the same keys ReplicaManager uses with check_and_complete after an
append (consumers and replicas) or an HW change (consumers).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from typing import Protocol

from broker_app.replication.errors import Errors
from broker_app.replication.messages import (
    NO_CURRENT_LEADER_EPOCH,
    UNDEFINED_EPOCH,
    FetchIsolation,
    FetchPartitionResult,
)
from broker_app.replication.purgatory import DelayedOperation


class Readable(Protocol):
    def read_for_fetch(
        self,
        fetch_offset: int,
        max_bytes: int,
        isolation: FetchIsolation,
        last_fetched_epoch: int = UNDEFINED_EPOCH,
        current_leader_epoch: int = NO_CURRENT_LEADER_EPOCH,
        fetch_only_from_leader: bool = True,
    ) -> FetchPartitionResult: ...


@dataclass(frozen=True)
class FetchPartitionStatus:
    fetch_offset: int
    isolation: FetchIsolation
    current_leader_epoch: int = NO_CURRENT_LEADER_EPOCH
    last_fetched_epoch: int = UNDEFINED_EPOCH
    fetch_only_from_leader: bool = True  # False: a consumer a follower may serve (KIP-392)


def _done() -> None:
    """The callback of an operation that has completed (never called twice)."""


class DelayedFetch(DelayedOperation):
    def __init__(
        self,
        deadline_ms: int,
        min_bytes: int,
        statuses: Mapping[Hashable, FetchPartitionStatus],
        lookup: Callable[[Hashable], Readable | None],
        callback: Callable[[], None],
    ) -> None:
        super().__init__(deadline_ms)
        self.min_bytes = max(min_bytes, 1)
        self.statuses = dict(statuses)
        self._lookup = lookup
        self._callback = callback

    def try_complete(self) -> bool:
        accumulated = 0
        for key, status in self.statuses.items():
            partition = self._lookup(key)
            if partition is None:
                return self.force_complete()
            # One byte missing (fetch.min.bytes=1, the replicas' and the clients' default):
            # whether anything is readable is enough, and nothing is read, as Kafka's
            # tryComplete compares offsets. More: read at most what is missing (whole
            # batches only, so it may read one batch more than needed).
            want = self.min_bytes - accumulated
            result = partition.read_for_fetch(
                status.fetch_offset,
                want if want > 1 else 0,
                status.isolation,
                last_fetched_epoch=status.last_fetched_epoch,
                current_leader_epoch=status.current_leader_epoch,
                fetch_only_from_leader=status.fetch_only_from_leader,
            )
            if result.error != Errors.NONE or result.diverging_epoch is not None:
                return self.force_complete()
            accumulated += len(result.records) if want > 1 else int(result.readable)
            if accumulated >= self.min_bytes:
                return self.force_complete()
        return False

    def on_complete(self) -> None:
        # Runs once (force_complete); dropping the callback then breaks the cycle op ->
        # callback -> the caller's handle on op, so a finished fetch is freed at once
        # instead of waiting for the cyclic garbage collector.
        callback, self._callback = self._callback, _done
        callback()
