"""The pure parts of `highwater bench crash`: when a partition counts as led again, and the
read-back comparison of acknowledged sends with final reads."""

from __future__ import annotations

from pathlib import Path

from harness.bench.crash import _lost, all_led
from harness.plan.state import ClusterState, PartitionState, ReplicaState
from harness.store.history import HistoryWriter


def _state(leader: int | None, epoch: int, own_role: str, own_epoch: int,
           controller: int | None = 1, alive: frozenset[int] = frozenset({1, 2, 3})
           ) -> ClusterState:  # fmt: skip
    replicas = {b: ReplicaState(b, "follower", 5, 5, epoch) for b in alive}
    if leader is not None and leader in alive:
        replicas[leader] = ReplicaState(leader, own_role, 5, 5, own_epoch)
    p = PartitionState("crash", 0, leader, epoch, (1, 2, 3), (1, 2, 3), replicas)
    return ClusterState((1, 2, 3), alive, {"crash-0": p}, controller=controller)


def test_led_means_the_named_leader_is_alive_and_itself_leads_at_that_epoch() -> None:
    assert all_led(_state(2, 4, "leader", 4))
    assert not all_led(_state(None, 4, "leader", 4))  # no leader in metadata
    assert not all_led(_state(2, 4, "follower", 3))  # named, but has not taken over yet
    assert not all_led(_state(2, 4, "leader", 3))  # leads at an older epoch
    assert not all_led(_state(2, 4, "leader", 4, alive=frozenset({1, 3})))  # leader is down
    assert not all_led(_state(2, 4, "leader", 4, controller=None))  # controller not back


def test_lost_is_acknowledged_values_no_final_read_returned(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    with HistoryWriter(path) as h:
        for value, typ in ((1, "ok"), (2, "ok"), (3, "info"), (4, "fail"), (5, "ok")):
            inv = h.invoke(0, "send", topic="crash", partition=0, value=value, acks="all")
            h.complete(inv, typ, **({"offset": value} if typ == "ok" else {"error": "X"}))
        live = h.invoke(1, "poll", final=False)  # a non-final read does not count
        h.complete(live, "ok", records=[{"topic": "crash", "partition": 0, "offset": 9,
                                         "value": 5}])  # fmt: skip
        final = h.invoke(2, "poll", final=True)
        h.complete(final, "ok", records=[{"topic": "crash", "partition": 0, "offset": o,
                                          "value": v} for o, v in ((0, 1), (1, 3))])  # fmt: skip
    acked, read, lost, sends = _lost(path)
    assert (acked, read, lost) == (3, 2, [2, 5])
    assert sends == {"ok": 3, "info": 1, "fail": 1}
