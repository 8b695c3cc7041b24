"""ClassicGroup and its members: the state of one consumer group under the classic protocol.

States and transitions are Kafka's (GroupState / ClassicGroupState):
  Empty -> PreparingRebalance        a member joins
  PreparingRebalance -> CompletingRebalance   every member rejoined, or the rebalance timed out
  PreparingRebalance -> Empty        the join phase ended with no member left
  CompletingRebalance -> Stable      the leader's SyncGroup assignment was stored
  Stable / CompletingRebalance -> PreparingRebalance   a member joins, leaves, changes its
                                     protocols or misses its session timeout
  any -> Dead                        the group was deleted or its partition moved away
Pure data and rules; the coordinator (group_coordinator.py) drives it with now_ms.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from .records import GroupMetadataValue, MemberMetadata, OffsetAndMetadata

Respond = Callable[[dict[str, Any]], None]


class GroupState(Enum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


@dataclass
class Member:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]  # in the member's order of preference
    last_heartbeat_ms: int
    assignment: bytes = b""
    join_respond: Respond | None = None  # set while a JoinGroup waits for the join phase to end
    sync_respond: Respond | None = None  # set while a SyncGroup waits for the leader's assignment

    def metadata_for(self, protocol: str | None) -> bytes:
        return next((m for n, m in self.protocols if n == protocol), b"")

    def protocol_names(self) -> list[str]:
        return [n for n, _ in self.protocols]

    def vote(self, candidates: set[str]) -> str:
        return next(n for n in self.protocol_names() if n in candidates)


@dataclass
class ClassicGroup:
    group_id: str
    state: GroupState = GroupState.EMPTY
    generation_id: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str | None = None
    members: dict[str, Member] = field(default_factory=dict)
    pending_members: dict[str, int] = field(default_factory=dict)  # KIP-394: id -> expiry ms
    offsets: dict[tuple[str, int], OffsetAndMetadata] = field(default_factory=dict)
    join_deadline_ms: int | None = None  # PreparingRebalance: the join phase ends here
    initial_join: bool = False  # group.initial.rebalance.delay.ms applies to this join phase
    initial_join_limit_ms: int = 0
    sync_deadline_ms: int | None = None  # CompletingRebalance: the leader must sync by then
    state_timestamp_ms: int = 0

    def transition(self, state: GroupState, now_ms: int) -> None:
        self.state = state
        self.state_timestamp_ms = now_ms

    def is_(self, *states: GroupState) -> bool:
        return self.state in states

    def supported_protocols(self) -> set[str]:
        """Protocols every member supports (all of a joining member's when the group is empty)."""
        names = [set(m.protocol_names()) for m in self.members.values()]
        return set.intersection(*names) if names else set()

    def supports(self, protocol_type: str, protocols: list[str]) -> bool:
        if not self.members:
            return bool(protocol_type) and bool(protocols)
        return protocol_type == self.protocol_type and bool(
            self.supported_protocols() & set(protocols)
        )

    def subscribed_topics(self) -> set[str]:
        """The topics the members of a "consumer" group subscribe to, read from their
        ConsumerProtocolSubscription metadata for the group's protocol (Kafka's
        ClassicGroup.computeSubscribedTopics); metadata that does not parse adds none."""
        if self.protocol_type != "consumer" or self.protocol_name is None:
            return set()
        topics: set[str] = set()
        for m in self.members.values():
            topics |= consumer_subscription_topics(m.metadata_for(self.protocol_name))
        return topics

    def select_protocol(self) -> str:
        """Kafka's ClassicGroup.selectProtocol: each member votes for its most preferred protocol
        among those all members support; most votes wins (ties: the earliest member's vote)."""
        candidates = self.supported_protocols()
        votes: dict[str, int] = {}
        for m in self.members.values():
            v = m.vote(candidates)
            votes[v] = votes.get(v, 0) + 1
        return max(votes, key=lambda n: votes[n])  # dicts keep insertion order: first max wins

    def all_members_joined(self) -> bool:
        return all(m.join_respond is not None for m in self.members.values()) and not (
            self.pending_members
        )

    def max_rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def to_record(self, now_ms: int) -> GroupMetadataValue:
        return GroupMetadataValue(
            protocol_type=self.protocol_type or "",
            generation=self.generation_id,
            protocol=self.protocol_name,
            leader=self.leader_id,
            current_state_timestamp_ms=now_ms,
            members=tuple(
                MemberMetadata(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                               m.rebalance_timeout_ms, m.session_timeout_ms,
                               m.metadata_for(self.protocol_name), m.assignment)
                for m in self.members.values()
            ),
        )  # fmt: skip

    @classmethod
    def from_record(cls, group_id: str, v: GroupMetadataValue, now_ms: int) -> ClassicGroup:
        """A group as loaded from __consumer_offsets: its members get a fresh session (they
        heartbeat the new coordinator, or expire and the group rebalances)."""
        g = cls(group_id, generation_id=v.generation, protocol_type=v.protocol_type or None,
                protocol_name=v.protocol, leader_id=v.leader)  # fmt: skip
        for m in v.members:
            g.members[m.member_id] = Member(
                m.member_id, m.group_instance_id, m.client_id, m.client_host,
                m.rebalance_timeout_ms, m.session_timeout_ms, v.protocol_type,
                [(v.protocol or "", m.subscription)], now_ms, m.assignment,
            )  # fmt: skip
        g.transition(GroupState.STABLE if g.members else GroupState.EMPTY, now_ms)
        return g


def consumer_subscription_topics(metadata: bytes) -> set[str]:
    """The topics of a ConsumerProtocolSubscription (any version: int16 version, then an
    int32-counted array of int16-length strings); empty when it does not parse."""
    try:
        (count,) = struct.unpack_from(">i", metadata, 2)
        if count < 0 or count > len(metadata):
            return set()
        pos, topics = 6, set()
        for _ in range(count):
            (n,) = struct.unpack_from(">h", metadata, pos)
            if n < 0 or pos + 2 + n > len(metadata):
                return set()
            topics.add(metadata[pos + 2:pos + 2 + n].decode())
            pos += 2 + n
        return topics
    except (struct.error, UnicodeDecodeError):
        return set()
