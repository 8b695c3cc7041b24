"""Which replica a consumer should read from (KIP-392, fetch from follower), sans I/O.

Kafka's `replica.selector.class` names a ReplicaSelector; the leader asks it, for a consumer's
Fetch (v11+, which carries the client's `client.rack` as rack_id), which replica to prefer. Two
selectors exist here, under the names `--replica-selector` takes:

- `leader` (Kafka's default, LeaderSelector): always the leader, so consumers never move.
- `rack-aware` (RackAwareReplicaSelector): with a non-empty client rack, the replicas whose
  broker.rack equals it; the leader when it is one of them or when none is; otherwise the most
  caught-up of them (highest log end offset, then the shortest time since it last caught up).
  Without a client rack, the leader.

Candidates are what Kafka's ReplicaManager.findPreferredReadReplica offers: the leader, and each
follower that holds the fetch offset (log start <= offset <= log end). Where we differ: a
follower must also be in the ISR (Kafka offers any follower holding the offset, later versions
skip fenced or shutting-down brokers); a replica out of the ISR can be arbitrarily far behind,
which a consumer redirected to it would see as a stall.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

SELECTORS = ("leader", "rack-aware")


@dataclass(frozen=True)
class ReplicaView:
    """One candidate replica as the leader sees it."""

    broker_id: int
    rack: str | None
    log_end_offset: int
    ms_since_caught_up: int  # 0 for the leader


def select_read_replica(selector: str, client_rack: str | None, leader: ReplicaView,
                        followers: Sequence[ReplicaView]) -> int:
    """The broker id the consumer should read from (the leader's when it should stay)."""
    if selector not in SELECTORS:
        raise ValueError(f"replica selector must be one of {', '.join(SELECTORS)}, "
                         f"got {selector!r}")
    if selector == "leader" or not client_rack:
        return leader.broker_id
    same_rack = [r for r in (leader, *followers) if r.rack == client_rack]
    if not same_rack or leader in same_rack:
        return leader.broker_id
    best = max(same_rack, key=lambda r: (r.log_end_offset, -r.ms_since_caught_up, -r.broker_id))
    return best.broker_id


def candidates(followers: Sequence[ReplicaView], fetch_offset: int,
               log_start_offsets: dict[int, int], isr: frozenset[int] | set[int]
               ) -> list[ReplicaView]:
    """The followers a consumer at `fetch_offset` may be sent to (see the module docstring)."""
    return [r for r in followers
            if r.broker_id in isr and r.log_end_offset >= fetch_offset
            and 0 <= log_start_offsets.get(r.broker_id, -1) <= fetch_offset]
