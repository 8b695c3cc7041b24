"""Bad control- and data-plane requests against a running controller and brokers.

Raw Kafka-protocol requests (kio entities via protocol.entities.build, sent with the broker's own
KafkaClient) that a confused, fenced or restarted peer could send. Each gets the protocol's error
code (Kafka's ReplicationControlManager / ClusterControlManager / ReplicaManager rules), nothing
changes in the controller's metadata, no process dies, and a produce/consume round trip still works.
"""

from __future__ import annotations

import asyncio
import signal
import uuid
from typing import Any

import pytest
from kio.index import load_request_schema

from broker_app.controller.errors import Errors as CErrors
from broker_app.protocol.entities import build
from broker_app.protocol.error_codes import Errors
from broker_app.server.network_client import KafkaClient

from .conftest import Cluster
from .helpers import consume_all, create_topic, produce, wait_until

pytestmark = pytest.mark.timeout(240)


def send(port: int, body: Any) -> Any:
    async def go() -> Any:
        client = KafkaClient("127.0.0.1", port, "bad-input-test", 10_000)
        try:
            return await client.send(body)
        finally:
            client.close()

    return asyncio.run(go())


def controller_image(cluster: Cluster) -> dict[str, Any]:
    return cluster.controller.state()["image"]


def alter_partition(cluster: Cluster, broker_id: int, broker_epoch: int, topic_id: str,
                    leader_epoch: int, partition_epoch: int,
                    isr: list[tuple[int, int]]) -> tuple[int, int | None]:  # fmt: skip
    """AlterPartition v3 to the controller: (top-level error, partition error or None)."""
    body = build(load_request_schema(56, 3), {
        "broker_id": broker_id, "broker_epoch": broker_epoch,
        "topics": [{"topic_id": uuid.UUID(topic_id), "partitions": [{
            "partition_index": 0, "leader_epoch": leader_epoch,
            "new_isr_with_epochs": [{"broker_id": b, "broker_epoch": e} for b, e in isr],
            "leader_recovery_state": 0, "partition_epoch": partition_epoch,
        }]}],
    })  # fmt: skip
    resp = send(cluster.controller.port, body)
    parts = [p for t in resp.topics for p in t.partitions]
    return resp.error_code.value, parts[0].error_code.value if parts else None


def heartbeat(cluster: Cluster, broker_id: int, broker_epoch: int) -> int:
    body = build(load_request_schema(63, 1), {
        "broker_id": broker_id, "broker_epoch": broker_epoch, "current_metadata_offset": 0,
        "want_fence": False, "want_shut_down": False, "offline_log_dirs": [],
    })  # fmt: skip
    return send(cluster.controller.port, body).error_code.value


def fetch(port: int, topic: str, partition: int, replica_id: int = -1) -> int:
    """Fetch v12 of one partition at offset 0, no waiting: the partition's error code."""
    body = build(load_request_schema(1, 12), {
        "replica_id": replica_id, "max_wait": 0, "min_bytes": 0, "max_bytes": 1 << 20,
        "isolation_level": 0, "session_id": 0, "session_epoch": -1,
        "topics": [{"topic": topic, "partitions": [{
            "partition": partition, "current_leader_epoch": -1, "fetch_offset": 0,
            "last_fetched_epoch": -1, "log_start_offset": -1, "partition_max_bytes": 1 << 20,
        }]}],
        "forgotten_topics_data": [], "rack_id": "",
    })  # fmt: skip
    resp = send(port, body)
    [t] = resp.responses
    [p] = t.partitions
    assert (t.topic, p.partition_index) == (topic, partition)
    return p.error_code.value


def offset_for_leader_epoch(port: int, topic: str, partition: int, replica_id: int = -1) -> int:
    body = build(load_request_schema(23, 4), {
        "replica_id": replica_id,
        "topics": [{"topic": topic, "partitions": [
            {"partition": partition, "current_leader_epoch": -1, "leader_epoch": 0}]}],
    })  # fmt: skip
    [t] = send(port, body).topics
    [p] = t.partitions
    return p.error_code.value


def assert_alive_and_round_trip(cluster: Cluster, topic: str, expected_before: list[bytes]) -> None:
    assert cluster.controller.proc is not None and cluster.controller.proc.poll() is None, (
        cluster.logs()
    )
    assert produce(cluster.bootstrap, topic, [b"still-ok"], acks="all")[0][0] is None, (
        cluster.logs()
    )
    want = expected_before + [b"still-ok"]
    assert consume_all(cluster.bootstrap, topic, len(want)) == want


def test_controller_rejects_bad_alter_partition_and_heartbeats(cluster) -> None:
    create_topic(cluster.bootstrap, "t", rf=3)
    assert produce(cluster.bootstrap, "t", [b"a"], acks="all")[0][0] is None
    image = controller_image(cluster)
    old = image["topics"]["t"]["partitions"]["0"]
    # Kill the leader: the controller fences it and elects another, so the old leader epoch is
    # stale and there is a fenced replica to name in an ISR.
    fenced = old["leader"]
    cluster.brokers[fenced].stop(signal.SIGKILL)

    def settled() -> dict[str, Any] | None:
        img = controller_image(cluster)
        reg = img["topics"]["t"]["partitions"]["0"]
        ok = (img["brokers"][str(fenced)]["fenced"] and reg["leader"] not in (fenced, -1)
              and fenced not in reg["isr"] and len(reg["isr"]) == 2)  # fmt: skip
        return img if ok else None

    image = wait_until(settled, 30, "old leader fenced, new leader, ISR of two")
    topic_id = image["topics"]["t"]["topic_id"]
    reg = image["topics"]["t"]["partitions"]["0"]
    leader, le, pe = reg["leader"], reg["leader_epoch"], reg["partition_epoch"]
    assert le > old["leader_epoch"]
    epochs = {int(b): r["epoch"] for b, r in image["brokers"].items()}
    isr_now = [(b, epochs[b]) for b in reg["isr"]]

    # AlterPartition from an unknown broker, and from the leader with a stale broker epoch.
    assert (
        alter_partition(cluster, 99, 0, topic_id, le, pe, isr_now)[0] == CErrors.STALE_BROKER_EPOCH
    )
    stale = epochs[leader] - 1
    assert alter_partition(cluster, leader, stale, topic_id, le, pe, isr_now)[0] == (
        CErrors.STALE_BROKER_EPOCH
    )
    # Right broker epoch, stale leader epoch (the epoch before the failover).
    assert alter_partition(cluster, leader, epochs[leader], topic_id, old["leader_epoch"], pe,
                           isr_now) == (CErrors.NONE, CErrors.FENCED_LEADER_EPOCH)  # fmt: skip
    # An ISR naming the fenced broker: INELIGIBLE_REPLICA (KIP-903, AlterPartition v3).
    with_fenced = isr_now + [(fenced, epochs[fenced])]
    assert alter_partition(cluster, leader, epochs[leader], topic_id, le, pe, with_fenced) == (
        CErrors.NONE, CErrors.INELIGIBLE_REPLICA,
    )  # fmt: skip
    # A live ISR member with a broker epoch it does not have: INELIGIBLE_REPLICA too.
    follower = next(b for b in reg["isr"] if b != leader)
    wrong = [(leader, epochs[leader]), (follower, epochs[follower] + 1000)]
    assert alter_partition(cluster, leader, epochs[leader], topic_id, le, pe, wrong) == (
        CErrors.NONE, CErrors.INELIGIBLE_REPLICA,
    )  # fmt: skip
    # An ISR naming an unknown broker, not a replica: INVALID_REQUEST (Kafka's validateIsr).
    with_unknown = isr_now + [(99, 0)]
    assert alter_partition(cluster, leader, epochs[leader], topic_id, le, pe, with_unknown) == (
        CErrors.NONE, CErrors.INVALID_REQUEST,
    )  # fmt: skip
    # An unknown topic id.
    assert alter_partition(cluster, leader, epochs[leader], str(uuid.uuid4()), le, pe,
                           isr_now) == (CErrors.NONE, CErrors.UNKNOWN_TOPIC_ID)  # fmt: skip

    # Heartbeats: an unknown broker id (this controller answers BROKER_ID_NOT_REGISTERED, see
    # quorum_controller.heartbeat), and a live broker's id with a stale broker epoch.
    assert heartbeat(cluster, 99, 0) == CErrors.BROKER_ID_NOT_REGISTERED
    assert heartbeat(cluster, follower, epochs[follower] - 1) == CErrors.STALE_BROKER_EPOCH

    # None of it changed the metadata; the real follower was not fenced by the stale heartbeat.
    after = controller_image(cluster)
    assert after["topics"]["t"]["partitions"]["0"] == reg
    assert not after["brokers"][str(follower)]["fenced"]
    assert all(b.running for i, b in cluster.brokers.items() if i != fenced)
    assert_alive_and_round_trip(cluster, "t", [b"a"])


def test_brokers_answer_fetches_for_unknown_and_unhosted_partitions(cluster) -> None:
    create_topic(cluster.bootstrap, "t", rf=3)
    create_topic(cluster.bootstrap, "solo", rf=1)
    assert produce(cluster.bootstrap, "t", [b"a"], acks="all")[0][0] is None
    solo = controller_image(cluster)["topics"]["solo"]["partitions"]["0"]
    [host] = solo["replicas"]
    other = next(i for i in cluster.brokers if i != host)
    ob = cluster.brokers[other]
    # Wait until `other` has applied the metadata for "solo" (it knows the topic, hosts nothing).
    wait_until(lambda: fetch(cluster.brokers[host].port, "solo", 0) == Errors.NONE, 30,
               "solo served by its host")  # fmt: skip

    for replica_id in (-1, host):  # consumer fetch, replica fetch
        assert fetch(ob.port, "nope", 0, replica_id) == Errors.UNKNOWN_TOPIC_OR_PARTITION
        assert fetch(ob.port, "t", 7, replica_id) == Errors.UNKNOWN_TOPIC_OR_PARTITION
        # The topic exists but this broker is no replica of the partition: Kafka's
        # ReplicaManager answers NOT_LEADER_OR_FOLLOWER so the client refreshes its metadata.
        assert fetch(ob.port, "solo", 0, replica_id) == Errors.NOT_LEADER_OR_FOLLOWER
    assert offset_for_leader_epoch(ob.port, "nope", 0) == Errors.UNKNOWN_TOPIC_OR_PARTITION
    assert offset_for_leader_epoch(ob.port, "t", 7, host) == Errors.UNKNOWN_TOPIC_OR_PARTITION
    assert offset_for_leader_epoch(ob.port, "solo", 0) == Errors.NOT_LEADER_OR_FOLLOWER

    assert all(b.running for b in cluster.brokers.values()), cluster.logs()
    assert_alive_and_round_trip(cluster, "t", [b"a"])
