"""DescribeCluster and ListPartitionReassignments answer from the committed metadata image."""

from __future__ import annotations

from types import SimpleNamespace

from broker_app.metadata.image import PartitionRegistration
from broker_app.protocol.apis import ApiKey


def _handle(broker, api_key: int, version: int, data: dict):
    return broker.call(api_key, version, data)


def _image() -> SimpleNamespace:
    moving = PartitionRegistration(replicas=(1, 2, 3), isr=(1, 2), leader=1,
                                   adding_replicas=(3,), removing_replicas=(2,))  # fmt: skip
    still = PartitionRegistration(replicas=(1, 2), isr=(1, 2), leader=1)
    topics = {"a": SimpleNamespace(partitions={0: still, 1: moving}),
              "b": SimpleNamespace(partitions={0: still})}  # fmt: skip
    brokers = {b: SimpleNamespace(host=f"h{b}", port=9000 + b, rack=None) for b in (1, 2, 3)}
    return SimpleNamespace(topics=topics, brokers=brokers, live_brokers=lambda: [1, 3])


def test_describe_cluster_lists_live_brokers_and_an_alive_controller(broker) -> None:
    broker.apis.context.cluster = SimpleNamespace(image=_image())
    data = {"include_cluster_authorized_operations": False, "endpoint_type": 1}
    resp = _handle(broker, ApiKey.DESCRIBE_CLUSTER, 1, data)
    assert [(b.broker_id, b.host, b.port) for b in resp.brokers] == [(1, "h1", 9001),
                                                                     (3, "h3", 9003)]  # fmt: skip
    assert resp.controller_id in (1, 3) and resp.cluster_id == "highwater-cluster"


def test_list_partition_reassignments_shows_only_moving_partitions(broker) -> None:
    broker.apis.context.cluster = SimpleNamespace(image=_image())
    everything = {"timeout": 1000, "topics": None}
    resp = _handle(broker, ApiKey.LIST_PARTITION_REASSIGNMENTS, 0, everything)
    [topic] = resp.topics
    [part] = topic.partitions
    assert (topic.name, part.partition_index) == ("a", 1)
    assert (list(part.adding_replicas), list(part.removing_replicas)) == ([3], [2])
    asked = {"timeout": 1000, "topics": [{"name": "a", "partition_indexes": [0]}]}
    assert _handle(broker, ApiKey.LIST_PARTITION_REASSIGNMENTS, 0, asked).topics == ()


def test_reassigning_to_an_unregistered_broker_is_refused(broker) -> None:
    broker.create_topic("t")  # on the lone broker 1; there is no broker 2
    resp = _handle(broker, ApiKey.ALTER_PARTITION_REASSIGNMENTS, 0, {"timeout": 1000, "topics": [
        {"name": "t", "partitions": [{"partition_index": 0, "replicas": [2]}]}]})  # fmt: skip
    assert resp.responses[0].partitions[0].error_code.value == 39  # INVALID_REPLICA_ASSIGNMENT
