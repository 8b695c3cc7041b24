"""Historical replication behaviour switches.

Contract: one frozen `ReplicationBehaviour` per broker. The defaults are today's (fixed) Kafka
behaviour; each other value reproduces a documented loss scenario of SCENARIOS.md and names it.
The replication core reads these fields and nothing else decides between old and new behaviour.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Truncation = Literal["high-watermark", "kip-101", "kip-279", "diverging-epoch"]
IsrUpdate = Literal["maximal", "eager"]
IsrJoin = Literal["epoch-start", "high-watermark"]
FollowerRestart = Literal["epoch-change", "leader-change"]
DivergingFetchState = Literal["skip", "update"]
FollowerAhead = Literal["truncate", "stop"]
ConsumerVisibility = Literal["high-watermark", "log-end"]

TRUNCATION_MODES: tuple[str, ...] = ("high-watermark", "kip-101", "kip-279", "diverging-epoch")
ISR_UPDATE_MODES: tuple[str, ...] = ("maximal", "eager")
ISR_JOIN_MODES: tuple[str, ...] = ("epoch-start", "high-watermark")
FOLLOWER_RESTART_MODES: tuple[str, ...] = ("epoch-change", "leader-change")
DIVERGING_FETCH_STATE_MODES: tuple[str, ...] = ("skip", "update")
FOLLOWER_AHEAD_MODES: tuple[str, ...] = ("truncate", "stop")
CONSUMER_VISIBILITY_MODES: tuple[str, ...] = ("high-watermark", "log-end")


@dataclass(frozen=True)
class ReplicationBehaviour:
    truncation: Truncation = "diverging-epoch"
    """How a replica that becomes follower reconciles its log with the leader.

    "high-watermark": pre-KIP-101, truncate to the replica's own HW before fetching. Exists for
    L1 (an acknowledged m2 above the follower's stale HW is dropped) and L2 (A keeps m2 while B
    writes m3 at the same offset: divergence).
    "kip-101": OffsetForLeaderEpoch as first specified; the leader answers only an end offset
    (no epoch), the follower truncates to min(that, own LEO) once. Fixes L1/L2, but still
    diverges after a fast double leader failover (the KIP-279 case).
    "kip-279": the answer carries the leader's largest epoch <= the requested one; the follower
    iterates until both know the epoch, then truncates to the smaller end offset.
    "diverging-epoch": Fetch v12+ (KIP-595/KIP-320 style): every fetch carries LastFetchedEpoch,
    the leader answers DivergingEpoch and the follower truncates from the fetch path. Default.
    """

    isr_update: IsrUpdate = "maximal"
    """When an ISR change counts for the HW and acks=all.

    "maximal" (default, KIP-497/KIP-841): a pending expansion counts at once, a pending shrink
    keeps counting the removed member until the controller commits it.
    "eager": legacy; the leader applies a shrink locally before the controller commits it, so
    the HW can pass a replica the controller may still elect. Exists for L6.
    """

    isr_join: IsrJoin = "epoch-start"
    """What a follower outside the ISR must reach before its leader proposes it.

    "epoch-start" (default, Kafka 2.1 and 2.0.1, KAFKA-7128): the HW and the leader's log end
    offset when its epoch began. A new leader's HW may lag what the previous leader committed;
    the start of its epoch does not.
    "high-watermark": legacy (Kafka 2.0 and before): the HW alone, so a follower can join
    holding less than the previous leader committed, and be elected before it fetched the
    rest. Exists for L15.
    """

    follower_restart: FollowerRestart = "epoch-change"
    """When a follower that learns a new leader epoch restarts its fetcher (and reconciles
    its log with the leader again).

    "epoch-change" (default): on every new leader epoch, as KRaft brokers do
    (Partition.makeFollower's isNewLeaderEpoch). Kafka 2.0.1-2.x (KAFKA-7164) skipped it
    only when the leader is the same and the epoch just one higher (no epoch was missed);
    ours restarts then too, which changes nothing: that leader's log was not truncated.
    "leader-change": legacy (Kafka 2.0 and before): only when the leader changes, so a
    follower that missed an epoch (the same leader again, two epochs later) keeps a tail
    that leader truncated meanwhile. A change to "no leader" is ignored, as ZooKeeper-era
    makeFollowers aborted it: the same leader elected again after one is no change either.
    Exists for L16 (and L21).
    """

    diverging_fetch_state: DivergingFetchState = "skip"
    """What a leader records of a follower whose fetch it answers with DivergingEpoch.

    "skip" (default, Kafka 3.0, 2.8.1 and 2.7.2, KAFKA-13141): nothing; the follower's
    position is what its next fetch, after it truncated, says.
    "update": legacy (Kafka 2.8.0, whose replica fetchers first sent LastFetchedEpoch,
    KAFKA-10554): the fetch offset is recorded as the follower's log end, although the
    follower holds other batches below it; the HW can pass offsets the follower does not
    have. Matters only with truncation "diverging-epoch". Exists for L17.
    """

    follower_ahead: FollowerAhead = "truncate"
    """What a follower does when the leader's log ends below its own fetch offset (the leader
    answered OFFSET_OUT_OF_RANGE and ListOffsets gave a log end below the follower's).

    "truncate" (default, Kafka 2.1, KAFKA-7414): truncate to the leader's log end and fetch on.
    "stop": legacy (Kafka 0.8.2 to 2.0, KAFKA-3410): when unclean leader election is disabled
    for the topic the broker stops itself ("Halting/Exiting because log truncation is not
    allowed"), keeping its tail; with it enabled, it truncates. The stop is a clean shutdown
    here (0.10.0.1's exit, KAFKA-3924), not 0.8.2-0.10.0.0's halt that skipped the flush.
    A follower gets there only after its leader lost records it acknowledged (a power loss,
    an unclean election) and when it did not reconcile by leader epoch first: before KIP-101
    (truncation "high-watermark", to a HW above the leader's log end) or when it missed the
    epoch (follower-restart "leader-change", KAFKA-7164). Exists for L21."""

    leader_epoch_fencing: bool = True
    """KIP-320 (Kafka 2.1, KAFKA-7395): a follower's Fetch, OffsetForLeaderEpoch and
    ListOffsets carry the leader epoch it follows, and a leader in another epoch refuses them
    (FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH). False: they carry none (-1), as before 2.1,
    and any leader serves them."""

    client_leader_epochs: bool = True
    """KIP-320 (Kafka 2.1): clients learn each partition's leader epoch (Metadata v7+) and may
    ask OffsetForLeaderEpoch (v2+), so a consumer validates its position after a leader change
    and goes back to where the new leader's log diverged. False: ApiVersions advertises Kafka
    2.0's versions of the APIs that carry epochs (protocol/apis.py advertised_apis), and no
    client can: after an unclean truncation a consumer at the tail silently skips the
    records written at offsets it had already passed (catalog 9, L22). Read only by
    KafkaApis' ApiVersions."""

    consumer_visibility: ConsumerVisibility = "high-watermark"
    """How far consumers may read. "log-end" serves uncommitted data (legacy, L5)."""

    strict_min_isr: bool = True
    """The HW does not advance while the committed ISR is below min.insync.replicas (KIP-966
    style). False reproduces L7: a lone ISR member acknowledges data only it holds."""

    unclean_leader_election: bool = False
    """The cluster default of unclean.leader.election.enable (a topic's own config wins): the
    controller elects a replica outside the ISR with it (L4); a broker reads it only for
    follower_ahead "stop" (ReplicaManager.unclean_leader_election_enabled)."""

    eligible_leader_replicas: bool = True
    """KIP-966 ELR (Kafka 4.1's default). The controller keeps the ELR; on the broker it only
    requires strict_min_isr: a replica in the ELR holds everything below the HW only while
    the HW waits for min.insync.replicas replicas."""

    isr_eligibility: bool = True
    """KIP-841 (Kafka 3.3, KAFKA-13916): a leader proposes, and waits for, only replicas the
    metadata shows unfenced and not in controlled shutdown (Partition.isReplicaIsrEligible).
    False: fenced ones too, as before 3.3, so a broker fenced because its heartbeats stopped,
    but still fetching, rejoins the ISR at once (MetadataImage.may_join_isr says what is not
    modelled). The controller has the same switch (ControllerConfig.isr_eligibility). Exists
    for L20."""

    isr_broker_epochs: bool = True
    """KIP-903 (Kafka 3.5, KAFKA-14139/KAFKA-14617): an ISR proposal carries each member's
    broker epoch as of the fetch that showed it caught up (AlterPartition v3), so the controller
    refuses a member that restarted since (INELIGIBLE_REPLICA). False: AlterPartition v2 with
    bare ids, as before 3.5: a stale expansion can add a replica whose log was emptied by a
    restart to the ISR."""

    def __post_init__(self) -> None:
        # A typo in a plan's switch must fail loudly: silently running the default would turn
        # a legacy reproduction into a false "nothing lost".
        checks = (
            ("truncation", self.truncation, TRUNCATION_MODES),
            ("isr_update", self.isr_update, ISR_UPDATE_MODES),
            ("isr_join", self.isr_join, ISR_JOIN_MODES),
            ("follower_restart", self.follower_restart, FOLLOWER_RESTART_MODES),
            ("diverging_fetch_state", self.diverging_fetch_state, DIVERGING_FETCH_STATE_MODES),
            ("follower_ahead", self.follower_ahead, FOLLOWER_AHEAD_MODES),
            ("consumer_visibility", self.consumer_visibility, CONSUMER_VISIBILITY_MODES),
        )
        for name, value, allowed in checks:
            if value not in allowed:
                raise ValueError(
                    f"ReplicationBehaviour.{name}={value!r} is not one of {', '.join(allowed)}"
                )
        for name in ("strict_min_isr", "unclean_leader_election", "eligible_leader_replicas",
                     "isr_broker_epochs", "leader_epoch_fencing", "isr_eligibility",
                     "client_leader_epochs"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"ReplicationBehaviour.{name} must be a bool")
        if self.eligible_leader_replicas and not self.strict_min_isr:
            raise ValueError(
                "ReplicationBehaviour: eligible_leader_replicas needs strict_min_isr (KIP-966)"
            )

    @property
    def uses_offset_for_leader_epoch(self) -> bool:
        """True when a new follower truncates through OffsetForLeaderEpoch round trips."""
        return self.truncation in ("kip-101", "kip-279")

    @property
    def uses_last_fetched_epoch(self) -> bool:
        """True when fetches carry LastFetchedEpoch and truncation happens on DivergingEpoch."""
        return self.truncation == "diverging-epoch"
