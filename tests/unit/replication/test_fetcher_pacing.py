"""Issue 18: a follower whose every partition is FENCED must wait, not spin, and resume on metadata.

First the decision alone (FetchPacer) driven message by message over the hand-driven cluster
(no clock, no sleeping); then the real ReplicaFetcherThread in an event loop against a real
leader's KafkaApis behind a socket, showing the loop yields while fenced and resumes when a
leader-epoch update re-adds the partition.
"""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import pytest
from replication_sim import Cluster, values

from broker_app.config import BrokerConfig
from broker_app.environment import monotonic_ms
from broker_app.replication.errors import Errors
from broker_app.replication.fetcher import FENCED, FETCHING
from broker_app.replication.fetcher_pacing import MAX_BACKOFF_FACTOR, FetchPacer, RoundOutcome
from broker_app.replication.replica_manager import ReplicaManager
from broker_app.server.main import build_broker
from broker_app.server.network import SocketServer
from broker_app.server.replica_fetcher import ReplicaFetcherManager
from broker_app.storage.log import LogConfig
from broker_app.storage.log_manager import LogManager
from broker_app.storage.records import build_batch

A, B = 1, 2
TOPIC_ID = uuid.UUID(int=7)
BACKOFF = 200


def _round(cluster: Cluster, bid: int) -> RoundOutcome:
    """What ReplicaFetcherThread.run_round does for one partition, without the socket."""
    f = cluster.brokers[bid].fetcher
    assert f is not None
    if f.state != FETCHING:
        return RoundOutcome(sent=0, errors=0)
    outcome = cluster.fetch_round(bid)
    return RoundOutcome(sent=1, errors=int(outcome.error != Errors.NONE))


def test_all_fenced_waits_with_bounded_backoff_then_resumes_on_new_epoch(make_cluster) -> None:
    cluster = make_cluster([A, B])
    cluster.elect(A, isr=[A, B])
    cluster.produce(["m1"])
    pacer = FetchPacer(BACKOFF)
    now = 0
    pacer.round_started()
    assert pacer.round_done(_round(cluster, B), now) == 0  # a clean fetch: go on at once
    assert values(cluster.brokers[B].log) == ["m1"]

    # The controller bumps A's epoch and B has not heard yet: B's next fetch is fenced.
    cluster.elect(A, isr=[A, B], followers=[])
    cluster.produce(["m2"])
    pacer.round_started()
    first = pacer.round_done(_round(cluster, B), now)
    assert cluster.brokers[B].fetcher.state == FENCED
    assert first == BACKOFF and pacer.delay_ms(now) == BACKOFF
    assert pacer.delay_ms(now + BACKOFF - 1) > 0  # not a round before the backoff is over

    # Every later round has nothing to send (the only partition is FENCED): each one waits,
    # longer each time, never more than MAX_BACKOFF_FACTOR x the backoff.
    delays = []
    for _ in range(8):
        now += pacer.delay_ms(now)
        assert pacer.delay_ms(now) == 0
        pacer.round_started()
        delays.append(pacer.round_done(_round(cluster, B), now))
    assert all(d > 0 for d in delays)
    assert delays == sorted(delays) and max(delays) == BACKOFF * MAX_BACKOFF_FACTOR
    assert values(cluster.brokers[B].log) == ["m1"]

    # The leader-epoch update reaches B (new fetcher state), the edge calls wake(): no wait.
    cluster.make_follower(B)
    pacer.wake(now)
    assert pacer.delay_ms(now) == 0
    pacer.round_started()
    assert pacer.round_done(_round(cluster, B), now) == 0
    assert values(cluster.brokers[B].log) == ["m1", "m2"]
    assert pacer.stalls == 0


def test_metadata_arriving_during_a_failing_round_cancels_its_backoff() -> None:
    pacer = FetchPacer(BACKOFF)
    pacer.round_started()
    pacer.wake(5)  # the new leader epoch was applied while the fetch was in flight
    assert pacer.round_done(RoundOutcome(sent=1, errors=1), 7) == 0
    assert pacer.delay_ms(7) == 0
    pacer.round_started()
    assert pacer.round_done(RoundOutcome(sent=1, errors=1), 8) == BACKOFF


def test_bad_backoff_is_refused() -> None:
    with pytest.raises(ValueError, match="replica.fetch.backoff.ms"):
        FetchPacer(0)


async def _until(predicate, what: str, timeout_s: float = 10.0) -> None:
    async def poll() -> None:
        while not predicate():
            await asyncio.sleep(0.01)

    try:
        await asyncio.wait_for(poll(), timeout_s)
    except TimeoutError:
        raise AssertionError(f"never happened: {what}") from None


async def test_real_fetcher_thread_yields_while_fenced_and_resumes_on_new_epoch(
    tmp_path: Path,
) -> None:
    # Leader: broker 1's real request handlers behind a real socket, leading t-0 at epoch 5.
    # (its link to a controller is never started: the partition is set by hand)
    leader_apis, leader_logs = build_broker(
        BrokerConfig(node_id=A, data_dir=tmp_path / "leader", port=0,
                     controller=("127.0.0.1", 1))
    )
    leader_rm = leader_apis.replica_manager
    leader_rm.apply_partition("t", 0, A, 5, (A, B), (A, B), 0, 1)
    leader_rm.topic_ids["t"] = TOPIC_ID  # as the metadata gives it: Fetch v13+ names topics by id
    server = SocketServer(leader_apis, "127.0.0.1", 0, 1 << 20)
    await server.start()
    leader_rm.append_records(1, {("t", 0): build_batch([(None, b"m1")], timestamp=0)})

    follower_logs = LogManager.open(tmp_path / "follower", LogConfig())
    follower_rm = ReplicaManager(B, follower_logs, clock=monotonic_ms)
    follower_rm.topic_ids["t"] = TOPIC_ID
    # A backoff far longer than this test: after the fenced round only a wake() can resume it.
    fetchers = ReplicaFetcherManager(
        follower_rm, lambda _node: ("127.0.0.1", server.port), max_wait_ms=20,
        backoff_ms=60_000, request_timeout_ms=5_000,
    )  # fmt: skip
    try:
        follower_rm.apply_partition("t", 0, A, 4, (A, B), (A, B), 0, 1)  # B is an epoch behind
        thread = fetchers.threads[A]
        state = thread.states[("t", 0)]
        await _until(lambda: state.state == FENCED, "the leader fences epoch 4")
        fenced_rounds = thread.rounds
        for _ in range(200):  # before issue 18's fix this loop never got control back
            await asyncio.sleep(0)
        assert thread.rounds == fenced_rounds  # waiting, not spinning
        assert thread.pacer.delay_ms(follower_rm.clock()) > 0
        assert follower_rm.get_partition("t", 0).log.log_end_offset == 0

        follower_rm.apply_partition("t", 0, A, 5, (A, B), (A, B), 1, 1)  # metadata catches up
        log = follower_rm.get_partition("t", 0).log
        await _until(lambda: log.log_end_offset == 1, "the follower fetches m1 at epoch 5")
        assert thread.states[("t", 0)].state == FETCHING
    finally:
        await fetchers.stop()
        await server.stop()
        follower_logs.shutdown()
        leader_logs.shutdown()
