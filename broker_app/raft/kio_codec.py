"""The edge mapping: Raft messages (messages.py) <-> kio's Kafka protocol entities.

Versions: Vote v2 (KIP-996's PreVote; directory ids left null: static voters),
BeginQuorumEpoch v0, EndQuorumEpoch v0, FetchSnapshot v0 (KIP-595) and Fetch v18
(KIP-1166's HighWatermark, which the leader uses to decide whether to park an empty fetch).
Every request names the one Raft partition, `__cluster_metadata-0` (Fetch by its fixed topic
id, Kafka's METADATA_TOPIC_ID).
Batches travel as v2 record batches (partitionLeaderEpoch = the Raft epoch, control flag for
LeaderChange), built and parsed with the storage layer; a snapshot travels whole as
FetchSnapshot's unaligned records at position 0 (messages.py: no chunking yet). A missing
leader id, high watermark, diverging epoch or snapshot id is Kafka's -1.

Used on the wire by broker_app/controller/raft_manager.py (quorum mode); tested here by
encoding to bytes and back.
"""

from __future__ import annotations

import datetime
from typing import Any

from kio.schema.begin_quorum_epoch.v0 import request as bqe_req
from kio.schema.begin_quorum_epoch.v0 import response as bqe_resp
from kio.schema.end_quorum_epoch.v0 import request as eqe_req
from kio.schema.end_quorum_epoch.v0 import response as eqe_resp
from kio.schema.errors import ErrorCode
from kio.schema.fetch.v18 import request as fetch_req
from kio.schema.fetch.v18 import response as fetch_resp
from kio.schema.fetch_snapshot.v0 import request as fs_req
from kio.schema.fetch_snapshot.v0 import response as fs_resp
from kio.schema.vote.v2 import request as vote_req
from kio.schema.vote.v2 import response as vote_resp
from kio.static.primitive import i8, i32, i64

from broker_app.metadata.records import METADATA_PARTITION, METADATA_TOPIC, METADATA_TOPIC_ID
from broker_app.storage import build_batch, decode_records
from broker_app.storage.records import iter_batches

from .log import Batch, OffsetAndEpoch, Snapshot
from .messages import (
    BeginQuorumEpochRequest,
    BeginQuorumEpochResponse,
    EndQuorumEpochRequest,
    EndQuorumEpochResponse,
    Errors,
    FetchRequest,
    FetchResponse,
    FetchSnapshotRequest,
    FetchSnapshotResponse,
    Message,
    VoteRequest,
    VoteResponse,
)

_ERRORS = {
    Errors.NONE: ErrorCode.none,
    Errors.FENCED_LEADER_EPOCH: ErrorCode.fenced_leader_epoch,
    Errors.NOT_LEADER_OR_FOLLOWER: ErrorCode.not_leader_or_follower,
    Errors.UNKNOWN_LEADER_EPOCH: ErrorCode.unknown_leader_epoch,
    Errors.SNAPSHOT_NOT_FOUND: ErrorCode.snapshot_not_found,
}
_FROM_KAFKA = {v: k for k, v in _ERRORS.items()}
_NONE = ErrorCode.none
P = i32(METADATA_PARTITION)


def _opt(value: int | None) -> int:
    return -1 if value is None else value


def _unopt(value: int) -> int | None:
    return None if value < 0 else value


def _error(code: ErrorCode) -> Errors:
    if code not in _FROM_KAFKA:
        raise ValueError(f"unexpected Raft error code {code!r}")
    return _FROM_KAFKA[code]


def encode_batches(batches: tuple[Batch, ...]) -> bytes:
    return b"".join(
        build_batch([(None, r) for r in b.records], base_offset=b.base_offset, epoch=b.epoch,
                    control=b.control, timestamp=0)
        for b in batches)


def decode_batches(data: bytes | None) -> tuple[Batch, ...]:
    out = []
    for header, view in iter_batches(data or b"", allow_partial_tail=False):
        values = tuple(bytes(r.value or b"") for r in decode_records(view))
        out.append(Batch(header.base_offset, header.partition_leader_epoch, values,
                         header.is_control))
    return tuple(out)


def to_kio(body: Message, cluster_id: str | None = None) -> Any:
    """Our message -> the kio request or response entity."""
    if isinstance(body, VoteRequest):
        part = vote_req.PartitionData(
            partition_index=P, replica_epoch=i32(body.candidate_epoch),
            replica_id=i32(body.candidate_id), replica_directory_id=None,
            voter_directory_id=None, last_offset_epoch=i32(body.last_offset_epoch),
            last_offset=i64(body.last_offset), pre_vote=body.pre_vote)
        return vote_req.VoteRequest(cluster_id=cluster_id, topics=(
            vote_req.TopicData(topic_name=METADATA_TOPIC, partitions=(part,)),))
    if isinstance(body, VoteResponse):
        part = vote_resp.PartitionData(
            partition_index=P, error_code=_NONE, leader_id=i32(_opt(body.leader_id)),
            leader_epoch=i32(body.leader_epoch), vote_granted=body.vote_granted)
        return vote_resp.VoteResponse(error_code=_NONE, topics=(
            vote_resp.TopicData(topic_name=METADATA_TOPIC, partitions=(part,)),))
    if isinstance(body, BeginQuorumEpochRequest):
        part = bqe_req.PartitionData(partition_index=P, leader_id=i32(body.leader_id),
                                     leader_epoch=i32(body.leader_epoch))
        return bqe_req.BeginQuorumEpochRequest(cluster_id=cluster_id, topics=(
            bqe_req.TopicData(topic_name=METADATA_TOPIC, partitions=(part,)),))
    if isinstance(body, BeginQuorumEpochResponse | EndQuorumEpochResponse):
        mod = bqe_resp if isinstance(body, BeginQuorumEpochResponse) else eqe_resp
        part = mod.PartitionData(partition_index=P, error_code=_ERRORS[body.error],
                                 leader_id=i32(_opt(body.leader_id)),
                                 leader_epoch=i32(body.leader_epoch))
        cls = mod.BeginQuorumEpochResponse if mod is bqe_resp else mod.EndQuorumEpochResponse
        return cls(error_code=_NONE, topics=(
            mod.TopicData(topic_name=METADATA_TOPIC, partitions=(part,)),))
    if isinstance(body, EndQuorumEpochRequest):
        part = eqe_req.PartitionData(
            partition_index=P, leader_id=i32(body.leader_id), leader_epoch=i32(body.leader_epoch),
            preferred_successors=tuple(i32(s) for s in body.preferred_successors))
        return eqe_req.EndQuorumEpochRequest(cluster_id=cluster_id, topics=(
            eqe_req.TopicData(topic_name=METADATA_TOPIC, partitions=(part,)),))
    if isinstance(body, FetchRequest):
        part = fetch_req.FetchPartition(
            partition=P, current_leader_epoch=i32(body.current_leader_epoch),
            fetch_offset=i64(body.fetch_offset), last_fetched_epoch=i32(body.last_fetched_epoch),
            partition_max_bytes=i32(8 * 1024 * 1024), replica_directory_id=None,
            high_watermark=i64(_opt(body.high_watermark)))
        return fetch_req.FetchRequest(
            cluster_id=cluster_id, replica_state=fetch_req.ReplicaState(
                replica_id=i32(body.replica_id)),
            max_wait=datetime.timedelta(milliseconds=500), min_bytes=i32(0),
            isolation_level=i8(0), topics=(fetch_req.FetchTopic(
                topic_id=METADATA_TOPIC_ID, partitions=(part,)),),
            forgotten_topics_data=())
    if isinstance(body, FetchResponse):
        div = body.diverging_epoch or OffsetAndEpoch(-1, -1)
        snap = body.snapshot_id or OffsetAndEpoch(-1, -1)
        part = fetch_resp.PartitionData(
            partition_index=P, error_code=_ERRORS[body.error],
            high_watermark=i64(_opt(body.high_watermark)),
            log_start_offset=i64(body.log_start_offset),
            diverging_epoch=fetch_resp.EpochEndOffset(epoch=i32(div.epoch),
                                                      end_offset=i64(div.offset)),
            current_leader=fetch_resp.LeaderIdAndEpoch(leader_id=i32(_opt(body.leader_id)),
                                                       leader_epoch=i32(body.leader_epoch)),
            snapshot_id=fetch_resp.SnapshotId(end_offset=i64(snap.offset),
                                              epoch=i32(snap.epoch)),
            aborted_transactions=None, preferred_read_replica=i32(-1),
            records=encode_batches(body.batches) if body.batches else None)
        return fetch_resp.FetchResponse(
            throttle_time=datetime.timedelta(0), error_code=_NONE, responses=(
                fetch_resp.FetchableTopicResponse(topic_id=METADATA_TOPIC_ID,
                                                  partitions=(part,)),))
    if isinstance(body, FetchSnapshotRequest):
        sid = body.snapshot_id
        part = fs_req.PartitionSnapshot(
            partition=P, current_leader_epoch=i32(body.current_leader_epoch),
            snapshot_id=fs_req.SnapshotId(end_offset=i64(sid.offset), epoch=i32(sid.epoch)),
            position=i64(0))
        return fs_req.FetchSnapshotRequest(
            cluster_id=cluster_id, replica_id=i32(body.replica_id),
            topics=(fs_req.TopicSnapshot(name=METADATA_TOPIC, partitions=(part,)),))
    if isinstance(body, FetchSnapshotResponse):
        snap = body.snapshot
        sid = snap.snapshot_id if snap else OffsetAndEpoch(-1, -1)
        payload = snap.payload if snap else b""
        part = fs_resp.PartitionSnapshot(
            index=P, error_code=_ERRORS[body.error],
            snapshot_id=fs_resp.SnapshotId(end_offset=i64(sid.offset), epoch=i32(sid.epoch)),
            current_leader=fs_resp.LeaderIdAndEpoch(leader_id=i32(_opt(body.leader_id)),
                                                    leader_epoch=i32(body.leader_epoch)),
            size=i64(len(payload)), position=i64(0), unaligned_records=payload)
        return fs_resp.FetchSnapshotResponse(
            throttle_time=datetime.timedelta(0), error_code=_NONE,
            topics=(fs_resp.TopicSnapshot(name=METADATA_TOPIC, partitions=(part,)),))
    raise TypeError(f"not a Raft message: {body!r}")


def _only(items: tuple[Any, ...], what: str) -> Any:
    if len(items) != 1:
        raise ValueError(f"{what}: expected the one Raft partition, got {len(items)}")
    return items[0]


def from_kio(entity: Any) -> Message:
    """A kio entity -> our message. Raises ValueError for anything but one partition of
    __cluster_metadata or a top-level error (the caller treats it as a failed request)."""
    if getattr(entity, "error_code", _NONE) != _NONE:
        raise ValueError(f"{type(entity).__name__} failed: {entity.error_code!r}")
    if isinstance(entity, vote_req.VoteRequest):
        p = _only(_only(entity.topics, "Vote").partitions, "Vote")
        return VoteRequest(p.replica_epoch, p.replica_id, p.last_offset_epoch, p.last_offset,
                           p.pre_vote)
    if isinstance(entity, vote_resp.VoteResponse):
        p = _only(_only(entity.topics, "Vote").partitions, "Vote")
        _error(p.error_code)
        return VoteResponse(p.leader_epoch, _unopt(p.leader_id), p.vote_granted)
    if isinstance(entity, bqe_req.BeginQuorumEpochRequest):
        p = _only(_only(entity.topics, "BeginQuorumEpoch").partitions, "BeginQuorumEpoch")
        return BeginQuorumEpochRequest(p.leader_epoch, p.leader_id)
    if isinstance(entity, bqe_resp.BeginQuorumEpochResponse):
        p = _only(_only(entity.topics, "BeginQuorumEpoch").partitions, "BeginQuorumEpoch")
        return BeginQuorumEpochResponse(p.leader_epoch, _unopt(p.leader_id), _error(p.error_code))
    if isinstance(entity, eqe_req.EndQuorumEpochRequest):
        p = _only(_only(entity.topics, "EndQuorumEpoch").partitions, "EndQuorumEpoch")
        return EndQuorumEpochRequest(p.leader_epoch, p.leader_id,
                                     tuple(int(s) for s in p.preferred_successors))
    if isinstance(entity, eqe_resp.EndQuorumEpochResponse):
        p = _only(_only(entity.topics, "EndQuorumEpoch").partitions, "EndQuorumEpoch")
        return EndQuorumEpochResponse(p.leader_epoch, _unopt(p.leader_id), _error(p.error_code))
    if isinstance(entity, fetch_req.FetchRequest):
        p = _only(_only(entity.topics, "Fetch").partitions, "Fetch")
        return FetchRequest(entity.replica_state.replica_id, p.current_leader_epoch,
                            p.fetch_offset, p.last_fetched_epoch, _unopt(p.high_watermark))
    if isinstance(entity, fetch_resp.FetchResponse):
        p = _only(_only(entity.responses, "Fetch").partitions, "Fetch")
        div, snap = p.diverging_epoch, p.snapshot_id
        return FetchResponse(
            p.current_leader.leader_epoch, _unopt(p.current_leader.leader_id),
            _error(p.error_code), _unopt(p.high_watermark), p.log_start_offset,
            decode_batches(p.records),
            OffsetAndEpoch(div.end_offset, div.epoch) if div.epoch >= 0 else None,
            OffsetAndEpoch(snap.end_offset, snap.epoch) if snap.end_offset >= 0 else None)
    if isinstance(entity, fs_req.FetchSnapshotRequest):
        p = _only(_only(entity.topics, "FetchSnapshot").partitions, "FetchSnapshot")
        return FetchSnapshotRequest(entity.replica_id, p.current_leader_epoch,
                                    OffsetAndEpoch(p.snapshot_id.end_offset, p.snapshot_id.epoch))
    if isinstance(entity, fs_resp.FetchSnapshotResponse):
        p = _only(_only(entity.topics, "FetchSnapshot").partitions, "FetchSnapshot")
        sid = OffsetAndEpoch(p.snapshot_id.end_offset, p.snapshot_id.epoch)
        if p.position != 0 or p.size != len(p.unaligned_records):
            raise ValueError("FetchSnapshot in chunks is not supported yet")
        snapshot = Snapshot(sid, bytes(p.unaligned_records)) if sid.offset >= 0 else None
        return FetchSnapshotResponse(p.current_leader.leader_epoch,
                                     _unopt(p.current_leader.leader_id), _error(p.error_code),
                                     snapshot)
    raise TypeError(f"not a Raft entity: {type(entity).__name__}")


__all__ = ["decode_batches", "encode_batches", "from_kio", "to_kio"]
