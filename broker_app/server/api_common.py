"""Request-handler pieces shared by the broker (KafkaApis) and the controller (ControllerApis).

Pure functions over kio requests and a metadata image, no I/O. Contract:
- respond(request, data) builds the response entity for the request's own api key and version;
- api_versions_response(request, apis) answers ApiVersions from an API table, in v0 with
  UNSUPPORTED_VERSION when the client asked for a version we do not speak (KIP-511);
- requested_topic_names / image_topic_metadata / metadata_topic_error turn a Metadata request
  and a MetadataImage into the response's topic entries, exactly as the metadata log has them;
- ms(value) turns a kio duration (timedelta or int) into non-negative milliseconds;
- authorized_operations(body_flag, OPERATIONS) is what Kafka without an authorizer reports to a
  request that asked for authorized operations (KIP-430): every operation the resource type
  supports (AclEntry.supportedOperations), else the INT32_MIN "not asked" sentinel;
- BrokerContext is what the broker's handler groups (KafkaApis, AdminApis, TopicAdminApis) may
  use of their broker: its config, ReplicaManager, cluster link and rng, not KafkaApis itself.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from broker_app.protocol.apis import ApiKey, VersionRange
from broker_app.protocol.codec import Request, response_class
from broker_app.protocol.entities import build
from broker_app.protocol.error_codes import Errors

if TYPE_CHECKING:
    from broker_app.config import BrokerConfig
    from broker_app.replication.replica_manager import ReplicaManager

@dataclass
class BrokerContext:
    """The narrow view a broker's request handlers get of their broker.

    `cluster` is the broker's link to the controller (server/cluster_link.py's ClusterLink; the
    simulator's SimBroker plays it there): `image` (the committed metadata it applied),
    `forward` / `forward_and_wait` / `forward_create_topics` (controller requests a client sent
    to this broker), `auto_create_topic`, `create_internal_topic`. `rng` is the handlers' one
    source of randomness (seeded in the simulator)."""

    config: BrokerConfig
    replica_manager: ReplicaManager
    cluster: Any
    rng: random.Random

    def unhosted_error(self, topic: str, partition: int, code: int) -> int:
        """Kafka's ReplicaManager.getPartitionOrError: a partition the cluster metadata has but
        this broker does not host is NOT_LEADER_OR_FOLLOWER (the client refreshes metadata and
        goes to the right broker); UNKNOWN_TOPIC_OR_PARTITION only when nobody has it."""
        if (
            code == Errors.UNKNOWN_TOPIC_OR_PARTITION
            and self.cluster.image.partition(topic, partition) is not None
        ):
            return Errors.NOT_LEADER_OR_FOLLOWER
        return code


# Kafka's AclOperation codes, and the operations each resource type supports.
_ACL_OPERATIONS = {"READ": 3, "WRITE": 4, "CREATE": 5, "DELETE": 6, "ALTER": 7, "DESCRIBE": 8,
                   "CLUSTER_ACTION": 9, "DESCRIBE_CONFIGS": 10, "ALTER_CONFIGS": 11,
                   "IDEMPOTENT_WRITE": 12}  # fmt: skip


def _operations(*names: str) -> int:
    return sum(1 << _ACL_OPERATIONS[n] for n in names)


TOPIC_OPERATIONS = _operations("READ", "WRITE", "CREATE", "DESCRIBE", "DELETE", "ALTER",
                               "DESCRIBE_CONFIGS", "ALTER_CONFIGS")
GROUP_OPERATIONS = _operations("READ", "DESCRIBE", "DELETE", "DESCRIBE_CONFIGS", "ALTER_CONFIGS")
CLUSTER_OPERATIONS = _operations("CREATE", "CLUSTER_ACTION", "DESCRIBE_CONFIGS", "ALTER_CONFIGS",
                                 "IDEMPOTENT_WRITE", "ALTER", "DESCRIBE")
OPERATIONS_NOT_ASKED = -(2**31)  # Kafka's INT32_MIN sentinel


def authorized_operations(asked: Any, operations: int) -> int:
    """`operations` when the request asked for them (a true flag), else the sentinel."""
    return operations if asked else OPERATIONS_NOT_ASKED


def ms(value: Any) -> int:
    """kio gives durations as timedelta; clients may send negative values (treated as 0)."""
    if value is None:
        return 0
    ms = int(value.total_seconds() * 1000) if hasattr(value, "total_seconds") else int(value)
    return max(ms, 0)


def respond(request: Request, data: dict[str, Any]) -> Any:
    return build(response_class(request.api_key, request.api_version), data)


def api_versions_response(request: Request, apis: Mapping[int, VersionRange]) -> Any:
    api_keys = [
        {"api_key": k, "min_version": vr.min_version, "max_version": vr.max_version}
        for k, vr in sorted(apis.items())
    ]
    if request.unsupported_api_versions:
        # KIP-511: answer in v0 (readable by every client), listing our ranges.
        return build(
            response_class(ApiKey.API_VERSIONS, 0),
            {"error_code": Errors.UNSUPPORTED_VERSION, "api_keys": api_keys},
        )
    return respond(request, {"error_code": Errors.NONE, "api_keys": api_keys, "throttle_time": 0})


def requested_topic_names(request: Request, image: Any) -> list[tuple[str | None, Any]]:
    """The topics a Metadata request asks about, as (name, requested id) pairs (all topics
    for null, or empty at v0); an id is resolved through the image, and the name is None
    where neither name nor id is known (answered UNKNOWN_TOPIC_ID: unknown_topic_entry)."""
    requested = request.body.topics
    if requested is None or (request.api_version == 0 and not requested):
        return [(name, None) for name in sorted(image.topics)]
    names: list[tuple[str | None, Any]] = []
    for t in requested:
        name, topic_id = t.name, getattr(t, "topic_id", None)
        if name is None and topic_id is not None:
            found = image.topic_by_id(topic_id)
            name = found.name if found else None
        names.append((name, topic_id))
    return names


def unknown_topic_entry(name: str | None, topic_id: Any) -> dict[str, Any]:
    """A Metadata topic the image does not have: by name UNKNOWN_TOPIC_OR_PARTITION; named
    by no name and an unknown (or the zero) id UNKNOWN_TOPIC_ID, as Kafka's KafkaApis."""
    if name is None:
        return metadata_topic_error(None, topic_id, Errors.UNKNOWN_TOPIC_ID)
    return metadata_topic_error(name, None, Errors.UNKNOWN_TOPIC_OR_PARTITION)


def image_partition_entry(image: Any, idx: int, reg: Any) -> dict[str, Any]:
    """One partition as Metadata (and DescribeTopicPartitions) shows it, from the image;
    offline replicas are fenced ones."""
    return {
        "error_code": Errors.NONE if reg.has_leader else Errors.LEADER_NOT_AVAILABLE,
        "partition_index": idx,
        "leader_id": reg.leader,
        "leader_epoch": reg.leader_epoch,
        "replica_nodes": list(reg.replicas),
        "isr_nodes": list(reg.isr),
        "offline_replicas": [r for r in reg.replicas if not image.is_live(r)],
    }


def image_topic_metadata(image: Any, topic: Any) -> dict[str, Any]:
    """A Metadata topic entry as committed in the image."""
    partitions = [image_partition_entry(image, idx, reg)
                  for idx, reg in sorted(topic.partitions.items())]
    return {
        "error_code": Errors.NONE,
        "name": topic.name,
        "topic_id": topic.topic_id,
        "is_internal": topic.name == "__consumer_offsets",  # Kafka's Topic.isInternal
        "partitions": partitions,
    }


def metadata_topic_error(name: str | None, topic_id: Any, code: int) -> dict[str, Any]:
    return {
        "error_code": code,
        "name": name if name is not None else "",
        "topic_id": topic_id or uuid.UUID(int=0),
        "partitions": [],
    }
