"""KafkaRaftClient: one voter of a KIP-595 Raft quorum, as a sans-I/O state machine.

Drive it with `handle(envelope, now_ms)` for every inbound message and `poll(now_ms)` when the
clock reaches `deadline_ms()`; both return the envelopes to send. Nothing here sleeps, opens
sockets or reads a clock; the log and the election store are the only state that survives.

Protocol, as Kafka does it (KIP-595):
- Pre-vote (KIP-996, on by default): a voter whose election timer (randomized) fires first
  becomes Prospective and asks "would you vote for me in epoch + 1?" (Vote with PreVote);
  nobody changes state to answer, and a voter that has a leader it still hears from says no.
  Only with a majority of yeses does it go on to the election; otherwise it returns to the
  leader it knew, or waits a growing backoff.
- Election: the voter becomes a candidate of epoch + 1,
  votes for itself and sends Vote with its last (epoch, end offset). A voter grants at most one
  vote per epoch (the vote is persisted before the answer leaves), refuses an older epoch,
  repeats its answer to the same candidate, and grants only to a log at least as up to date
  as its own (unless the legacy raft_vote_log_check=False). A majority makes a leader; a lost
  or timed-out election backs off a random, exponentially growing time before the next epoch.
- The new leader appends a LeaderChange control batch (its epoch start) and sends
  BeginQuorumEpoch until each voter answers or fetches. Every batch carries its leader epoch.
- Followers Fetch with (fetch offset, last fetched epoch). The leader answers DivergingEpoch
  when the follower's log disagrees (the follower truncates there and fetches again),
  SnapshotId when the offset is below its log start (the follower loads the snapshot by
  FetchSnapshot), otherwise records and the high watermark. An empty fetch is parked until
  there is data, the high watermark moves, or fetch_max_wait_ms passes (long polling).
- Commit (LeaderState): a majority of durable positions, counting only the leader's flushed
  log, and only past its own LeaderChange record.
- A follower with no successful fetch for fetch_timeout_ms becomes a candidate; a leader that
  hears from no majority for 1.5 x fetch_timeout_ms resigns (check quorum); `resign()` is the
  graceful EndQuorumEpoch (the first preferred successor stands at once, the others after
  Kafka's strict exponential backoff); `shutdown()` resigns and never stands again, until
  another voter leads (Kafka's graceful shutdown); any message of a higher epoch deposes a
  leader (fenced by epoch). A hard-killed leader is noticed only by the followers' fetch
  timeout (no successful Fetch for fetch_timeout_ms), as in Kafka: a failed Fetch to it is
  retried, it does not start an election.

Observers (a node_id outside the voters: brokers) fetch like followers but never vote or
stand; with no known leader they probe a random voter with a Fetch and learn the leader from
its answer, and a fetch timeout sends them back to probing (Kafka's observers do the same).

Not done (differences from Kafka): no voter-set changes (KIP-853); the
snapshot moves in one FetchSnapshot response instead of chunks; fetches carry the follower's
high watermark (KIP-1166) so an empty fetch parks only when the follower is up to date.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from .config import RaftConfig
from .leader_state import LeaderState, ParkedFetch
from .log import UNKNOWN, OffsetAndEpoch, ReplicatedLog, Snapshot, log_up_to_date
from .messages import (
    BeginQuorumEpochRequest,
    BeginQuorumEpochResponse,
    EndQuorumEpochRequest,
    EndQuorumEpochResponse,
    Envelope,
    Errors,
    FetchRequest,
    FetchResponse,
    FetchSnapshotRequest,
    FetchSnapshotResponse,
    Message,
    VoteRequest,
    VoteResponse,
)
from .quorum_state import (
    CandidateState,
    FollowerState,
    ProspectiveState,
    QuorumState,
    QuorumStateStore,
    ResignedState,
    UnattachedState,
    VotedState,
)

NEVER_MS = 1 << 62  # deadline_ms() of a state with no timer (a voter shutting down)


class NotLeaderError(Exception):
    """append() on a voter that is not the leader (Kafka: NotLeaderException)."""


class RaftFatalError(RuntimeError):
    """The quorum's safety is at stake (two leaders in one epoch, a truncation below the high
    watermark): the process must stop. Kafka's KafkaRaftClientDriver hands any error of the
    raft IO thread to its fatal fault handler, which halts the process (exit status 1);
    both runtimes' edges do the same (controller/raft_manager.py, sim/quorum.py)."""


def end_epoch_election_backoff_ms(successors: Sequence[int], node_id: int,
                                  backoff_max_ms: int) -> int:
    """How long a follower told EndQuorumEpoch waits before standing (Kafka's
    strictExponentialElectionBackoffMs): the first preferred successor at once, position p
    after (backoff_max >> (n - 1)) << (p - 1), a voter not listed after backoff_max."""
    if node_id not in successors:
        return backoff_max_ms
    position = list(successors).index(node_id)
    if position == 0:
        return 0
    base = backoff_max_ms >> (len(successors) - 1)
    return min(backoff_max_ms, base << (position - 1))


def leader_change_record(leader_id: int, voters: frozenset[int]) -> bytes:
    """The LeaderChange control record's value (Kafka encodes LeaderChangeMessage; we keep a
    readable text form, since control records never reach the state machine)."""
    return f"LeaderChange leader={leader_id} voters={','.join(map(str, sorted(voters)))}".encode()


@dataclass(frozen=True)
class CommitUpdate:
    """What the state machine must apply: a snapshot to load first (when it is behind the log
    start), then committed records in order, up to next_offset (Kafka's Listener
    handleLoadSnapshot / handleCommit)."""

    snapshot: Snapshot | None
    records: tuple[tuple[int, bytes], ...]
    next_offset: int


class KafkaRaftClient:
    def __init__(self, config: RaftConfig, log: ReplicatedLog, store: QuorumStateStore,
                 rng: random.Random, now_ms: int) -> None:
        self.config = config
        self.log = log
        self.quorum = QuorumState(config, store, rng, now_ms)
        self._next_correlation = 0
        self._dirty = False  # appended since the last poll: flush and serve parked fetches
        self._leader: LeaderState | None = None  # the LeaderState whose parked fetches we hold
        # Last time a leader answered us (Fetch/FetchSnapshot) or announced itself: a pre-vote
        # is refused within fetch_timeout_ms of it (KIP-996). A deadline would not do: a
        # failed pre-vote returns to the follower state with a fresh one.
        self._leader_contact_ms: int | None = None
        self._shutting_down = False  # shutdown(): never stand for election again
        # The only voter stands at once, without a pre-vote or its election timer (Kafka's
        # KafkaRaftClient.initialize: "When there is only a single voter, become candidate
        # immediately"); it then leads alone. Done at the first poll, which has the time.
        self._stand_at_once = config.is_only_voter

    # -- queries ----------------------------------------------------------------------------
    @property
    def node_id(self) -> int:
        return self.config.node_id

    @property
    def epoch(self) -> int:
        return self.quorum.epoch

    @property
    def leader_id(self) -> int | None:
        return self.quorum.leader_id

    @property
    def is_leader(self) -> bool:
        return isinstance(self.quorum.state, LeaderState)

    @property
    def high_watermark(self) -> int | None:
        return self.quorum.high_watermark

    def deadline_ms(self) -> int:
        """When poll() must run next (it may run earlier)."""
        s = self.quorum.state
        if self._shutting_down and self.config.is_voter:
            return self._shutdown_deadline_ms(s)
        if self._stand_at_once:
            return 0  # at once
        if isinstance(s, UnattachedState | VotedState):
            return s.election_deadline_ms
        if isinstance(s, ProspectiveState):
            pending = [t for v, t in s.vote_retry_ms.items() if v not in s.granted | s.rejected]
            return min([s.election_deadline_ms, *pending])
        if isinstance(s, CandidateState):
            if s.backoff_until_ms is not None:
                return s.backoff_until_ms
            pending = [t for v, t in s.vote_retry_ms.items() if v not in s.granted | s.rejected]
            return min([s.election_deadline_ms, *pending])
        if isinstance(s, FollowerState):
            nxt = s.inflight_deadline_ms if s.inflight is not None else s.next_fetch_ms
            return min(s.fetch_deadline_ms, nxt)
        if isinstance(s, ResignedState):
            return min(s.election_deadline_ms, s.retry_ms) if s.unacked \
                else s.election_deadline_ms
        assert isinstance(s, LeaderState)
        if self._dirty:
            return 0
        retries = [t for v, t in s.begin_retry_ms.items() if v not in s.begin_acked]
        return min([s.check_quorum_deadline_ms, *retries, *(p.deadline_ms for p in s.parked)])

    def _shutdown_deadline_ms(self, s: object) -> int:
        """deadline_ms() while shutting down: only resends and fetches are timed."""
        if isinstance(s, LeaderState):
            return 0
        if isinstance(s, ResignedState):
            return s.retry_ms if s.unacked else NEVER_MS
        if isinstance(s, CandidateState):
            if s.backoff_until_ms is not None:
                return NEVER_MS
            pending = [t for v, t in s.vote_retry_ms.items() if v not in s.granted | s.rejected]
            return min([s.election_deadline_ms, *pending])
        if isinstance(s, FollowerState):
            return s.inflight_deadline_ms if s.inflight is not None else s.next_fetch_ms
        return NEVER_MS

    # -- the state machine's API ------------------------------------------------------------
    def append(self, records: Sequence[bytes]) -> int:
        """Append one batch in the leader's epoch; returns its base offset. The batch is not
        durable (and does not count toward commit) until the next poll() flushes it."""
        if not isinstance(self.quorum.state, LeaderState):
            raise NotLeaderError(f"node {self.node_id} is not the leader of epoch {self.epoch}")
        batch = self.log.append_as_leader(records, self.epoch)
        self._dirty = True
        return batch.base_offset

    def resign(self, now_ms: int) -> list[Envelope]:
        """Graceful resignation: EndQuorumEpoch to every other voter."""
        if not isinstance(self.quorum.state, LeaderState):
            return []
        return self._resign(now_ms)

    def shutdown(self, now_ms: int) -> list[Envelope]:
        """Begin a graceful shutdown (Kafka's KafkaRaftClient.shutdown): a leader resigns at
        once (EndQuorumEpoch naming its successors, most caught up first, resent until each
        voter answers); from now on this voter never stands for election: it stays where it
        is (Resigned, Unattached, Voted, Follower) until the others elect a leader, and a
        candidate only finishes its current election (winning it, it resigns at once). The
        caller keeps driving the client until `shutdown_complete` or its own timeout (Kafka:
        5 s, KafkaRaftClientDriver), so the old leader still answers the survivors' Votes
        and learns the new leader from its BeginQuorumEpoch."""
        self._shutting_down = True
        return self.resign(now_ms)

    @property
    def shutdown_complete(self) -> bool:
        """Shut down gracefully: an observer, the only voter, or another voter leads (Kafka's
        maybeCompleteShutdown)."""
        if not self._shutting_down:
            return False
        leader = self.leader_id
        return (not self.config.is_voter or self.config.voters == {self.node_id}
                or (leader is not None and leader != self.node_id))

    def create_snapshot(self, end_offset: int, payload: bytes) -> Snapshot:
        """Snapshot the state machine's image of [0, end_offset); only committed offsets."""
        hw = self.high_watermark
        if hw is None or end_offset > hw:
            raise ValueError(f"snapshot end {end_offset} is beyond the high watermark {hw}")
        return self.log.create_snapshot(end_offset, payload)

    def poll_committed(self, next_offset: int, max_batches: int = 1024) -> CommitUpdate:
        """Committed data from next_offset on (a snapshot first if next_offset < log start)."""
        snapshot = None
        if next_offset < self.log.start_offset:
            snapshot = self.log.latest_snapshot()
            next_offset = self.log.start_offset
        hw = self.high_watermark
        # The log may end below the high watermark (a follower that just loaded a snapshot
        # older than what it had applied): nothing to read until it fetches past it.
        if hw is None or min(hw, self.log.end_offset) <= next_offset:
            return CommitUpdate(snapshot, (), next_offset)
        out: list[tuple[int, bytes]] = []
        for batch in self.log.read(next_offset, max_batches):
            for i, value in enumerate(batch.records):
                offset = batch.base_offset + i
                if offset >= hw:
                    return CommitUpdate(snapshot, tuple(out), hw)
                if not batch.control:
                    out.append((offset, value))
            next_offset = batch.next_offset
        return CommitUpdate(snapshot, tuple(out), min(next_offset, hw))

    # -- driving ----------------------------------------------------------------------------
    def poll(self, now_ms: int) -> list[Envelope]:
        out: list[Envelope] = []
        s = self.quorum.state
        if self._shutting_down and self.config.is_voter:
            return self._poll_shutting_down(s, now_ms) + self._release_parked()
        if self._stand_at_once:
            self._stand_at_once = False
            if not isinstance(s, CandidateState | LeaderState):
                return self._stand(now_ms) + self._release_parked()
        if isinstance(s, UnattachedState | VotedState):
            if now_ms >= s.election_deadline_ms:
                out += self._start_election(now_ms) if self.config.is_voter \
                    else self._probe_for_leader(s, now_ms)
        elif isinstance(s, ProspectiveState):
            out += self._poll_prospective(s, now_ms)
        elif isinstance(s, CandidateState):
            out += self._poll_candidate(s, now_ms)
        elif isinstance(s, FollowerState):
            if now_ms >= s.fetch_deadline_ms and not self.config.is_voter:
                self.quorum.to_unattached(s.epoch, now_ms)  # lost the leader: probe again
                out += self.poll(now_ms)
            elif now_ms >= s.fetch_deadline_ms:
                out += self._start_election(now_ms)
            else:
                out += self._maybe_fetch(s, now_ms)
        elif isinstance(s, LeaderState):
            out += self._poll_leader(s, now_ms)
        elif isinstance(s, ResignedState):
            if now_ms >= s.election_deadline_ms:
                out += self._start_election(now_ms)
            elif s.unacked and now_ms >= s.retry_ms:
                out += self._send_end_quorum(s, now_ms)
        return out + self._release_parked()

    def _poll_shutting_down(self, s: object, now_ms: int) -> list[Envelope]:
        """poll() of a voter shutting down: no new election, whatever its timers say."""
        if isinstance(s, LeaderState):
            return self._resign(now_ms)  # a candidate that won after shutdown() began
        if isinstance(s, ResignedState):
            return self._send_end_quorum(s, now_ms) if s.unacked and now_ms >= s.retry_ms \
                else []
        if isinstance(s, CandidateState):
            if s.backoff_until_ms is None and now_ms >= s.election_deadline_ms:
                self.quorum.candidate_lost(now_ms)  # over; no retry (deadline_ms: never)
            if s.backoff_until_ms is None:
                return self._poll_candidate(s, now_ms)  # only resends this epoch's Votes
            return []
        if isinstance(s, FollowerState):
            return self._maybe_fetch(s, now_ms)  # complete already: a remote leader
        return []  # Unattached, Voted, Prospective: wait for a leader or the caller's timeout

    def handle(self, env: Envelope, now_ms: int) -> list[Envelope]:
        if env.dst != self.node_id:
            raise ValueError(f"envelope for {env.dst} delivered to {self.node_id}")
        body = env.body
        if isinstance(body, VoteRequest):
            out = self._on_vote_request(env, body, now_ms)
        elif isinstance(body, VoteResponse):
            out = self._on_vote_response(env, body, now_ms)
        elif isinstance(body, BeginQuorumEpochRequest):
            out = self._on_begin_quorum_epoch(env, body, now_ms)
        elif isinstance(body, EndQuorumEpochRequest):
            out = self._on_end_quorum_epoch(env, body, now_ms)
        elif isinstance(body, BeginQuorumEpochResponse | EndQuorumEpochResponse):
            out = self._on_epoch_ack(env, body, now_ms)
        elif isinstance(body, FetchRequest):
            out = self._on_fetch_request(env, body, now_ms)
        elif isinstance(body, FetchResponse):
            out = self._on_fetch_response(env, body, now_ms)
        elif isinstance(body, FetchSnapshotRequest):
            out = self._on_fetch_snapshot_request(env, body)
        elif isinstance(body, FetchSnapshotResponse):
            out = self._on_fetch_snapshot_response(env, body, now_ms)
        else:
            raise TypeError(f"unknown message {body!r}")
        # A message may have moved us on (e.g. started a follower's fetch loop): poll once so
        # the new state's first requests go out now rather than at its first deadline.
        return out + self.poll(now_ms)

    # -- helpers ----------------------------------------------------------------------------
    def _send(self, dst: int, body: Message) -> Envelope:
        self._next_correlation += 1
        return Envelope(self.node_id, dst, self._next_correlation, body)

    def _reply(self, env: Envelope, body: Message) -> Envelope:
        return Envelope(self.node_id, env.src, env.correlation_id, body)

    def _others(self) -> list[int]:
        return sorted(self.config.voters - {self.node_id})

    def _maybe_transition(self, epoch: int, leader_id: int | None, now_ms: int) -> bool:
        """Learn a newer epoch or this epoch's leader from any message (Kafka's
        maybeTransition). True if our state changed."""
        me = self.node_id
        if epoch > self.epoch:
            if leader_id is not None and leader_id != me:
                self.quorum.to_follower(epoch, leader_id, now_ms)
            else:
                self.quorum.to_unattached(epoch, now_ms)
            return True
        s = self.quorum.state
        if epoch == self.epoch and leader_id is not None and leader_id != me:
            if isinstance(s, FollowerState) and s.leader_id == leader_id:
                return False
            if isinstance(s, ProspectiveState) and s.leader_id == leader_id:
                return False  # the leader we gave up on: others naming it changes nothing
            if isinstance(s, LeaderState | ResignedState) or isinstance(s, FollowerState):
                raise RaftFatalError(f"node {me}: two leaders ({self.leader_id}, {leader_id}) "
                                     f"in epoch {epoch}")
            self.quorum.to_follower(epoch, leader_id, now_ms)
            return True
        return False

    def _release_parked(self) -> list[Envelope]:
        """A leader that stepped down answers its parked fetches at once (with its new
        epoch) instead of leaving followers to time out."""
        old = self._leader
        if old is None or self.quorum.state is old:
            return []
        self._leader = None
        body = FetchResponse(self.epoch, self.leader_id, Errors.NOT_LEADER_OR_FOLLOWER)
        parked, old.parked = old.parked, []
        return [Envelope(self.node_id, p.src, p.correlation_id, body) for p in parked]

    def _probe_for_leader(self, s: UnattachedState | VotedState, now_ms: int) -> list[Envelope]:
        """Observer without a leader: Fetch from a random voter; any answer names the leader
        (an error carries the current leader and epoch), which makes us its follower."""
        s.election_deadline_ms = now_ms + self.config.request_timeout_ms
        voter = self.quorum.rng.choice(sorted(self.config.voters))
        return [self._send(voter, FetchRequest(
            self.node_id, self.epoch, self.log.end_offset, self.log.last_fetched_epoch, None))]

    # -- elections --------------------------------------------------------------------------
    def _start_election(self, now_ms: int) -> list[Envelope]:
        """The election timer fired (or a lost election's backoff ended)."""
        if not self.config.pre_vote:
            return self._stand(now_ms)
        self.quorum.to_prospective(now_ms)
        s = self.quorum.state
        assert isinstance(s, ProspectiveState)
        if len(s.granted) >= self.config.majority:  # a quorum of one
            return self._stand(now_ms)
        return [self._vote_request(s, v, now_ms) for v in self._others()]

    def _stand(self, now_ms: int) -> list[Envelope]:
        self.quorum.to_candidate(now_ms)
        s = self.quorum.state
        assert isinstance(s, CandidateState)
        if len(s.granted) >= self.config.majority:  # a quorum of one
            return self._become_leader(now_ms)
        return [self._vote_request(s, v, now_ms) for v in self._others()]

    def _poll_prospective(self, s: ProspectiveState, now_ms: int) -> list[Envelope]:
        if now_ms >= s.election_deadline_ms:
            self.quorum.prospective_lost(now_ms)
            return []
        return [self._vote_request(s, v, now_ms) for v, t in sorted(s.vote_retry_ms.items())
                if v not in s.granted | s.rejected and now_ms >= t]

    def _vote_request(self, s: CandidateState | ProspectiveState, voter: int,
                      now_ms: int) -> Envelope:
        s.vote_retry_ms[voter] = now_ms + self.config.request_timeout_ms
        end = self.log.end_offset_and_epoch()
        pre = isinstance(s, ProspectiveState)
        return self._send(voter, VoteRequest(s.epoch + 1 if pre else s.epoch, self.node_id,
                                             end.epoch, end.offset, pre_vote=pre))

    def _poll_candidate(self, s: CandidateState, now_ms: int) -> list[Envelope]:
        if s.backoff_until_ms is not None:
            return self._start_election(now_ms) if now_ms >= s.backoff_until_ms else []
        if now_ms >= s.election_deadline_ms:  # neither won nor lost: back off, then retry
            self.quorum.candidate_lost(now_ms)
            return []
        return [self._vote_request(s, v, now_ms) for v, t in sorted(s.vote_retry_ms.items())
                if v not in s.granted | s.rejected and now_ms >= t]

    def _log_check(self, req: VoteRequest) -> bool:
        candidate_end = OffsetAndEpoch(req.last_offset, req.last_offset_epoch)
        return not self.config.raft_vote_log_check or log_up_to_date(
            candidate_end, self.log.end_offset_and_epoch())

    def _on_pre_vote(self, env: Envelope, req: VoteRequest, now_ms: int) -> list[Envelope]:
        """Answer as we would vote, changing nothing (not even the epoch). No while we still
        hear from a leader: that is what keeps a returning voter from deposing it."""
        s = self.quorum.state
        if req.candidate_epoch < self.epoch or not self.config.is_voter:
            granted = False
        elif isinstance(s, LeaderState) or (
                isinstance(s, FollowerState) and self._leader_contact_ms is not None
                and now_ms - self._leader_contact_ms < self.config.fetch_timeout_ms):
            granted = False
        elif req.candidate_epoch == self.epoch:  # asks about our epoch: our vote may be cast
            granted = (isinstance(s, UnattachedState)
                       or (isinstance(s, VotedState) and s.voted_id == req.candidate_id)) \
                and self._log_check(req)
        else:
            granted = self._log_check(req)
        return [self._reply(env, VoteResponse(self.epoch, self.leader_id, granted))]

    def _on_vote_request(self, env: Envelope, req: VoteRequest, now_ms: int) -> list[Envelope]:
        if req.pre_vote:
            return self._on_pre_vote(env, req, now_ms)
        if req.candidate_epoch < self.epoch:
            return [self._reply(env, VoteResponse(self.epoch, self.leader_id, False))]
        if req.candidate_epoch > self.epoch:
            self.quorum.to_unattached(req.candidate_epoch, now_ms)
        s = self.quorum.state
        granted = False
        if not self.config.is_voter:
            pass  # observers never vote
        elif isinstance(s, VotedState):
            granted = s.voted_id == req.candidate_id  # repeat the earlier answer
        elif isinstance(s, UnattachedState):
            if self._log_check(req):
                self.quorum.to_voted(req.candidate_id, now_ms)  # durable before the answer
                granted = True
        # Candidate (voted for itself), Leader, Follower, Resigned: this epoch is taken.
        return [self._reply(env, VoteResponse(self.epoch, self.leader_id, granted))]

    def _on_vote_response(self, env: Envelope, resp: VoteResponse,
                          now_ms: int) -> list[Envelope]:
        if self._maybe_transition(resp.leader_epoch, resp.leader_id, now_ms):
            return []
        s = self.quorum.state
        if isinstance(s, ProspectiveState) and resp.leader_epoch == s.epoch:
            (s.granted if resp.vote_granted else s.rejected).add(env.src)
            if len(s.granted) >= self.config.majority:
                return self._stand(now_ms)
            if len(self.config.voters) - len(s.rejected) < self.config.majority:
                self.quorum.prospective_lost(now_ms)
            return []
        if not isinstance(s, CandidateState) or resp.leader_epoch != s.epoch:
            return []
        (s.granted if resp.vote_granted else s.rejected).add(env.src)
        if len(s.granted) >= self.config.majority:
            return self._become_leader(now_ms)
        if len(self.config.voters) - len(s.rejected) < self.config.majority \
                and s.backoff_until_ms is None:
            self.quorum.candidate_lost(now_ms)
        return []

    def _become_leader(self, now_ms: int) -> list[Envelope]:
        leader = self.quorum.to_leader(self.log.end_offset, now_ms)
        self._leader = leader
        self.log.append_as_leader([leader_change_record(self.node_id, self.config.voters)],
                                  leader.epoch, control=True)
        self._dirty = True
        leader.start_check_quorum(now_ms, self.config.fetch_timeout_ms)
        out = []
        for v in self._others():
            leader.begin_retry_ms[v] = now_ms + self.config.request_timeout_ms
            out.append(self._send(v, BeginQuorumEpochRequest(leader.epoch, self.node_id)))
        return out

    def _on_begin_quorum_epoch(self, env: Envelope, req: BeginQuorumEpochRequest,
                               now_ms: int) -> list[Envelope]:
        if req.leader_epoch < self.epoch:
            return [self._reply(env, BeginQuorumEpochResponse(
                self.epoch, self.leader_id, Errors.FENCED_LEADER_EPOCH))]
        self._maybe_transition(req.leader_epoch, req.leader_id, now_ms)
        self._leader_contact_ms = now_ms
        return [self._reply(env, BeginQuorumEpochResponse(self.epoch, self.leader_id))]

    def _on_end_quorum_epoch(self, env: Envelope, req: EndQuorumEpochRequest,
                             now_ms: int) -> list[Envelope]:
        if req.leader_epoch < self.epoch:
            return [self._reply(env, EndQuorumEpochResponse(
                self.epoch, self.leader_id, Errors.FENCED_LEADER_EPOCH))]
        self._maybe_transition(req.leader_epoch, req.leader_id, now_ms)
        s = self.quorum.state
        if isinstance(s, FollowerState) and s.leader_id == req.leader_id:
            self._leader_contact_ms = None  # it said goodbye: grant pre-votes from now on
            # The preferred successor (most caught up) runs first; others wait by rank, so
            # they do not split the vote (Kafka's strict exponential backoff by position).
            wait = end_epoch_election_backoff_ms(
                req.preferred_successors, self.node_id, self.config.election_backoff_max_ms)
            s.fetch_deadline_ms = min(s.fetch_deadline_ms, now_ms + wait)
        return [self._reply(env, EndQuorumEpochResponse(self.epoch, self.leader_id))]

    def _on_epoch_ack(self, env: Envelope,
                      resp: BeginQuorumEpochResponse | EndQuorumEpochResponse,
                      now_ms: int) -> list[Envelope]:
        if self._maybe_transition(resp.leader_epoch, resp.leader_id, now_ms):
            return []
        s = self.quorum.state
        if resp.error is Errors.NONE and resp.leader_epoch == self.epoch:
            if isinstance(s, LeaderState):
                s.begin_acked.add(env.src)
            elif isinstance(s, ResignedState):
                s.unacked.discard(env.src)
        return []

    # -- leader -----------------------------------------------------------------------------
    def _poll_leader(self, s: LeaderState, now_ms: int) -> list[Envelope]:
        self.log.flush()  # durable first: only then does our own log count toward commit
        hw_moved = s.update_local(self.log.flushed_end_offset)
        self._dirty = False
        if not s.check_quorum(now_ms, self.config.fetch_timeout_ms):
            return self._resign(now_ms)
        out = self._complete_parked(s, now_ms, hw_moved)
        for v, t in sorted(s.begin_retry_ms.items()):
            if v not in s.begin_acked and now_ms >= t:
                s.begin_retry_ms[v] = now_ms + self.config.request_timeout_ms
                out.append(self._send(v, BeginQuorumEpochRequest(s.epoch, self.node_id)))
        return out

    def _resign(self, now_ms: int) -> list[Envelope]:
        s = self.quorum.state
        assert isinstance(s, LeaderState)
        # Most caught-up first: it is the one that can win the next election quickly.
        successors = tuple(sorted(self._others(), key=lambda v: (-s.replica_end.get(v, -1), v)))
        self.quorum.to_resigned(successors, now_ms)
        resigned = self.quorum.state
        assert isinstance(resigned, ResignedState)
        return self._send_end_quorum(resigned, now_ms)

    def _send_end_quorum(self, s: ResignedState, now_ms: int) -> list[Envelope]:
        s.retry_ms = now_ms + self.config.request_timeout_ms
        req = EndQuorumEpochRequest(s.epoch, self.node_id, s.preferred_successors)
        return [self._send(v, req) for v in sorted(s.unacked)]

    def _complete_parked(self, s: LeaderState, now_ms: int, hw_moved: bool) -> list[Envelope]:
        out, keep = [], []
        for p in s.parked:
            if hw_moved or now_ms >= p.deadline_ms or self.log.end_offset > p.fetch_offset:
                out.append(Envelope(self.node_id, p.src, p.correlation_id,
                                    self._fetch_response(s, p.fetch_offset,
                                                         p.last_fetched_epoch)))
            else:
                keep.append(p)
        s.parked = keep
        return out

    def _fetch_response(self, s: LeaderState, fetch_offset: int,
                        last_fetched_epoch: int) -> FetchResponse:
        """Validate (offset, last epoch) against our log, then answer with records,
        a DivergingEpoch, or the SnapshotId the follower must fetch first."""
        base = {"leader_epoch": s.epoch, "leader_id": self.node_id,
                "high_watermark": s.high_watermark, "log_start_offset": self.log.start_offset}
        snapshot = self.log.latest_snapshot()
        if fetch_offset < self.log.start_offset:
            assert snapshot is not None, "log start moves only with a snapshot"
            return FetchResponse(**base, snapshot_id=snapshot.snapshot_id)
        end = self.log.end_offset_for_epoch(last_fetched_epoch)
        if end == UNKNOWN:  # the follower's epoch ends inside our snapshot
            assert snapshot is not None
            return FetchResponse(**base, snapshot_id=snapshot.snapshot_id)
        if end.epoch != last_fetched_epoch or end.offset < fetch_offset:
            return FetchResponse(**base, diverging_epoch=end)
        batches = self.log.read(fetch_offset, self.config.fetch_max_batches)
        return FetchResponse(**base, batches=batches)

    def _on_fetch_request(self, env: Envelope, req: FetchRequest,
                          now_ms: int) -> list[Envelope]:
        s = self.quorum.state
        if req.current_leader_epoch < self.epoch:
            error = Errors.FENCED_LEADER_EPOCH
        elif req.current_leader_epoch > self.epoch:
            error = Errors.UNKNOWN_LEADER_EPOCH
        elif not isinstance(s, LeaderState):
            error = Errors.NOT_LEADER_OR_FOLLOWER
        else:
            error = Errors.NONE
        if error is not Errors.NONE or not isinstance(s, LeaderState):
            return [self._reply(env, FetchResponse(self.epoch, self.leader_id, error))]
        resp = self._fetch_response(s, req.fetch_offset, req.last_fetched_epoch)
        out: list[Envelope] = []
        valid = resp.diverging_epoch is None and resp.snapshot_id is None
        if valid:
            # A valid position: the follower holds [0, fetch_offset) durably, as we do.
            if s.update_replica(env.src, req.fetch_offset, now_ms):
                out += self._complete_parked(s, now_ms, hw_moved=True)
                resp = self._fetch_response(s, req.fetch_offset, req.last_fetched_epoch)
        if valid and not resp.batches and req.high_watermark == s.high_watermark:
            s.parked.append(ParkedFetch(env.src, env.correlation_id, req.fetch_offset,
                                        req.last_fetched_epoch,
                                        now_ms + self.config.fetch_max_wait_ms))
            return out
        return [*out, self._reply(env, resp)]

    def _on_fetch_snapshot_request(self, env: Envelope,
                                   req: FetchSnapshotRequest) -> list[Envelope]:
        s = self.quorum.state
        snapshot = self.log.latest_snapshot()
        if not isinstance(s, LeaderState) or req.current_leader_epoch != s.epoch:
            error = Errors.FENCED_LEADER_EPOCH if req.current_leader_epoch < self.epoch \
                else Errors.NOT_LEADER_OR_FOLLOWER
            return [self._reply(env, FetchSnapshotResponse(self.epoch, self.leader_id, error))]
        if snapshot is None or snapshot.snapshot_id != req.snapshot_id:
            return [self._reply(env, FetchSnapshotResponse(
                self.epoch, self.node_id, Errors.SNAPSHOT_NOT_FOUND))]
        return [self._reply(env, FetchSnapshotResponse(self.epoch, self.node_id,
                                                       snapshot=snapshot))]

    # -- follower ---------------------------------------------------------------------------
    def _maybe_fetch(self, s: FollowerState, now_ms: int) -> list[Envelope]:
        if s.inflight is not None:
            if now_ms < s.inflight_deadline_ms:
                return []
            s.inflight = None  # lost: ask again
        if now_ms < s.next_fetch_ms:
            return []
        env = self._send(s.leader_id, FetchRequest(
            self.node_id, s.epoch, self.log.end_offset, self.log.last_fetched_epoch,
            s.high_watermark))
        s.inflight, s.inflight_deadline_ms = env.correlation_id, \
            now_ms + self.config.request_timeout_ms
        return [env]

    def _accept_response(self, env: Envelope, epoch: int, leader_id: int | None,
                         error: Errors, now_ms: int) -> FollowerState | None:
        """The follower state if this is the answer to our outstanding request and usable."""
        if self._maybe_transition(epoch, leader_id, now_ms):
            return None
        s = self.quorum.state
        if not isinstance(s, FollowerState) or env.correlation_id != s.inflight:
            return None  # stale: an answer to a request we gave up on
        s.inflight = None
        if error is not Errors.NONE:
            s.next_fetch_ms = now_ms + self.config.retry_backoff_ms
            return None
        s.fetch_deadline_ms = now_ms + self.config.fetch_timeout_ms
        self._leader_contact_ms = now_ms
        return s

    def _on_fetch_response(self, env: Envelope, resp: FetchResponse,
                           now_ms: int) -> list[Envelope]:
        s = self._accept_response(env, resp.leader_epoch, resp.leader_id, resp.error, now_ms)
        if s is None:
            return []
        if resp.diverging_epoch is not None:
            self._truncate_to_diverging(s, resp.diverging_epoch)
        elif resp.snapshot_id is not None:
            req = FetchSnapshotRequest(self.node_id, s.epoch, resp.snapshot_id)
            out = self._send(s.leader_id, req)
            s.inflight, s.inflight_deadline_ms = out.correlation_id, \
                now_ms + self.config.request_timeout_ms
            return [out]
        else:
            if resp.batches:
                self.log.append_as_follower(resp.batches)
                self.log.flush()  # before the next Fetch reports this position
            if resp.high_watermark is not None:
                hw = min(resp.high_watermark, self.log.end_offset)
                s.high_watermark = max(hw, s.high_watermark or 0)
        return []  # handle() polls, which sends the next Fetch

    def _truncate_to_diverging(self, s: FollowerState, diverging: OffsetAndEpoch) -> None:
        local = self.log.end_offset_for_epoch(diverging.epoch)
        target = min(diverging.offset, local.offset) if local != UNKNOWN else diverging.offset
        target = max(target, self.log.start_offset)
        if s.high_watermark is not None and target < s.high_watermark:
            # Never drop what we know is committed: that would be a Raft safety violation
            # (Kafka's KafkaMetadataLog refuses the same truncation).
            raise RaftFatalError(f"node {self.node_id}: truncation to {target} below the high "
                                 f"watermark {s.high_watermark}")
        self.log.truncate_to(target)

    def _on_fetch_snapshot_response(self, env: Envelope, resp: FetchSnapshotResponse,
                                    now_ms: int) -> list[Envelope]:
        s = self._accept_response(env, resp.leader_epoch, resp.leader_id, resp.error, now_ms)
        if s is None or resp.snapshot is None:
            return []
        # Load it whole, dropping our log: we were sent here because our position is below
        # the leader's log start or our last epoch ends inside its snapshot, so nothing of
        # ours past it was ever counted by the leader.
        end = resp.snapshot.snapshot_id.offset
        self.log.load_snapshot(resp.snapshot)
        s.high_watermark = max(end, s.high_watermark or 0)  # a snapshot holds committed data
        return []
