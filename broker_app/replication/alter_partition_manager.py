"""AlterPartitionManager: the leader's ISR proposals on their way to the controller, sans I/O.

Kafka's AlterPartitionManager (with the NodeToControllerChannelManager's retries) reduced to
what matters for correctness: a proposal (`submit`) is sent (`poll` hands it to the I/O edge,
at most one in flight per partition), and if no answer arrives — the request was lost, the
connection cut, it timed out — or the controller answered with a retriable top-level error
(NOT_CONTROLLER, REQUEST_TIMED_OUT, STALE_BROKER_EPOCH while the broker re-registers), it is
sent again after a backoff: retry_backoff_ms, doubling, capped at max_backoff_ms. Without this a
lost AlterPartition left the partition's proposal pending for good, and the ISR frozen until
the next leader change (a short leader<->controller cut was enough).

A retry is bounded by the proposal's life: it stops as soon as `is_current(request)` says the
partition no longer waits for this proposal (answered, or new metadata — a new leader or
partition epoch — replaced it), or a newer proposal for the same partition is submitted.
Partition-level answers (errors included) go back to the Partition, which decides (revert on
OPERATION_NOT_ATTEMPTED / INELIGIBLE_REPLICA, else wait for metadata), as in Kafka.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from broker_app.protocol.codec import request_class
from broker_app.protocol.entities import build
from broker_app.replication.errors import Errors
from broker_app.replication.messages import AlterPartitionRequest, AlterPartitionResponse

RETRIABLE_TOP_LEVEL = frozenset(
    {Errors.NOT_CONTROLLER, Errors.REQUEST_TIMED_OUT, Errors.STALE_BROKER_EPOCH}
)


@dataclass
class _Item:
    request: AlterPartitionRequest
    attempts: int = 0
    next_send_ms: int = 0
    in_flight: bool = False


class AlterPartitionManager:
    def __init__(
        self,
        is_current: Callable[[AlterPartitionRequest], bool],
        retry_backoff_ms: int = 100,
        max_backoff_ms: int = 2_000,
    ) -> None:
        if retry_backoff_ms <= 0 or max_backoff_ms < retry_backoff_ms:
            raise ValueError(
                f"need 0 < retry_backoff_ms ({retry_backoff_ms}) <= max_backoff_ms "
                f"({max_backoff_ms})"
            )
        self.is_current = is_current
        self.retry_backoff_ms = retry_backoff_ms
        self.max_backoff_ms = max_backoff_ms
        self._items: dict[tuple[str, int], _Item] = {}
        self.retries = 0  # requests sent again after a loss or retriable error (observability)

    def submit(self, request: AlterPartitionRequest, now_ms: int) -> None:
        """A new proposal; it replaces any older one for the same partition."""
        self._items[(request.topic, request.partition)] = _Item(request, next_send_ms=now_ms)

    def poll(self, now_ms: int) -> list[AlterPartitionRequest]:
        """Proposals to send now (each marked in flight); stale ones are dropped."""
        out: list[AlterPartitionRequest] = []
        for key, item in list(self._items.items()):
            if not self.is_current(item.request):
                del self._items[key]
                continue
            if item.in_flight or now_ms < item.next_send_ms:
                continue
            item.in_flight = True
            if item.attempts:
                self.retries += 1
            item.attempts += 1
            out.append(item.request)
        return out

    def next_due_ms(self) -> int | None:
        """When `poll` may next have something to send (None: nothing waiting)."""
        due = [i.next_send_ms for i in self._items.values() if not i.in_flight]
        return min(due) if due else None

    @property
    def pending(self) -> int:
        return len(self._items)

    def _item(self, request: AlterPartitionRequest) -> _Item | None:
        item = self._items.get((request.topic, request.partition))
        return item if item is not None and item.request is request else None

    def _retry_later(self, item: _Item, now_ms: int) -> None:
        item.in_flight = False
        backoff = self.retry_backoff_ms * (2 ** min(item.attempts - 1, 16))
        item.next_send_ms = now_ms + min(backoff, self.max_backoff_ms)

    def on_failure(self, request: AlterPartitionRequest, now_ms: int) -> None:
        """No answer (lost, disconnected, timed out): send again after the backoff."""
        item = self._item(request)
        if item is not None:
            self._retry_later(item, now_ms)

    def on_response(
        self,
        request: AlterPartitionRequest,
        top_level_error: Errors,
        response: AlterPartitionResponse,
        now_ms: int,
    ) -> AlterPartitionResponse | None:
        """The controller answered. Returns the partition's answer to hand to the Partition,
        or None when the request will be retried (retriable top-level error)."""
        item = self._item(request)
        if top_level_error in RETRIABLE_TOP_LEVEL:
            if item is not None:
                self._retry_later(item, now_ms)
            return None
        if item is not None:
            del self._items[(request.topic, request.partition)]
        return response


ALTER_PARTITION, ALTER_PARTITION_VERSION = 56, 2
ALTER_PARTITION_EPOCHS_VERSION = 3  # KIP-903: NewIsrWithEpochs replaces NewIsr


def build_alter_partition(
    request: AlterPartitionRequest, broker_epoch: int, topic_id: uuid.UUID
) -> Any:
    """The AlterPartition request entity for one proposal: v3 with each ISR member's broker
    epoch when the proposal carries them (KIP-903), else v2 with bare ids (before Kafka 3.5)."""
    partition: dict[str, Any] = {
        "partition_index": request.partition,
        "leader_epoch": request.leader_epoch,
        "leader_recovery_state": 0,
        "partition_epoch": request.partition_epoch,
    }
    version = ALTER_PARTITION_VERSION
    if request.isr_broker_epochs is not None:
        version = ALTER_PARTITION_EPOCHS_VERSION
        partition["new_isr_with_epochs"] = [
            {"broker_id": r, "broker_epoch": e}
            for r, e in zip(request.new_isr, request.isr_broker_epochs, strict=True)
        ]
    else:
        partition["new_isr"] = list(request.new_isr)
    return build(
        request_class(ALTER_PARTITION, version),
        {
            "broker_id": request.broker_id,
            "broker_epoch": broker_epoch,
            "topics": [{"topic_id": topic_id, "partitions": [partition]}],
        },
    )


def parse_alter_partition(response: Any) -> tuple[Errors, AlterPartitionResponse]:
    """(top-level error, the one partition's answer) from an AlterPartition response."""
    top = _errors(response.error_code.value)
    answer = AlterPartitionResponse(error=top)
    with contextlib.suppress(IndexError):
        p = response.topics[0].partitions[0]
        answer = AlterPartitionResponse(
            error=top if top != Errors.NONE else _errors(p.error_code.value),
            leader_id=p.leader_id,
            leader_epoch=p.leader_epoch,
            isr=tuple(p.isr),
            partition_epoch=p.partition_epoch,
        )
    return top, answer


def _errors(code: int) -> Errors:
    try:
        return Errors(code)
    except ValueError:
        return Errors.UNKNOWN_SERVER_ERROR
