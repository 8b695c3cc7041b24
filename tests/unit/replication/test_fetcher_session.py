"""FetcherSession against a real leader's KafkaApis, over the wire format but without sockets.

Every request the session builds is encoded, decoded and handled by the leader's real handlers,
and the encoded answer is decoded and applied: what ReplicaFetcherThread does, minus the socket.
The out-of-range cases show the fallback asks the leader with ListOffsets (a Fetch answer has
no log end offset) and truncates as Kafka's fetcher does.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from broker_app.config import BrokerConfig
from broker_app.protocol.codec import (
    decode_request,
    decode_response,
    encode_request,
    encode_response,
)
from broker_app.replication.behaviour import ReplicationBehaviour
from broker_app.replication.fetcher import FETCHING, OUT_OF_RANGE
from broker_app.replication.fetcher_session import LIST_OFFSETS, FetcherSession, PendingRequest
from broker_app.replication.replica_manager import ReplicaManager
from broker_app.server.kafka_apis import DelayedFetch, KafkaApis
from broker_app.server.main import build_broker
from broker_app.storage.fs import MemoryFileSystem
from broker_app.storage.log_manager import LogManager
from broker_app.storage.records import build_batch

A, B = 1, 2
TOPIC_IDS = {"t": uuid.UUID(int=7)}  # as the metadata gives them (Fetch v13+ names topics by id)


def _send(apis: KafkaApis, body: Any) -> Any:
    request = decode_request(encode_request("fetcher", 7, body)[4:])
    result = apis.handle(request)
    if isinstance(result, DelayedFetch):
        result.give_up()
        result = result.complete(True)
    wire = encode_response(request.correlation_id, request.api_key, result)[4:]
    return decode_response(request.api_key, request.api_version, wire)[1]


def _round(session: FetcherSession, leader: KafkaApis) -> list[tuple[int, int]]:
    """One round as the thread runs it; returns (api key, errors) per request sent."""
    sent: list[tuple[int, int]] = []
    pendings: list[PendingRequest | None] = list(session.build_list_offsets())
    for pending in pendings:
        assert pending is not None
        sent.append((pending.api_key, session.apply(pending, _send(leader, pending.body))))
    for build_next in (session.build_offset_for_leader_epoch, session.build_fetch):
        pending = build_next()
        if pending is not None:
            sent.append((pending.api_key, session.apply(pending, _send(leader, pending.body))))
    return sent


def _leader(tmp_path: Path) -> KafkaApis:
    # Its link to a controller is never started: the tests set the partitions by hand.
    apis, _logs = build_broker(BrokerConfig(node_id=A, data_dir=tmp_path / "leader", port=0,
                                            controller=("127.0.0.1", 1)))
    apis.replica_manager.topic_ids.update(TOPIC_IDS)
    return apis


def _values(rm: ReplicaManager) -> list[int]:
    log = rm.get_partition("t", 0).log
    return [h.base_offset for h, _ in log.batches(log.log_start_offset)]


def _follower(behaviour: ReplicationBehaviour | None = None) -> ReplicaManager:
    store = LogManager.open(Path("/sim/broker/data"), fs=MemoryFileSystem())
    return ReplicaManager(B, store, behaviour, clock=lambda: 0)


def _batch(v: str) -> bytes:
    return build_batch([(None, v.encode())], timestamp=0)


def test_session_replicates_through_the_real_handlers(tmp_path: Path) -> None:
    leader = _leader(tmp_path)
    lrm = leader.replica_manager
    lrm.apply_partition("t", 0, A, 3, (A, B), (A, B), 0, 1)
    lrm.append_records(1, {("t", 0): _batch("m1")})
    follower = _follower()
    follower.apply_partition("t", 0, A, 3, (A, B), (A, B), 0, 1)
    session = FetcherSession(B, A, max_wait_ms=0, max_bytes=1 << 20, topic_ids=TOPIC_IDS)
    st = session.add(follower.get_partition("t", 0))
    assert _round(session, leader) == [(1, 0)]  # one Fetch, no error
    assert _values(follower) == [0] and st.state == FETCHING
    # The next fetch reports the follower's LEO: the leader's HW moves to 1.
    assert _round(session, leader) == [(1, 0)]
    assert lrm.get_partition("t", 0).high_watermark == 1


def test_follower_behind_the_leader_log_start_asks_list_offsets(tmp_path: Path) -> None:
    leader = _leader(tmp_path)
    lrm = leader.replica_manager
    lrm.apply_partition("t", 0, A, 0, (A,), (A, B), 0, 1)
    for v in ("m1", "m2", "m3"):
        lrm.append_records(1, {("t", 0): _batch(v)})
    llog = lrm.get_partition("t", 0).log
    llog.truncate_fully_and_start_at(3)  # as if retention deleted 0..2
    lrm.append_records(1, {("t", 0): _batch("m4")})
    follower = _follower()
    follower.apply_partition("t", 0, A, 0, (A,), (A, B), 0, 1)
    session = FetcherSession(B, A, max_wait_ms=0, max_bytes=1 << 20, topic_ids=TOPIC_IDS)
    st = session.add(follower.get_partition("t", 0))
    assert _round(session, leader) == [(1, 1)]  # OFFSET_OUT_OF_RANGE
    assert st.state == OUT_OF_RANGE
    # Latest (a replica gets the LEO, 4, not below our 0), then earliest (3): start over at 3.
    assert _round(session, leader) == [(LIST_OFFSETS, 0)]
    assert _round(session, leader) == [(LIST_OFFSETS, 0), (1, 0)]
    flog = follower.get_partition("t", 0).log
    assert (flog.log_start_offset, flog.log_end_offset) == (3, 4)


def test_follower_longer_than_an_unclean_leader_truncates_to_its_log_end(tmp_path: Path) -> None:
    # Pre-KIP-101 follower whose HW covers data the (uncleanly elected) leader never had:
    # the Fetch says OFFSET_OUT_OF_RANGE and only ListOffsets can say where the leader ends.
    leader = _leader(tmp_path)
    lrm = leader.replica_manager
    lrm.apply_partition("t", 0, A, 1, (A,), (A, B), 0, 1)
    lrm.append_records(1, {("t", 0): _batch("a1")})
    follower = _follower(ReplicationBehaviour(truncation="high-watermark"))
    follower.apply_partition("t", 0, B, 0, (B,), (A, B), 0, 1)
    for v in ("b1", "b2", "b3"):
        follower.append_records(1, {("t", 0): _batch(v)})
    assert follower.get_partition("t", 0).high_watermark == 3
    follower.apply_partition("t", 0, A, 1, (A,), (A, B), 1, 1)
    session = FetcherSession(B, A, max_wait_ms=0, max_bytes=1 << 20, topic_ids=TOPIC_IDS)
    st = session.add(follower.get_partition("t", 0))
    assert _round(session, leader) == [(1, 1)] and st.state == OUT_OF_RANGE
    assert _values(follower) == [0, 1, 2]  # nothing cut on the Fetch answer alone
    assert _round(session, leader)[0] == (LIST_OFFSETS, 0)
    assert st.truncations[-1] == 1 and follower.get_partition("t", 0).log_end_offset == 1


def test_response_limit_is_not_the_partition_limit(tmp_path: Path) -> None:
    """replica.fetch.max.bytes bounds each partition, replica.fetch.response.max.bytes (10 MiB)
    the response: both partitions of a catching-up follower move in one round. With the
    response bounded by the partition limit (what the session sent before), the leader, now
    honouring the response's max_bytes (KIP-74), would give the second partition nothing."""
    leader = _leader(tmp_path)
    lrm = leader.replica_manager
    big = build_batch([(None, b"v" * 600_000)], timestamp=0)
    for p in (0, 1):
        lrm.apply_partition("t", p, A, 3, (A, B), (A, B), 0, 1)
        lrm.append_records(1, {("t", p): big})
    for response_max, moved in ((None, [1, 1]), (1 << 20, [1, 0])):
        follower = _follower()
        kwargs = {} if response_max is None else {"response_max_bytes": response_max}
        session = FetcherSession(B, A, max_wait_ms=0, max_bytes=1 << 20, topic_ids=TOPIC_IDS,
                                 **kwargs)
        for p in (0, 1):
            follower.apply_partition("t", p, A, 3, (A, B), (A, B), 0, 1)
            session.add(follower.get_partition("t", p))
        assert _round(session, leader) == [(1, 0)]
        assert [follower.get_partition("t", p).log.log_end_offset for p in (0, 1)] == moved


def test_fetch_v15_names_topics_by_id_and_carries_the_broker_epoch(tmp_path: Path) -> None:
    """The session sends Fetch v15 (KIP-516 topic ids, KIP-903 ReplicaState): the leader keeps
    the epoch the fetch carried for the follower, and answers an id it does not know with
    UNKNOWN_TOPIC_ID (the follower retries; nothing is applied)."""
    leader = _leader(tmp_path)
    lrm = leader.replica_manager
    lrm.apply_partition("t", 0, A, 3, (A, B), (A, B), 0, 1)
    follower = _follower()
    follower.apply_partition("t", 0, A, 3, (A, B), (A, B), 0, 1)
    session = FetcherSession(B, A, max_wait_ms=0, max_bytes=1 << 20, topic_ids=TOPIC_IDS,
                             broker_epoch=lambda: 42)  # fmt: skip
    session.add(follower.get_partition("t", 0))
    pending = session.build_fetch()
    assert pending is not None and pending.body.replica_state.replica_epoch == 42
    assert [t.topic_id for t in pending.body.topics] == [TOPIC_IDS["t"]]
    assert _round(session, leader) == [(1, 0)]
    assert lrm.get_partition("t", 0).remote_replicas[B].broker_epoch == 42

    stranger = FetcherSession(B, A, max_wait_ms=0, max_bytes=1 << 20,
                              topic_ids={"t": uuid.UUID(int=99)})  # fmt: skip
    st = stranger.add(follower.get_partition("t", 0))
    pending = stranger.build_fetch()
    assert pending is not None
    [t] = _send(leader, pending.body).responses
    assert t.topic_id == uuid.UUID(int=99)
    assert t.partitions[0].error_code.value == 100  # UNKNOWN_TOPIC_ID
    assert stranger.apply(pending, _send(leader, pending.body)) == 1 and st.state == FETCHING
