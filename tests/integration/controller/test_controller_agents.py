"""ClusterLink (the broker's one controller agent) against a real `highwater controller` process.

Three brokers' ClusterLinks, each over a real ReplicaManager on in-memory logs, register through
BrokerLifecycle, get unfenced, learn a topic through the metadata log and take their own
leader/follower roles; when one link stops heartbeating the controller fences it and the others
learn the new leader from the metadata they fetch.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from broker_app.config import BrokerConfig
from broker_app.controller.broker_lifecycle import BrokerState
from broker_app.environment import monotonic_ms
from broker_app.protocol.codec import request_class
from broker_app.protocol.entities import build
from broker_app.replication.replica_manager import ReplicaManager
from broker_app.server.cluster_link import ClusterLink
from broker_app.server.network_client import KafkaClient
from broker_app.storage.fs import MemoryFileSystem
from broker_app.storage.log_manager import LogManager


async def wait_until(predicate, timeout_s: float = 30.0) -> None:  # noqa: ANN001
    async def poll() -> None:
        while not predicate():
            await asyncio.sleep(0.05)

    await asyncio.wait_for(poll(), timeout_s)


def _link(b: int, controller_port: int, tmp_path: Path) -> ClusterLink:
    config = BrokerConfig(
        node_id=b, data_dir=tmp_path / f"b{b}", port=19000 + b,
        controller=("127.0.0.1", controller_port), heartbeat_interval_ms=300,
    )  # fmt: skip
    store = LogManager.open(Path("/sim/broker/data"), fs=MemoryFileSystem())
    rm = ReplicaManager(b, store, clock=monotonic_ms)
    return ClusterLink(config, rm)


def _led(link: ClusterLink) -> set[int]:
    rm = link.replica_manager
    return {p for (t, p), part in rm.partitions.items() if t == "t" and part.is_leader}


@pytest.mark.timeout(120)
async def test_links_register_learn_metadata_and_survive_a_fenced_peer(controller_factory,
                                                                      tmp_path):  # fmt: skip
    controller = controller_factory(["--session-timeout-ms", "1500"])
    links = {b: _link(b, controller.port, tmp_path) for b in (1, 2, 3)}
    admin = KafkaClient("127.0.0.1", controller.port, "admin", 10_000)
    try:
        for link in links.values():
            link.start()
        await wait_until(lambda: all(lk.lifecycle.state is BrokerState.RUNNING
                                     for lk in links.values()))  # fmt: skip
        assert all(not lk.fenced and lk.broker_epoch >= 0 for lk in links.values())
        resp = await admin.send(build(request_class(19, 7), {
            "topics": [{"name": "t", "num_partitions": 3, "replication_factor": 3,
                        "assignments": [], "configs": []}],
            "timeout": 5000, "validate_only": False,
        }))  # fmt: skip
        assert resp.topics[0].error_code == 0
        await wait_until(lambda: all(len(lk.replica_manager.partitions) == 3
                                     for lk in links.values()))  # fmt: skip
        image = links[1].image
        for b, link in links.items():
            expected = {p for p, reg in image.topics["t"].partitions.items() if reg.leader == b}
            assert _led(link) == expected and len(expected) == 1
        # Broker 1 goes silent: fenced after the session timeout, its partition gets a leader.
        await links[1].stop()
        (lost,) = [p for p, reg in image.topics["t"].partitions.items() if reg.leader == 1]

        def moved() -> bool:
            reg = links[2].image.partition("t", lost)
            return reg is not None and reg.leader in (2, 3)

        await wait_until(moved)
        now = links[2].image
        assert now.brokers[1].fenced
        assert 1 not in now.partition("t", lost).isr
        assert now.partition("t", lost).leader_epoch == 1
        new_leader = links[now.partition("t", lost).leader]
        await wait_until(lambda: lost in _led(new_leader))
        assert links[3].image.offset <= controller.state()["metadata_offset"]
    finally:
        for link in links.values():
            await link.stop()
        admin.close()
