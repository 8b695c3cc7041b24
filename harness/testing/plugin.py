"""The pytest plugin (entry point `pytest11: highwater`): fixtures for a user's own tests.

- `highwater_cluster`: a HighwaterCluster of 3 brokers and 1 controller (Kafka 4.1), up for
  the test and removed after it, its logs and histories under the test's tmp_path.
- `highwater_cluster_factory`: `make(brokers=3, controllers=1, kafka_version=None,
  switches=None)` for other configurations; every cluster it made is removed after the test.
Both need Docker; the project's images are built on first use (minutes, once).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.testing.cluster import HighwaterCluster


@pytest.fixture
def highwater_cluster_factory(tmp_path: Path) -> Iterator[Callable[..., HighwaterCluster]]:
    made: list[HighwaterCluster] = []

    def make(**kwargs: Any) -> HighwaterCluster:
        kwargs.setdefault("store", tmp_path / f"highwater-{len(made) + 1}")
        cluster = HighwaterCluster(**kwargs)
        made.append(cluster)
        return cluster.up()

    try:
        yield make
    finally:
        for cluster in reversed(made):
            cluster.down()


@pytest.fixture
def highwater_cluster(highwater_cluster_factory: Callable[..., HighwaterCluster]
                      ) -> HighwaterCluster:  # fmt: skip
    return highwater_cluster_factory()
