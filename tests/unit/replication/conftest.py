"""Fixtures for the replication core tests: a hand-driven cluster over real Logs in tmp dirs."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from replication_sim import Cluster

from broker_app.replication.behaviour import ReplicationBehaviour


@pytest.fixture
def make_cluster(tmp_path: Path) -> Iterator[Callable[..., Cluster]]:
    made: list[Cluster] = []

    def make(broker_ids: list[int], min_isr: int = 1, memory: bool = False,
             **behaviour: object) -> Cluster:  # fmt: skip
        root = tmp_path / f"cluster-{len(made)}"
        cluster = Cluster(root, broker_ids, ReplicationBehaviour(**behaviour), min_isr=min_isr,  # type: ignore[arg-type]
                          memory=memory)  # fmt: skip
        made.append(cluster)
        return cluster

    try:
        yield make
    finally:
        for cluster in made:
            cluster.close()
