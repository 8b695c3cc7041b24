"""DeleteTopics, CreatePartitions and AlterConfigs on the QuorumController: metadata records,
replay after a restart, brokers' deletes, and Kafka's error codes per topic."""

from __future__ import annotations

import uuid

from broker_app.controller.errors import Errors
from broker_app.controller.messages import NewPartitions
from broker_app.controller.quorum_controller import QuorumController
from broker_app.metadata.image import MetadataDelta
from broker_app.metadata.records import RemoveTopic, TopicConfig


def test_delete_topic_writes_remove_topic_and_brokers_delete_their_replicas(cluster) -> None:
    cluster.create("a", 2)
    before = cluster.image
    results, records = cluster.controller.delete_topics([("a", None)], 0)
    assert [r.error for r in results] == [Errors.NONE] and "a" not in cluster.image.topics
    assert [type(r) for r in records] == [RemoveTopic]
    changes = MetadataDelta(before, cluster.image).local_changes(1)
    assert changes.deletes == {("a", 0), ("a", 1)} and not changes.leaders
    # replayed from the log by a restarted controller
    assert "a" not in QuorumController(cluster.controller.config, cluster.log).image.topics


def test_delete_topics_error_codes(cluster) -> None:
    cluster.create("a")
    results, records = cluster.controller.delete_topics(
        [("nope", None), (None, uuid.UUID(int=999)), ("a", None), ("a", None),
         ("__consumer_offsets", None)], 0)  # fmt: skip
    assert [r.error for r in results] == [
        Errors.UNKNOWN_TOPIC_OR_PARTITION, Errors.UNKNOWN_TOPIC_ID, Errors.INVALID_REQUEST,
        Errors.INVALID_REQUEST, Errors.UNKNOWN_TOPIC_OR_PARTITION]  # fmt: skip
    assert records == [] and "a" in cluster.image.topics
    topic_id = cluster.image.topics["a"].topic_id
    [r], _ = cluster.controller.delete_topics([(None, topic_id)], 0)
    assert (r.error, r.name) == (Errors.NONE, "a")


def test_create_partitions_adds_placed_partitions_with_the_topic_rf(cluster) -> None:
    cluster.create("a", 1, rf=2)
    [r], records = cluster.controller.create_partitions([NewPartitions("a", 3)], False, 0)
    assert r.error == Errors.NONE and len(records) == 2
    parts = cluster.image.topics["a"].partitions
    assert sorted(parts) == [0, 1, 2] and all(len(p.replicas) == 2 for p in parts.values())
    [r], _ = cluster.controller.create_partitions(
        [NewPartitions("a", 4, [(3, 1)])], False, 0)  # fmt: skip
    assert r.error == Errors.NONE and cluster.part("a", 3).replicas == (3, 1)


def test_create_partitions_error_codes(cluster) -> None:
    cluster.create("a", 2, rf=2)
    c = cluster.controller
    cases = [
        (NewPartitions("a", 2), Errors.INVALID_PARTITIONS),  # already has 2
        (NewPartitions("a", 1), Errors.INVALID_PARTITIONS),  # fewer
        (NewPartitions("nope", 3), Errors.UNKNOWN_TOPIC_OR_PARTITION),
        (NewPartitions("a", 3, [(1,)]), Errors.INVALID_REPLICA_ASSIGNMENT),  # rf 1 != 2
        (NewPartitions("a", 3, [(1, 9)]), Errors.INVALID_REPLICA_ASSIGNMENT),  # unknown broker
        (NewPartitions("a", 4, [(1, 2)]), Errors.INVALID_REPLICA_ASSIGNMENT),  # 1 of 2 given
        (NewPartitions("a", 10**9), Errors.INVALID_PARTITIONS),
    ]
    for item, code in cases:
        [r], records = c.create_partitions([item], False, 0)
        assert (r.error, records) == (code, []), (item, r)
    [r], records = c.create_partitions([NewPartitions("a", 5)], True, 0)  # validate only
    assert r.error == Errors.NONE and records == []
    assert len(cluster.image.topics["a"].partitions) == 2


def test_alter_topic_configs_writes_config_records_only_for_changes(cluster) -> None:
    cluster.create("a", **{"min.insync.replicas": "2"})
    results, records = cluster.controller.alter_topic_configs(
        [("a", {"min.insync.replicas": "2", "retention.ms": "5"}), ("nope", {"x": "1"})],
        False, 0)  # fmt: skip
    assert [r.error for r in results] == [Errors.NONE, Errors.UNKNOWN_TOPIC_OR_PARTITION]
    assert records == [TopicConfig(str(cluster.image.topics["a"].topic_id), "retention.ms", "5")]
    cluster.controller.alter_topic_configs([("a", {"min.insync.replicas": None})], False, 0)
    assert dict(cluster.image.topics["a"].configs) == {"retention.ms": "5"}


def test_dynamic_broker_configs_are_records_replayed_and_snapshotted(cluster) -> None:
    from broker_app.metadata.records import BrokerConfig
    from broker_app.metadata.snapshot import decode_snapshot, encode_snapshot

    records = cluster.controller.alter_broker_configs("1", {"min.insync.replicas": "2"}, False, 0)
    assert records == [BrokerConfig("1", "min.insync.replicas", "2")]
    assert cluster.controller.alter_broker_configs("1", {"min.insync.replicas": "2"}, False,
                                                   0) == []  # no change, no record
    cluster.controller.alter_broker_configs("", {"unclean.leader.election.enable": "true"},
                                            False, 0)
    image = cluster.image
    assert image.broker_config(1, "min.insync.replicas") == "2"
    assert image.broker_config(2, "min.insync.replicas") is None
    assert image.broker_config(2, "unclean.leader.election.enable") == "true"
    # replayed from the log by a restarted controller, and kept by a snapshot
    assert QuorumController(cluster.controller.config, cluster.log).image.broker_configs == \
        image.broker_configs
    assert decode_snapshot(encode_snapshot(image), image.offset + 1).broker_configs == \
        image.broker_configs
    cluster.controller.alter_broker_configs("1", {"min.insync.replicas": None}, False, 0)
    assert cluster.image.broker_config(1, "min.insync.replicas") is None
    assert "1" not in cluster.image.broker_configs


def test_group_configs_are_records_replayed_and_snapshotted(cluster) -> None:
    """KIP-848 group configs: GroupConfig records, replayed by a restarted controller and kept
    by a snapshot; an image with none keeps the digest it had before they existed."""
    from broker_app.metadata.records import GroupConfig
    from broker_app.metadata.snapshot import decode_snapshot, encode_snapshot

    digest = cluster.image.digest()
    records = cluster.controller.alter_group_configs(
        "g", {"consumer.session.timeout.ms": "50000"}, False, 0)
    assert records == [GroupConfig("g", "consumer.session.timeout.ms", "50000")]
    assert cluster.controller.alter_group_configs(
        "g", {"consumer.session.timeout.ms": "50000"}, False, 0) == []  # no change, no record
    image = cluster.image
    assert image.group_configs == {"g": {"consumer.session.timeout.ms": "50000"}}
    assert image.digest() != digest
    assert QuorumController(cluster.controller.config, cluster.log).image.group_configs == \
        image.group_configs
    assert decode_snapshot(encode_snapshot(image), image.offset + 1).group_configs == \
        image.group_configs
    cluster.controller.alter_group_configs("g", {"consumer.session.timeout.ms": None}, False, 0)
    assert cluster.image.group_configs == {} and cluster.image.digest() == digest


def test_dynamic_cluster_default_of_unclean_election(cluster) -> None:
    cluster.create("a")
    c = cluster.controller
    assert not c._unclean(c.image.topics["a"])
    c.alter_broker_configs("", {"unclean.leader.election.enable": "true"}, False, 0)
    assert c._unclean(c.image.topics["a"])
    c.alter_topic_configs([("a", {"unclean.leader.election.enable": "false"})], False, 0)
    assert not c._unclean(c.image.topics["a"])  # the topic's own setting wins
