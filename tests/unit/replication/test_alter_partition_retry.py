"""A lost AlterPartition is retried after a backoff and the ISR change commits (issue 11).

Exact interleaving, no sockets: the leader is a real ReplicaManager (memory logs, hand-moved
clock), the controller a lone one (a one-voter quorum) behind ControllerApis; requests are the kio
entities ClusterLink sends. The test is the network: it drops the first AlterPartition.
Before the AlterPartitionManager, the dropped proposal stayed pending for good and the ISR
never shrank (the leader could not propose again while one was in flight).
"""

from __future__ import annotations

from pathlib import Path

from broker_app.controller.config import ControllerConfig
from broker_app.controller.messages import CreateTopicsRequest, NewTopic
from broker_app.protocol.codec import Request
from broker_app.replication.alter_partition_manager import (
    AlterPartitionManager,
    build_alter_partition,
    parse_alter_partition,
)
from broker_app.replication.errors import Errors
from broker_app.replication.messages import AlterPartitionRequest, AlterPartitionResponse
from broker_app.replication.replica_manager import ReplicaManager
from broker_app.storage.fs import MemoryFileSystem
from broker_app.storage.log_manager import LogManager
from tests.unit.controller.one_voter import OneVoter

LAG_MS = 1_000
BACKOFF_MS = 100


class Clock:
    def __init__(self) -> None:
        self.now = 0

    def __call__(self) -> int:
        return self.now


def _controller() -> tuple[OneVoter, dict[int, int]]:
    voter = OneVoter(ControllerConfig(session_timeout_ms=60_000))
    voter.start_brokers(1, 2)
    epochs = {b: voter.image.brokers[b].epoch for b in (1, 2)}
    voter.raft.create_topics(CreateTopicsRequest([NewTopic("t", 1, 2)]), 0)
    voter.commit()
    return voter, epochs


def _send(apis: OneVoter, rm: ReplicaManager, req: AlterPartitionRequest, epoch: int,
          now: int) -> None:  # fmt: skip
    body = build_alter_partition(req, epoch, rm.topic_ids["t"])
    resp = apis.handle(Request(body.__api_key__, body.__version__, 1, "b1", body), now)
    top, answer = parse_alter_partition(resp)
    rm.on_alter_partition_response(req, answer, top)


def test_lost_alter_partition_is_retried_after_backoff_and_the_isr_commits() -> None:
    controller, epochs = _controller()
    reg = controller.image.partition("t", 0)
    leader = reg.leader
    follower = next(b for b in reg.replicas if b != leader)
    clock = Clock()
    store = LogManager.open(Path("/sim/broker/data"), fs=MemoryFileSystem())
    rm = ReplicaManager(leader, store, replica_lag_time_max_ms=LAG_MS,
                        clock=clock, alter_partition_backoff_ms=(BACKOFF_MS, 800))  # fmt: skip
    rm.topic_ids["t"] = controller.image.topics["t"].topic_id
    rm.apply_partition("t", 0, leader, reg.leader_epoch, tuple(reg.isr), tuple(reg.replicas),
                       reg.partition_epoch, 1)  # fmt: skip
    manager = rm.alter_partition_manager

    # The follower never fetches: after replica.lag.time.max.ms the leader proposes ISR {leader}.
    clock.now = LAG_MS + 1
    rm.tick()
    [lost] = manager.poll(clock.now)
    assert lost.new_isr == (leader,)
    rm.on_alter_partition_failure(lost, "connection reset")  # the request never arrived
    assert rm.get_partition("t", 0).pending_alter_partition == lost

    clock.now += BACKOFF_MS - 1
    assert manager.poll(clock.now) == []  # not before the backoff
    rm.tick()
    assert manager.poll(clock.now) == []  # and no second proposal while one is pending
    clock.now += 1
    [retry] = manager.poll(clock.now)
    assert retry == lost and manager.retries == 1

    _send(controller, rm, retry, epochs[leader], clock.now)
    p = rm.get_partition("t", 0)
    assert p.isr == frozenset({leader}) and p.pending_alter_partition is None
    assert controller.image.partition("t", 0).isr == (leader,)
    assert manager.pending == 0 and manager.poll(clock.now + 10_000) == []
    assert follower not in controller.image.partition("t", 0).isr


def test_backoff_doubles_and_is_capped_and_a_superseded_proposal_is_dropped() -> None:
    current: set[str] = {"a"}
    manager = AlterPartitionManager(lambda r: r.topic in current, retry_backoff_ms=100,
                                    max_backoff_ms=250)  # fmt: skip
    req = AlterPartitionRequest("a", 0, 1, 0, (1,), 0)
    manager.submit(req, 0)
    sends = []
    now = 0
    for _ in range(4):
        [r] = manager.poll(now)
        sends.append(now)
        manager.on_failure(r, now)
        now = manager.next_due_ms() or 0
    assert [b - a for a, b in zip(sends, sends[1:], strict=False)] == [100, 200, 250]
    # A retriable top-level error is retried too; a partition-level answer is delivered.
    [r] = manager.poll(now)
    assert manager.on_response(r, Errors.NOT_CONTROLLER, AlterPartitionResponse(), now) is None
    [r] = manager.poll(manager.next_due_ms() or 0)
    answer = AlterPartitionResponse(error=Errors.INVALID_UPDATE_VERSION)
    assert manager.on_response(r, Errors.NONE, answer, now) is answer
    assert manager.pending == 0
    # New metadata replaced the proposal: it is dropped, not retried.
    manager.submit(req, 0)
    current.clear()
    assert manager.poll(10_000) == [] and manager.pending == 0
