"""QuorumState: which role this voter has in which epoch, and the durable election state.

Roles (Kafka's EpochState classes): Unattached (epoch known, no leader, no vote), Voted (voted
for a candidate in this epoch), Prospective (asking for pre-votes, KIP-996; same epoch,
nothing persisted), Candidate, Leader, Follower, Resigned (a leader that stepped down
gracefully or lost its quorum and tells the others by EndQuorumEpoch).

Every transition that changes the epoch, the vote or the known leader is written to the
QuorumStateStore BEFORE anything is sent (Kafka's quorum-state file): a voter that restarts
must remember its vote, or it could vote twice in one epoch. On restart the voter resumes in
the recorded epoch: as Voted if it had voted, as Follower of a recorded leader, as Resigned if
it was the leader itself (it never leads again in an old epoch), else Unattached.
Deviation: Kafka >= 3.9 folds Voted into Unattached (a voted key); we keep them apart.

An observer (not a voter) is only ever Unattached or Follower: while Unattached its election
timer is reused as the time of its next probe, a Fetch to a random voter whose answer names
the leader.

The high watermark is carried from state to state (Kafka's QuorumState hands
state.highWatermark() to every new state but Resigned, whose leader's knowledge is not kept; a
new Leader starts without one until it commits in its epoch), and a follower refuses a
DivergingEpoch below it (raft_client). It is not persisted: a voter that restarts does not
know what was committed until a leader tells it (Kafka's initial states take none).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Protocol

from .config import RaftConfig
from .leader_state import LeaderState


@dataclass(frozen=True)
class ElectionState:
    epoch: int
    leader_id: int | None = None
    voted_id: int | None = None


class QuorumStateStore(Protocol):
    def read(self) -> ElectionState | None: ...
    def write(self, state: ElectionState) -> None: ...


class MemoryQuorumStateStore:
    """Durable as soon as written (a file store would fsync before returning)."""

    def __init__(self) -> None:
        self.state: ElectionState | None = None
        self.writes = 0

    def read(self) -> ElectionState | None:
        return self.state

    def write(self, state: ElectionState) -> None:
        self.state = state
        self.writes += 1


@dataclass
class UnattachedState:
    epoch: int
    election_deadline_ms: int
    high_watermark: int | None = None


@dataclass
class VotedState:
    epoch: int
    voted_id: int
    election_deadline_ms: int
    high_watermark: int | None = None


@dataclass
class CandidateState:
    epoch: int
    retries: int  # elections lost or timed out before this one (QuorumState.failed_elections)
    election_deadline_ms: int
    granted: set[int] = field(default_factory=set)
    rejected: set[int] = field(default_factory=set)
    backoff_until_ms: int | None = None  # set once this election is lost: wait, then retry
    vote_retry_ms: dict[int, int] = field(default_factory=dict)  # voter -> when to resend
    high_watermark: int | None = None


@dataclass
class ProspectiveState:
    epoch: int  # the current epoch; the pre-vote asks about epoch + 1
    leader_id: int | None  # the leader we lost, if any: a failed pre-vote goes back to it
    election_deadline_ms: int
    granted: set[int] = field(default_factory=set)
    rejected: set[int] = field(default_factory=set)
    vote_retry_ms: dict[int, int] = field(default_factory=dict)
    high_watermark: int | None = None


@dataclass
class FollowerState:
    epoch: int
    leader_id: int
    fetch_deadline_ms: int  # no successful fetch by then -> candidate
    high_watermark: int | None = None
    inflight: int | None = None  # correlation id of the outstanding Fetch/FetchSnapshot
    inflight_deadline_ms: int = 0
    next_fetch_ms: int = 0  # when the next Fetch may go out (backoff after an error)


@dataclass
class ResignedState:
    epoch: int
    election_deadline_ms: int
    preferred_successors: tuple[int, ...]
    unacked: set[int]
    retry_ms: int = 0


EpochState = (UnattachedState | VotedState | ProspectiveState | CandidateState | FollowerState
              | LeaderState | ResignedState)


class QuorumState:
    def __init__(self, config: RaftConfig, store: QuorumStateStore, rng: random.Random,
                 now_ms: int) -> None:
        self.config = config
        self.store = store
        self.rng = rng
        self.failed_elections = 0  # since we last had a leader: grows the election backoff
        saved = store.read() or ElectionState(0)
        me = config.node_id
        self.state: EpochState
        if saved.leader_id == me:
            others = set(config.voters - {me})
            self.state = ResignedState(saved.epoch, self.election_deadline(now_ms), (), others)
        elif saved.leader_id is not None:
            self.state = FollowerState(saved.epoch, saved.leader_id,
                                       now_ms + config.fetch_timeout_ms)
        elif saved.voted_id is not None:
            self.state = VotedState(saved.epoch, saved.voted_id, self.election_deadline(now_ms))
        else:
            self.state = UnattachedState(saved.epoch, self.election_deadline(now_ms))

    # -- queries ----------------------------------------------------------------------------
    @property
    def epoch(self) -> int:
        return self.state.epoch

    @property
    def leader_id(self) -> int | None:
        if isinstance(self.state, FollowerState):
            return self.state.leader_id
        if isinstance(self.state, LeaderState | ResignedState):
            return self.config.node_id
        return None

    @property
    def high_watermark(self) -> int | None:
        """What this voter knows is committed (None: nothing yet in this incarnation, or it
        resigned its leadership)."""
        return getattr(self.state, "high_watermark", None)

    def election_deadline(self, now_ms: int) -> int:
        """Kafka's randomized election timer: uniform in [timeout, 2 * timeout). An observer
        probes for the leader at once instead."""
        if not self.config.is_voter:
            return now_ms
        t = self.config.election_timeout_ms
        return now_ms + t + self.rng.randrange(t)

    def election_backoff(self, retries: int) -> int:
        """Binary exponential backoff with jitter, capped (Kafka's election backoff)."""
        cap = min(self.config.election_backoff_max_ms,
                  self.config.retry_backoff_ms * (2 ** min(retries, 20)))
        return 1 + self.rng.randrange(max(cap, 1))

    # -- transitions (persist first) --------------------------------------------------------
    def _persist(self, epoch: int, leader_id: int | None = None,
                 voted_id: int | None = None) -> None:
        self.store.write(ElectionState(epoch, leader_id, voted_id))

    def to_unattached(self, epoch: int, now_ms: int) -> None:
        """A newer epoch with no known leader. A voter that was already waiting for an
        election keeps its running timer (Kafka does the same): restarting it on every Vote
        of a newer epoch would let one candidate that keeps losing (a stale log) hold every
        other voter's timer back forever."""
        s = self.state
        if isinstance(s, UnattachedState | VotedState | ProspectiveState | CandidateState
                      | ResignedState) \
                and self.config.is_voter:
            deadline = s.election_deadline_ms
        else:
            deadline = self.election_deadline(now_ms)
        self._persist(epoch)
        self.state = UnattachedState(epoch, deadline, self.high_watermark)

    def to_voted(self, candidate_id: int, now_ms: int) -> None:
        if not isinstance(self.state, UnattachedState) or not self.config.is_voter:
            raise RuntimeError(f"cannot vote from {type(self.state).__name__}")
        self._persist(self.epoch, voted_id=candidate_id)
        self.state = VotedState(self.epoch, candidate_id, self.election_deadline(now_ms),
                                self.high_watermark)

    def to_prospective(self, now_ms: int) -> None:
        """Ask for pre-votes (KIP-996). Nothing is persisted: the epoch does not change."""
        if not self.config.is_voter:
            raise RuntimeError("an observer never stands for election")
        leader = self.state.leader_id if isinstance(self.state, FollowerState) else None
        self.state = ProspectiveState(self.epoch, leader, self.election_deadline(now_ms),
                                      granted={self.config.node_id},
                                      high_watermark=self.high_watermark)

    def prospective_lost(self, now_ms: int) -> None:
        """A pre-vote without a majority: back to the leader we knew (fetch again), or wait a
        growing, random backoff before asking again."""
        s = self.state
        assert isinstance(s, ProspectiveState)
        self.failed_elections += 1
        if s.leader_id is not None:
            self.state = FollowerState(s.epoch, s.leader_id, now_ms + self.config.fetch_timeout_ms,
                                       s.high_watermark)
        else:
            backoff = self.election_backoff(self.failed_elections)
            self.state = UnattachedState(s.epoch, now_ms + backoff, s.high_watermark)

    def candidate_lost(self, now_ms: int) -> None:
        """The election was lost or timed out: back off a random, growing time."""
        s = self.state
        assert isinstance(s, CandidateState)
        self.failed_elections += 1
        s.backoff_until_ms = now_ms + self.election_backoff(self.failed_elections)

    def to_candidate(self, now_ms: int) -> None:
        if not self.config.is_voter:
            raise RuntimeError("an observer never stands for election")
        epoch = self.epoch + 1
        self._persist(epoch, voted_id=self.config.node_id)
        self.state = CandidateState(epoch, self.failed_elections, self.election_deadline(now_ms),
                                    granted={self.config.node_id},
                                    high_watermark=self.high_watermark)

    def to_leader(self, epoch_start_offset: int, now_ms: int) -> LeaderState:
        if not isinstance(self.state, CandidateState):
            raise RuntimeError("only a candidate becomes leader")
        self._persist(self.epoch, leader_id=self.config.node_id)
        self.failed_elections = 0
        self.state = LeaderState(self.config.node_id, self.epoch, epoch_start_offset,
                                 self.config.voters, now_ms)
        return self.state

    def to_follower(self, epoch: int, leader_id: int, now_ms: int) -> None:
        if leader_id == self.config.node_id:
            raise RuntimeError("a voter never follows itself")
        self._persist(epoch, leader_id=leader_id)
        self.failed_elections = 0
        self.state = FollowerState(epoch, leader_id, now_ms + self.config.fetch_timeout_ms,
                                   self.high_watermark)

    def to_resigned(self, preferred_successors: tuple[int, ...], now_ms: int) -> None:
        if not isinstance(self.state, LeaderState):
            raise RuntimeError("only a leader resigns")
        others = set(self.config.voters - {self.config.node_id})
        self.state = ResignedState(self.epoch, self.election_deadline(now_ms),
                                   preferred_successors, others)
