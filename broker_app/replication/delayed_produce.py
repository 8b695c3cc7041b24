"""DelayedProduce: an acks=all produce waiting for the HW to cover what it appended.

Contract: created after the local append with, per partition, the offset one past the batch's
last offset (`required_offset`). `try_complete` asks each pending partition
`check_enough_replicas_reach_offset(required_offset)`; a partition is done when the HW covers it
(error NONE, or NOT_ENOUGH_REPLICAS_AFTER_APPEND if the ISR shrank below min.insync.replicas
meanwhile) or when the partition is gone / no longer led here (NOT_LEADER_OR_FOLLOWER). The whole
operation completes when no partition is pending; on expiry the pending ones get
REQUEST_TIMED_OUT. `on_complete` hands `{key: ProducePartitionResult}` to the callback once.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from typing import Protocol

from broker_app.replication.errors import Errors
from broker_app.replication.purgatory import DelayedOperation


class ReplicaCheck(Protocol):
    def check_enough_replicas_reach_offset(self, required_offset: int) -> tuple[bool, Errors]: ...


@dataclass
class ProducePartitionStatus:
    required_offset: int
    base_offset: int
    error: Errors = Errors.NONE
    acks_pending: bool = True


@dataclass(frozen=True)
class ProducePartitionResult:
    error: Errors
    base_offset: int


class DelayedProduce(DelayedOperation):
    def __init__(
        self,
        deadline_ms: int,
        statuses: Mapping[Hashable, ProducePartitionStatus],
        lookup: Callable[[Hashable], ReplicaCheck | None],
        callback: Callable[[dict[Hashable, ProducePartitionResult]], None],
    ) -> None:
        super().__init__(deadline_ms)
        self.statuses = dict(statuses)
        self._lookup = lookup
        self._callback = callback
        # A partition whose append already failed is not waited on.
        for status in self.statuses.values():
            if status.error != Errors.NONE:
                status.acks_pending = False

    def try_complete(self) -> bool:
        for key, status in self.statuses.items():
            if not status.acks_pending:
                continue
            partition = self._lookup(key)
            if partition is None:
                status.acks_pending = False
                status.error = Errors.NOT_LEADER_OR_FOLLOWER
                continue
            done, error = partition.check_enough_replicas_reach_offset(status.required_offset)
            if error != Errors.NONE:
                status.acks_pending = False
                status.error = error
            elif done:
                status.acks_pending = False
        if any(s.acks_pending for s in self.statuses.values()):
            return False
        return self.force_complete()

    def on_expiration(self) -> None:
        """Nothing extra: on_complete already reported REQUEST_TIMED_OUT for pending ones."""

    def on_complete(self) -> None:
        results: dict[Hashable, ProducePartitionResult] = {}
        for key, status in self.statuses.items():
            error = Errors.REQUEST_TIMED_OUT if status.acks_pending else status.error
            results[key] = ProducePartitionResult(error=error, base_offset=status.base_offset)
        self._callback(results)
