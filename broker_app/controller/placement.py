"""Replica placement: round robin with shift (Kafka's rack-unaware assignment).

`place_replicas(brokers, num_partitions, rf, start_index)`: partition p's first (preferred)
replica is broker (p + start_index) mod n, so preferred leaders go round the brokers evenly;
the followers sit at a shift from the first replica that grows by one every n partitions, so
the followers of one broker's partitions are spread over the others instead of always being
its next neighbours. Kafka picks start_index at random; the controller passes the number of
partitions already in the cluster, which keeps placement deterministic (reproducible runs) and
still spreads the leaders of many small topics across the brokers.
"""

from __future__ import annotations

from collections.abc import Sequence


def place_replicas(
    brokers: Sequence[int], num_partitions: int, rf: int, start_index: int = 0
) -> list[tuple[int, ...]]:
    n = len(brokers)
    if rf < 1 or rf > n:
        raise ValueError(f"replication factor {rf} needs 1..{n} brokers")
    ordered = sorted(brokers)
    shift = start_index % n
    out: list[tuple[int, ...]] = []
    for p in range(num_partitions):
        if p > 0 and p % n == 0:
            shift += 1  # next round of partitions: followers move one further along
        first = (p + start_index) % n
        replicas = [ordered[first]]
        for j in range(rf - 1):
            step = 1 + (shift + j) % (n - 1)
            replicas.append(ordered[(first + step) % n])
        out.append(tuple(replicas))
    return out
