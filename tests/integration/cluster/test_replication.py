"""One controller + three brokers on 127.0.0.1 with real clients: RF=3 replication end to end."""

from __future__ import annotations

import pytest

from .helpers import consume_all, create_topic, produce, wait_until

pytestmark = pytest.mark.timeout(180)


def test_rf3_topic_replicates_and_converges(cluster) -> None:
    create_topic(cluster.bootstrap, "t", rf=3)
    values = [f"v{i}".encode() for i in range(20)]
    results = produce(cluster.bootstrap, "t", values, acks="all")
    assert [e for e, _ in results] == [None] * 20, cluster.logs()
    assert consume_all(cluster.bootstrap, "t", 20) == values

    def converged() -> bool:
        parts = [b.partition("t") for b in cluster.brokers.values()]
        return all(p and p["leo"] == 20 and p["hw"] == 20 for p in parts)

    wait_until(converged, 30, "LEO = HW = 20 on every replica")
    parts = [b.partition("t") for b in cluster.brokers.values()]
    assert sorted(p["role"] for p in parts) == ["follower", "follower", "leader"]
    leader = next(p for p in parts if p["role"] == "leader")
    assert leader["isr"] == [1, 2, 3]
    # Same bytes in every replica's segment.
    segs = [
        (b.data_dir / "t-0" / "00000000000000000000.log").read_bytes()
        for b in cluster.brokers.values()
    ]
    assert segs[0] == segs[1] == segs[2] and len(segs[0]) > 0
