"""Real admin clients (confluent-kafka, kafka-python) against a `highwater controller` process.

The three registered "brokers" advertise the controller's own address, so whatever node a
client picks from the metadata it reaches a process that answers; no broker runs here.
"""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka import ElectionType, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from broker_app.protocol.codec import request_class
from broker_app.protocol.entities import build

from ..rawclient import RawClient


def _register_brokers(controller) -> dict[int, int]:  # noqa: ANN001
    epochs = {}
    with RawClient(controller.port) as c:
        for b in (1, 2, 3):
            resp = c.request(build(request_class(62, 4), {
                "broker_id": b, "cluster_id": "highwater-cluster", "incarnation_id": uuid.uuid4(),
                "listeners": [{"name": "PLAINTEXT", "host": "127.0.0.1", "port": controller.port,
                               "security_protocol": 0}],
                "features": [], "rack": None,
            }))  # fmt: skip
            epochs[b] = resp.broker_epoch
        for b, e in epochs.items():
            hb = _heartbeat(c, b, e)
            assert not hb.is_fenced
    return epochs


def _heartbeat(c: RawClient, b: int, epoch: int, want_fence: bool = False):  # noqa: ANN202
    return c.request(build(request_class(63, 1), {
        "broker_id": b, "broker_epoch": epoch, "current_metadata_offset": 10**6,
        "want_fence": want_fence, "want_shut_down": False,
    }))  # fmt: skip


@pytest.fixture
def ctl(controller_factory):
    controller = controller_factory(["--session-timeout-ms", "120000"])
    epochs = _register_brokers(controller)
    return controller, epochs


def test_confluent_admin_create_topics_and_describe(ctl):
    controller, _ = ctl
    admin = AdminClient({"bootstrap.servers": controller.bootstrap})
    futures = admin.create_topics(
        [
            NewTopic("orders", num_partitions=6, replication_factor=3,
                     config={"min.insync.replicas": "2"}),
            NewTopic("too-wide", num_partitions=1, replication_factor=4),
        ],
        operation_timeout=10,
    )  # fmt: skip
    futures["orders"].result(timeout=30)
    with pytest.raises(KafkaException) as err:
        futures["too-wide"].result(timeout=30)
    assert err.value.args[0].name() == "INVALID_REPLICATION_FACTOR"
    dup = admin.create_topics([NewTopic("orders", 1, 1)], operation_timeout=10)["orders"]
    with pytest.raises(KafkaException) as err:
        dup.result(timeout=30)
    assert err.value.args[0].name() == "TOPIC_ALREADY_EXISTS"
    md = admin.list_topics("orders", timeout=30)
    parts = md.topics["orders"].partitions
    assert sorted(parts) == list(range(6))
    assert sorted(p.leader for p in parts.values()) == [1, 1, 2, 2, 3, 3]
    assert all(sorted(p.replicas) == [1, 2, 3] == sorted(p.isrs) for p in parts.values())
    state = controller.state()["image"]["topics"]["orders"]
    assert state["configs"] == {"min.insync.replicas": "2"}
    assert [parts[i].replicas for i in range(6)] == [
        state["partitions"][str(i)]["replicas"] for i in range(6)
    ]


def test_confluent_admin_elect_leaders_restores_preferred_leader(ctl):
    controller, epochs = ctl
    admin = AdminClient({"bootstrap.servers": controller.bootstrap})
    admin.create_topics([NewTopic("e", 1, 3)], operation_timeout=10)["e"].result(timeout=30)
    p = controller.state()["image"]["topics"]["e"]
    preferred = p["partitions"]["0"]["replicas"][0]
    with RawClient(controller.port) as c:
        _heartbeat(c, preferred, epochs[preferred], want_fence=True)  # leadership moves
        _heartbeat(c, preferred, epochs[preferred])  # back, but out of the ISR
        reg = controller.state()["image"]["topics"]["e"]["partitions"]["0"]
        assert reg["leader"] != preferred and preferred not in reg["isr"]
        tp = TopicPartition("e", 0)
        result = admin.elect_leaders(ElectionType.PREFERRED, [tp]).result(timeout=30)
        assert result[tp] is not None  # PREFERRED_LEADER_NOT_AVAILABLE: not in the ISR yet
        # The leader re-admits the preferred replica to the ISR (what a caught-up fetch does).
        resp = c.request(build(request_class(56, 3), {
            "broker_id": reg["leader"], "broker_epoch": epochs[reg["leader"]],
            "topics": [{"topic_id": uuid.UUID(p["topic_id"]), "partitions": [{
                "partition_index": 0, "leader_epoch": reg["leader_epoch"],
                "new_isr_with_epochs": [{"broker_id": b, "broker_epoch": epochs[b]}
                                        for b in reg["isr"] + [preferred]],
                "leader_recovery_state": 0, "partition_epoch": reg["partition_epoch"]}]}],
        }))  # fmt: skip
        assert resp.topics[0].partitions[0].error_code == 0
    result = admin.elect_leaders(ElectionType.PREFERRED, [tp]).result(timeout=30)
    assert result[tp] is None
    after = controller.state()["image"]["topics"]["e"]["partitions"]["0"]
    assert after["leader"] == preferred and after["leader_epoch"] == reg["leader_epoch"] + 1


def test_kafka_python_admin_create_topics(ctl):
    from kafka.admin import KafkaAdminClient
    from kafka.admin import NewTopic as KNewTopic

    controller, _ = ctl
    admin = KafkaAdminClient(bootstrap_servers=controller.bootstrap, request_timeout_ms=20000)
    try:
        admin.create_topics([KNewTopic("kp", num_partitions=2, replication_factor=2)])
        described = admin.describe_topics(["kp"])
    finally:
        admin.close()
    (topic,) = described
    assert topic["error_code"] == 0 and len(topic["partitions"]) == 2
    assert all(len(p["replica_nodes"]) == 2 for p in topic["partitions"])
    assert "kp" in controller.state()["image"]["topics"]
