"""FetcherSession: one leader's replica fetches, sans I/O — request building and response applying.

The partition map and message handling of Kafka's AbstractFetcherThread/ReplicaFetcherThread,
without the thread: every partition this broker follows from one leader, each with its
ReplicaFetcherState (fetcher.py). A round is up to four requests, built one after the other
because each answer can move partitions into the next step:
  ListOffsets (partitions out of range: latest, then earliest — Kafka's fetchOffsetAndTruncate)
  -> OffsetForLeaderEpoch v4 (partitions "truncating", kip-101 / kip-279)
  -> Fetch v15 (partitions "fetching"; LastFetchedEpoch under the diverging-epoch protocol;
     topics by id, KIP-516; ReplicaState carries this broker's epoch, KIP-903, as Kafka's
     followers send it).
`build_*()` return a PendingRequest (the kio request entity plus the states it was built
from) or nothing; `apply(pending, response)` feeds the answer to the states and returns how
many partitions answered with an error. An answer is applied to a partition only if it still
has the same state object and is still a follower (leadership did not change in flight).
The I/O edge (server/replica_fetcher.py) sends, paces and backs off; this class never waits.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from kio.schema.fetch.v15 import request as fetch_v15

from broker_app.protocol.codec import request_class
from broker_app.protocol.entities import build
from broker_app.replication.errors import Errors
from broker_app.replication.fetcher import (
    FETCHING,
    OUT_OF_RANGE,
    TRUNCATING,
    ReplicaFetcherState,
)
from broker_app.replication.messages import EpochEndOffset, FetchPartitionResult, ListOffsetsAnswer
from broker_app.replication.partition import Partition

log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]

LIST_OFFSETS, OFFSET_FOR_LEADER_EPOCH, FETCH = 2, 23, 1
LIST_OFFSETS_VERSION, OFFSET_FOR_LEADER_EPOCH_VERSION = 4, 4  # Fetch: v15, kio's classes below
_NO_TOPIC_ID = uuid.UUID(int=0)


@dataclass
class PendingRequest:
    api_key: int
    body: Any  # the kio request entity to send
    states: dict[TopicPartition, ReplicaFetcherState]
    state: str  # the fetcher state every partition in it was in
    topic_names: dict[uuid.UUID, str] = field(default_factory=dict)  # Fetch: id -> name


def _error(code: int) -> Errors:
    try:
        return Errors(code)
    except ValueError:
        return Errors.UNKNOWN_SERVER_ERROR


# replica.fetch.response.max.bytes: Kafka's default bound of a whole replica Fetch response.
REPLICA_FETCH_RESPONSE_MAX_BYTES = 10 * 1024 * 1024


class FetcherSession:
    def __init__(self, node_id: int, leader_id: int, max_wait_ms: int, max_bytes: int,
                 response_max_bytes: int = REPLICA_FETCH_RESPONSE_MAX_BYTES,
                 topic_ids: Mapping[str, uuid.UUID] | None = None,
                 broker_epoch: Callable[[], int] = lambda: -1,
                 unclean_allowed: Callable[[str], bool] = lambda _topic: False,
                 ) -> None:  # fmt: skip
        """`max_bytes` is each partition's limit (replica.fetch.max.bytes), `response_max_bytes`
        the whole response's (replica.fetch.response.max.bytes): the leader honours both
        (KIP-74), so the second must not be the first, or one partition's catch-up would starve
        every other partition of the response. `topic_ids` (the ReplicaManager's, from the
        metadata) names topics in Fetch; `broker_epoch()` is this broker's registered epoch
        (-1 before it has one); `unclean_allowed(topic)` its unclean.leader.election.enable
        (ReplicaManager.unclean_leader_election_enabled). `apply` raises
        LogTruncationNotAllowedError when a partition's fetcher does: the I/O edge must stop
        the broker."""
        self.topic_ids: Mapping[str, uuid.UUID] = {} if topic_ids is None else topic_ids
        self.broker_epoch = broker_epoch
        self.unclean_allowed = unclean_allowed
        self.node_id = node_id
        self.leader_id = leader_id
        self.max_wait_ms = max_wait_ms
        self.max_bytes = max_bytes
        self.response_max_bytes = max(response_max_bytes, max_bytes)
        self.states: dict[TopicPartition, ReplicaFetcherState] = {}

    def add(self, partition: Partition) -> ReplicaFetcherState:
        tp = (partition.topic, partition.partition)
        topic = partition.topic
        st = self.states[tp] = ReplicaFetcherState(
            partition, self.max_bytes, lambda: self.unclean_allowed(topic))
        return st

    def remove(self, tp: TopicPartition) -> None:
        self.states.pop(tp, None)

    def _in(self, state: str) -> dict[TopicPartition, ReplicaFetcherState]:
        return {tp: st for tp, st in self.states.items() if st.state == state}

    def _current(self, pending: PendingRequest, tp: TopicPartition) -> ReplicaFetcherState | None:
        st = pending.states.get(tp)
        if st is None or self.states.get(tp) is not st or st.partition.role != "follower":
            return None
        return st if st.state == pending.state else None

    # --- building ------------------------------------------------------------------------

    def build_list_offsets(self) -> list[PendingRequest]:
        """One ListOffsets per timestamp asked (a partition may appear once per request)."""
        by_ts: dict[int, dict[TopicPartition, ReplicaFetcherState]] = {}
        for tp, st in self._in(OUT_OF_RANGE).items():
            by_ts.setdefault(st.build_list_offsets().timestamp, {})[tp] = st
        out = []
        for _ts, states in sorted(by_ts.items()):
            topics: dict[str, list[dict[str, Any]]] = {}
            for (topic, p), st in states.items():
                r = st.build_list_offsets()
                topics.setdefault(topic, []).append(
                    {"partition_index": p, "current_leader_epoch": r.current_leader_epoch,
                     "timestamp": r.timestamp}  # fmt: skip
                )
            body = build(
                request_class(LIST_OFFSETS, LIST_OFFSETS_VERSION),
                {
                    "replica_id": self.node_id,
                    "isolation_level": 0,
                    "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()],
                },
            )
            out.append(PendingRequest(LIST_OFFSETS, body, states, OUT_OF_RANGE))
        return out

    def build_offset_for_leader_epoch(self) -> PendingRequest | None:
        states = self._in(TRUNCATING)
        if not states:
            return None
        topics: dict[str, list[dict[str, Any]]] = {}
        for (topic, p), st in states.items():
            r = st.build_offset_for_leader_epoch()
            topics.setdefault(topic, []).append(
                {"partition": p, "current_leader_epoch": r.current_leader_epoch,
                 "leader_epoch": r.leader_epoch}  # fmt: skip
            )
        body = build(
            request_class(OFFSET_FOR_LEADER_EPOCH, OFFSET_FOR_LEADER_EPOCH_VERSION),
            {
                "replica_id": self.node_id,
                "topics": [{"topic": t, "partitions": ps} for t, ps in topics.items()],
            },
        )
        return PendingRequest(OFFSET_FOR_LEADER_EPOCH, body, states, TRUNCATING)

    def build_fetch(self) -> PendingRequest | None:
        """FENCED partitions are not fetched (they wait for new metadata). Built as kio's v15
        classes directly, not through entities.build: every replica fetch of a run passes
        here."""
        states = self._in(FETCHING)
        if not states:
            return None
        topics: dict[uuid.UUID, list[Any]] = {}
        names: dict[uuid.UUID, str] = {}
        for (topic, p), st in states.items():
            r = st.build_fetch()
            # An id the metadata has not given yet: the leader answers UNKNOWN_TOPIC_ID.
            topic_id = self.topic_ids.get(topic, _NO_TOPIC_ID)
            names[topic_id] = topic
            topics.setdefault(topic_id, []).append(fetch_v15.FetchPartition(
                partition=p, current_leader_epoch=r.current_leader_epoch,
                fetch_offset=r.fetch_offset, last_fetched_epoch=r.last_fetched_epoch,
                log_start_offset=r.log_start_offset, partition_max_bytes=r.max_bytes))
        body = fetch_v15.FetchRequest(
            replica_state=fetch_v15.ReplicaState(replica_id=self.node_id,
                                                 replica_epoch=self.broker_epoch()),
            max_wait=timedelta(milliseconds=self.max_wait_ms), min_bytes=1,
            max_bytes=self.response_max_bytes, isolation_level=0, session_id=0,
            session_epoch=-1, forgotten_topics_data=(), rack_id="",
            topics=tuple(fetch_v15.FetchTopic(topic_id=t, partitions=tuple(ps))
                         for t, ps in topics.items()))  # fmt: skip
        return PendingRequest(FETCH, body, states, FETCHING, names)

    # --- applying ------------------------------------------------------------------------

    def apply(self, pending: PendingRequest, response: Any) -> int:
        """Apply the leader's answer; returns the number of partition-level errors."""
        if pending.api_key == LIST_OFFSETS:
            return self._apply_list_offsets(pending, response)
        if pending.api_key == OFFSET_FOR_LEADER_EPOCH:
            return self._apply_offset_for_leader_epoch(pending, response)
        return self._apply_fetch(pending, response)

    def _apply_list_offsets(self, pending: PendingRequest, response: Any) -> int:
        errors = 0
        for t in response.topics:
            for p in t.partitions:
                tp = (t.name, p.partition_index)
                st = self._current(pending, tp)
                if st is None:
                    continue
                answer = ListOffsetsAnswer(error=_error(p.error_code.value), offset=p.offset)
                cut = st.on_list_offsets_response(answer)
                if cut is not None:
                    log.info("%s-%d truncated to %d (leader offsets after out of range)",
                             tp[0], tp[1], cut)  # fmt: skip
                errors += answer.error != Errors.NONE
        return errors

    def _apply_offset_for_leader_epoch(self, pending: PendingRequest, response: Any) -> int:
        errors = 0
        for t in response.topics:
            for p in t.partitions:
                tp = (t.topic, p.partition)
                st = self._current(pending, tp)
                if st is None:
                    continue
                answer = EpochEndOffset(
                    error=_error(p.error_code.value),
                    leader_epoch=p.leader_epoch,
                    end_offset=p.end_offset,
                )
                cut = st.on_offset_for_leader_epoch_response(answer)
                if cut is not None:
                    log.info("%s-%d truncated to %d (OffsetForLeaderEpoch)", tp[0], tp[1], cut)
                errors += answer.error != Errors.NONE
        return errors

    def _apply_fetch(self, pending: PendingRequest, response: Any) -> int:
        errors = 0
        for t in response.responses:
            name = pending.topic_names.get(t.topic_id)
            if name is None:
                continue  # an id this request did not ask for
            for p in t.partitions:
                tp = (name, p.partition_index)
                st = self._current(pending, tp)
                if st is None:
                    continue
                de = p.diverging_epoch
                diverging = None
                if de is not None and (de.epoch >= 0 or de.end_offset >= 0):
                    diverging = EpochEndOffset(leader_epoch=de.epoch, end_offset=de.end_offset)
                result = FetchPartitionResult(
                    error=_error(p.error_code.value),
                    high_watermark=p.high_watermark,
                    log_start_offset=p.log_start_offset,
                    records=bytes(p.records) if p.records else b"",
                    diverging_epoch=diverging,
                )
                outcome = st.on_fetch_response(result)
                if outcome.truncated_to is not None:
                    log.info("%s-%d truncated to %d (diverging epoch)",
                             tp[0], tp[1], outcome.truncated_to)  # fmt: skip
                if outcome.error != Errors.NONE:
                    errors += 1
                    log.debug("%s-%d fetch from %d: %s %s", tp[0], tp[1], self.leader_id,
                              outcome.error.name, outcome.detail)  # fmt: skip
        return errors
