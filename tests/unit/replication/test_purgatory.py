"""Purgatory mechanics with a trivial operation: watch, complete once, expire by now_ms."""

from __future__ import annotations

import pytest
from replication_sim import TOPIC

from broker_app.replication.delayed_fetch import DelayedFetch, FetchPartitionStatus
from broker_app.replication.messages import FetchIsolation
from broker_app.replication.purgatory import DelayedOperation, Purgatory


class Flag(DelayedOperation):
    def __init__(self, deadline_ms: int, state: dict) -> None:
        super().__init__(deadline_ms)
        self.state = state
        self.completions = 0
        self.expired = False

    def try_complete(self) -> bool:
        return self.state["ready"] and self.force_complete()

    def on_complete(self) -> None:
        self.completions += 1

    def on_expiration(self) -> None:
        self.expired = True


def test_completes_at_once_when_ready() -> None:
    p: Purgatory[Flag] = Purgatory("t")
    op = Flag(100, {"ready": True})
    assert p.try_complete_else_watch(op, ["k"]) is True
    assert p.watched() == 0 and op.completions == 1


def test_watch_then_complete_once_across_keys() -> None:
    p: Purgatory[Flag] = Purgatory("t")
    state = {"ready": False}
    op = Flag(100, state)
    assert p.try_complete_else_watch(op, ["a", "b"]) is False
    assert p.watched("a") == 1 and p.watched("b") == 1 and p.watched() == 1
    assert p.check_and_complete("a") == 0
    state["ready"] = True
    assert p.check_and_complete("a") == 1
    assert p.check_and_complete("b") == 0  # already completed through "a"
    assert op.completions == 1 and p.watched() == 0
    assert p.expire_due(1_000) == []  # a completed operation never expires


def test_expiry_by_deadline() -> None:
    p: Purgatory[Flag] = Purgatory("t")
    early, late = Flag(100, {"ready": False}), Flag(200, {"ready": False})
    p.try_complete_else_watch(early, ["k"])
    p.try_complete_else_watch(late, ["k"])
    assert p.next_deadline_ms() == 100
    assert p.expire_due(99) == []
    assert p.expire_due(100) == [early]
    assert early.expired and early.completions == 1 and not late.is_completed
    assert p.watched("k") == 1 and p.next_deadline_ms() == 200


def test_operation_needs_a_key() -> None:
    with pytest.raises(ValueError, match="at least one key"):
        Purgatory("t").try_complete_else_watch(Flag(1, {"ready": False}), [])


def test_delayed_fetch_waits_for_min_bytes_then_completes(make_cluster) -> None:
    cluster = make_cluster([1, 2])
    cluster.elect(1, isr=[1])
    key = (TOPIC, 0)
    done: list[int] = []
    local = cluster.leader
    op = DelayedFetch(
        deadline_ms=cluster.now_ms + 500,
        min_bytes=1,
        statuses={key: FetchPartitionStatus(0, FetchIsolation.HIGH_WATERMARK)},
        lookup=lambda k: local if k == key else None,
        callback=lambda: done.append(1),
    )
    p: Purgatory[DelayedFetch] = Purgatory("fetch")
    assert p.try_complete_else_watch(op, [key]) is False  # nothing to read yet
    cluster.produce(["m"], acks=1)  # ISR {1}: the HW moves at once
    assert p.check_and_complete(key) == 1 and done == [1]


def test_delayed_fetch_answers_at_once_when_leadership_moves(make_cluster) -> None:
    cluster = make_cluster([1, 2])
    cluster.elect(1, isr=[1, 2])
    key = (TOPIC, 0)
    done: list[int] = []
    local = cluster.leader
    op = DelayedFetch(
        cluster.now_ms + 500, 1_000,
        {key: FetchPartitionStatus(0, FetchIsolation.HIGH_WATERMARK, current_leader_epoch=0)},
        lambda k: local if k == key else None,
        lambda: done.append(1),
    )  # fmt: skip
    p: Purgatory[DelayedFetch] = Purgatory("fetch")
    assert p.try_complete_else_watch(op, [key]) is False
    cluster.elect(2, isr=[1, 2])
    assert p.check_and_complete(key) == 1 and done == [1]
    assert p.expire_due(cluster.now_ms + 10_000) == []


def test_operations_completed_from_outside_are_purged_at_their_deadline() -> None:
    p: Purgatory[Flag] = Purgatory("t")
    op = Flag(100, {"ready": False})
    assert p.try_complete_else_watch(op, ["idle"]) is False
    assert op.force_complete() is True  # the I/O edge's own timer gave up on it
    assert p.watched() == 0 and len(p._watchers) == 1  # still listed under the idle key
    assert p.expire_due(100) == []
    assert p._watchers == {}
