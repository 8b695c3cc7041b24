"""Raft RPCs as plain dataclasses (the sans-I/O core's wire format).

Field names follow Kafka's Vote / BeginQuorumEpoch / EndQuorumEpoch / Fetch / FetchSnapshot
schemas (KIP-595, KIP-630) so that the edge can map them one to one onto kio's entities.
Differences, on purpose:
- FetchRequest carries the follower's known high watermark (as KIP-1166 adds), so the leader
  parks an empty fetch only when the follower is already up to date.
- FetchSnapshot transfers the whole snapshot in one response (no position/chunking).
- `correlation_id` lives in the Envelope, as in Kafka's request header.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from .log import Batch, OffsetAndEpoch, Snapshot


class Errors(Enum):
    NONE = "NONE"
    FENCED_LEADER_EPOCH = "FENCED_LEADER_EPOCH"
    NOT_LEADER_OR_FOLLOWER = "NOT_LEADER_OR_FOLLOWER"
    UNKNOWN_LEADER_EPOCH = "UNKNOWN_LEADER_EPOCH"
    SNAPSHOT_NOT_FOUND = "SNAPSHOT_NOT_FOUND"


@dataclass(frozen=True)
class VoteRequest:
    candidate_epoch: int
    candidate_id: int
    last_offset_epoch: int
    last_offset: int  # the candidate's log end offset
    pre_vote: bool = False  # KIP-996: "would you vote for me?", changes no state


@dataclass(frozen=True)
class VoteResponse:
    leader_epoch: int
    leader_id: int | None
    vote_granted: bool


@dataclass(frozen=True)
class BeginQuorumEpochRequest:
    leader_epoch: int
    leader_id: int


@dataclass(frozen=True)
class BeginQuorumEpochResponse:
    leader_epoch: int
    leader_id: int | None
    error: Errors = Errors.NONE


@dataclass(frozen=True)
class EndQuorumEpochRequest:
    leader_epoch: int
    leader_id: int
    preferred_successors: tuple[int, ...]


@dataclass(frozen=True)
class EndQuorumEpochResponse:
    leader_epoch: int
    leader_id: int | None
    error: Errors = Errors.NONE


@dataclass(frozen=True)
class FetchRequest:
    replica_id: int
    current_leader_epoch: int
    fetch_offset: int
    last_fetched_epoch: int
    high_watermark: int | None


@dataclass(frozen=True)
class FetchResponse:
    leader_epoch: int
    leader_id: int | None
    error: Errors = Errors.NONE
    high_watermark: int | None = None
    log_start_offset: int = 0
    batches: tuple[Batch, ...] = ()
    diverging_epoch: OffsetAndEpoch | None = None
    snapshot_id: OffsetAndEpoch | None = None


@dataclass(frozen=True)
class FetchSnapshotRequest:
    replica_id: int
    current_leader_epoch: int
    snapshot_id: OffsetAndEpoch


@dataclass(frozen=True)
class FetchSnapshotResponse:
    leader_epoch: int
    leader_id: int | None
    error: Errors = Errors.NONE
    snapshot: Snapshot | None = None


Message = (
    VoteRequest | VoteResponse | BeginQuorumEpochRequest | BeginQuorumEpochResponse
    | EndQuorumEpochRequest | EndQuorumEpochResponse | FetchRequest | FetchResponse
    | FetchSnapshotRequest | FetchSnapshotResponse
)


@dataclass(frozen=True)
class Envelope:
    """One message between two voters; a response echoes its request's correlation_id."""

    src: int
    dst: int
    correlation_id: int
    body: Message = field()
