"""BrokerControllerAgent (what a broker runs) against a real `highwater controller` process.

Three agents register, get unfenced, learn a topic through the metadata log and see their
own leader/follower assignments; when one agent stops heartbeating the controller fences it
and the others learn the new leader from the metadata they fetch.
"""

from __future__ import annotations

import asyncio

import pytest

from broker_app.controller.broker_lifecycle import BrokerLifecycle, BrokerState
from broker_app.controller.channel import BrokerControllerAgent, ControllerChannel
from broker_app.metadata import MetadataDelta
from broker_app.protocol.codec import request_class
from broker_app.protocol.entities import build


async def wait_until(predicate, timeout_s: float = 30.0) -> None:  # noqa: ANN001
    async def poll() -> None:
        while not predicate():
            await asyncio.sleep(0.05)

    await asyncio.wait_for(poll(), timeout_s)


@pytest.mark.timeout(120)
async def test_agents_register_learn_metadata_and_survive_a_fenced_peer(controller_factory):
    controller = controller_factory(["--session-timeout-ms", "1500"])
    changes: dict[int, list[MetadataDelta]] = {1: [], 2: [], 3: []}
    agents = {
        b: BrokerControllerAgent(
            BrokerLifecycle(b, "127.0.0.1", 19000 + b, heartbeat_interval_ms=300,
                            retry_backoff_ms=50),
            "127.0.0.1", controller.port, changes[b].append, fetch_max_wait_ms=300,
        )  # fmt: skip
        for b in (1, 2, 3)
    }
    admin = ControllerChannel("127.0.0.1", controller.port, "admin")
    try:
        for a in agents.values():
            a.start()
        await wait_until(lambda: all(a.lifecycle.state is BrokerState.RUNNING
                                     for a in agents.values()))  # fmt: skip
        resp = await admin.request(build(request_class(19, 7), {
            "topics": [{"name": "t", "num_partitions": 3, "replication_factor": 3,
                        "assignments": [], "configs": []}],
            "timeout": 5000, "validate_only": False,
        }))  # fmt: skip
        assert resp.topics[0].error_code == 0
        await wait_until(lambda: all("t" in a.loader.image.topics for a in agents.values()))
        image = agents[1].loader.image
        for b in (1, 2, 3):
            led = set()
            for d in changes[b]:
                led |= {p for (_, p) in d.local_changes(b).leaders}
            expected = {p for p, reg in image.topics["t"].partitions.items() if reg.leader == b}
            assert led == expected and len(expected) == 1
        # Broker 1 goes silent: fenced after the session timeout, its partition gets a leader.
        await agents[1].stop()
        (lost,) = [p for p, reg in image.topics["t"].partitions.items() if reg.leader == 1]

        def moved() -> bool:
            reg = agents[2].loader.image.partition("t", lost)
            return reg is not None and reg.leader in (2, 3)

        await wait_until(moved)
        now = agents[2].loader.image
        assert now.brokers[1].fenced
        assert 1 not in now.partition("t", lost).isr
        assert now.partition("t", lost).leader_epoch == 1
        assert agents[3].loader.image.offset <= controller.state()["metadata_offset"]
    finally:
        for a in agents.values():
            await a.stop()
        await admin.close()
