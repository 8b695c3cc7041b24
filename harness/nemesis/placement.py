"""Where `rebalance` moves partitions: the replica placement `kafka-reassign-partitions
--generate` proposes, as a pure function.

Kafka's rack-unaware placement (AdminUtils.assignReplicasToBrokers, kept in 4.x as
ReplicaPlacer's StripedReplicaPlacer predecessor for the tool): per topic, a random start index
and a random replica shift; partition p's first replica is broker (start + p) mod n and the
others follow at 1 + (shift + j) mod (n - 1) past it, the shift growing by one every n
partitions, so leaders and followers both spread round robin. `propose` draws the two random
numbers from the caller's RNG (the step's own, so a run's placement is reproducible).
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence


def _replica_index(first: int, shift: int, j: int, n: int) -> int:
    return (first + 1 + (shift + j) % (n - 1)) % n


def place_topic(partitions: int, rf: int, brokers: Sequence[int],
                rng: random.Random) -> list[list[int]]:
    """Replica lists for partitions 0..partitions-1 of one topic over `brokers`."""
    n = len(brokers)
    if rf < 1 or rf > n:
        raise ValueError(f"replication factor {rf} does not fit {n} broker(s) {list(brokers)}")
    start, shift = rng.randrange(n), rng.randrange(n)
    out: list[list[int]] = []
    for p in range(partitions):
        if p > 0 and p % n == 0:
            shift += 1
        first = (p + start) % n
        replicas = [brokers[first]]
        replicas += [brokers[_replica_index(first, shift, j, n)] for j in range(rf - 1)]
        out.append(replicas)
    return out


def propose(current: Mapping[str, Mapping[int, Sequence[int]]], brokers: Sequence[int],
            rng: random.Random) -> dict[tuple[str, int], list[int]]:
    """For each topic's partitions (topic -> partition -> current replicas), the proposed
    replicas of those that move; each keeps its replication factor."""
    moves: dict[tuple[str, int], list[int]] = {}
    for topic in sorted(current):
        parts = current[topic]
        rfs = {len(r) for r in parts.values()}
        if len(rfs) != 1:
            raise ValueError(f"topic {topic}: partitions with different replication factors")
        placed = place_topic(max(parts) + 1, rfs.pop(), sorted(brokers), rng)
        for p, now in parts.items():
            if list(now) != placed[p]:
                moves[(topic, p)] = placed[p]
    return moves
