"""The one table of APIs this broker implements, with the version ranges it advertises.

Advertise only what is implemented and tested (tests/unit/protocol/test_all_versions.py runs every
(api, version) pair below through the handlers and the codec). Lower bounds are kio's lowest
schema version where the clients (librdkafka 2.x, kafka-python 3.x) never go below; upper bounds
stop before versions that switch to topic ids (Fetch 13+, Produce 13+) or batched group
requests (OffsetFetch 8+, FindCoordinator 4+ use arrays of keys/groups; not needed by clients here).

ADVERTISED_APIS is what ApiVersions answers: SUPPORTED_APIS except that Produce is listed from v0,
as Kafka 4.x does (ApiKeys.PRODUCE_API_VERSIONS_RESPONSE_MIN_VERSION, KAFKA-18659): librdkafka
before 2.10 (kcat, Debian's librdkafka 2.0) only compresses when the broker lists Produce v0.
Like Kafka 4.x, a Produce v0-v2 request itself is still rejected (KIP-896 removed those versions
and message formats v0/v1): the codec raises UnsupportedRequest and the edge closes the connection.
"""

from __future__ import annotations

from enum import IntEnum
from typing import NamedTuple


class ApiKey(IntEnum):
    PRODUCE = 0
    FETCH = 1
    LIST_OFFSETS = 2
    METADATA = 3
    OFFSET_COMMIT = 8
    OFFSET_FETCH = 9
    FIND_COORDINATOR = 10
    JOIN_GROUP = 11
    HEARTBEAT = 12
    LEAVE_GROUP = 13
    SYNC_GROUP = 14
    DESCRIBE_GROUPS = 15
    LIST_GROUPS = 16
    API_VERSIONS = 18
    CREATE_TOPICS = 19
    DELETE_TOPICS = 20
    DELETE_RECORDS = 21
    INIT_PRODUCER_ID = 22
    OFFSET_FOR_LEADER_EPOCH = 23
    DESCRIBE_CONFIGS = 32
    ALTER_CONFIGS = 33
    DESCRIBE_LOG_DIRS = 35
    CREATE_PARTITIONS = 37
    DELETE_GROUPS = 42
    ELECT_LEADERS = 43
    INCREMENTAL_ALTER_CONFIGS = 44
    ALTER_PARTITION_REASSIGNMENTS = 45
    LIST_PARTITION_REASSIGNMENTS = 46
    OFFSET_DELETE = 47
    DESCRIBE_CLUSTER = 60
    DESCRIBE_TOPIC_PARTITIONS = 75


class VersionRange(NamedTuple):
    min_version: int
    max_version: int

    def __contains__(self, version: object) -> bool:  # type: ignore[override]
        return isinstance(version, int) and self.min_version <= version <= self.max_version


SUPPORTED_APIS: dict[int, VersionRange] = {
    ApiKey.PRODUCE: VersionRange(3, 9),
    ApiKey.FETCH: VersionRange(4, 15),
    ApiKey.LIST_OFFSETS: VersionRange(1, 7),
    ApiKey.METADATA: VersionRange(0, 12),
    ApiKey.OFFSET_COMMIT: VersionRange(2, 8),
    ApiKey.OFFSET_FETCH: VersionRange(1, 7),
    ApiKey.FIND_COORDINATOR: VersionRange(0, 3),
    ApiKey.API_VERSIONS: VersionRange(0, 3),
    ApiKey.CREATE_TOPICS: VersionRange(2, 7),
    ApiKey.INIT_PRODUCER_ID: VersionRange(0, 4),
    ApiKey.OFFSET_FOR_LEADER_EPOCH: VersionRange(2, 4),
    ApiKey.ELECT_LEADERS: VersionRange(0, 2),  # forwarded to the controller
    ApiKey.DESCRIBE_TOPIC_PARTITIONS: VersionRange(0, 0),  # KIP-966: ISR and ELR
    # the group coordinator (server/group_apis.py); lower bounds are Kafka 4.x's
    ApiKey.JOIN_GROUP: VersionRange(0, 9),
    ApiKey.HEARTBEAT: VersionRange(0, 4),
    ApiKey.LEAVE_GROUP: VersionRange(0, 5),
    ApiKey.SYNC_GROUP: VersionRange(0, 5),
    ApiKey.DESCRIBE_GROUPS: VersionRange(0, 5),
    ApiKey.LIST_GROUPS: VersionRange(0, 5),
    ApiKey.DELETE_GROUPS: VersionRange(0, 2),
    ApiKey.OFFSET_DELETE: VersionRange(0, 0),  # KIP-496
    # admin (server/admin_apis.py)
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: VersionRange(0, 0),  # forwarded to the controller
    ApiKey.LIST_PARTITION_REASSIGNMENTS: VersionRange(0, 0),
    ApiKey.DESCRIBE_CLUSTER: VersionRange(0, 1),
    # topic admin (server/topic_admin_apis.py; forwarded to the controller in a cluster) and
    # log admin (server/admin_apis.py): Kafka 4.x's ranges
    ApiKey.DELETE_TOPICS: VersionRange(1, 6),
    ApiKey.CREATE_PARTITIONS: VersionRange(0, 3),
    ApiKey.DESCRIBE_CONFIGS: VersionRange(1, 4),
    ApiKey.ALTER_CONFIGS: VersionRange(0, 2),
    ApiKey.INCREMENTAL_ALTER_CONFIGS: VersionRange(0, 1),
    ApiKey.DELETE_RECORDS: VersionRange(0, 2),
    ApiKey.DESCRIBE_LOG_DIRS: VersionRange(1, 4),
}


PRODUCE_API_VERSIONS_RESPONSE_MIN_VERSION = 0

ADVERTISED_APIS: dict[int, VersionRange] = {
    **SUPPORTED_APIS,
    ApiKey.PRODUCE: VersionRange(
        PRODUCE_API_VERSIONS_RESPONSE_MIN_VERSION, SUPPORTED_APIS[ApiKey.PRODUCE].max_version
    ),
}


# KIP-320 (Kafka 2.1) gave clients leader epochs: Metadata v7 (each partition's leader epoch),
# Fetch v9 and ListOffsets v4 (current_leader_epoch), OffsetCommit v6 and OffsetFetch v5 (a
# committed offset's epoch), and OffsetForLeaderEpoch v2 for clients (v0-v1 served replicas
# only). The versions before those, advertised by a broker emulating Kafka 2.0 or older
# (`client-leader-epochs` false): a client then learns no leader epoch and cannot validate its
# position after a leader change (KIP-320's consumer side, catalog 9, L22).
# Fetch keeps today's range: its current_leader_epoch comes from Metadata, so without v7 a
# client sends -1 anyway, and the harness reads followers through it (KIP-392, Fetch v11+:
# L2 observes each replica's log that way, whatever version the plan emulates).
PRE_KIP_320_MAX_VERSIONS: dict[int, int] = {
    ApiKey.METADATA: 6, ApiKey.LIST_OFFSETS: 3, ApiKey.OFFSET_COMMIT: 5,
    ApiKey.OFFSET_FETCH: 4,
}


def advertised_apis(client_leader_epochs: bool = True) -> dict[int, VersionRange]:
    """What ApiVersions answers: ADVERTISED_APIS, or without KIP-320's client versions.
    Only the advertisement changes: a request of a higher version is still served (this
    broker's own replicas and tools send fixed versions without asking)."""
    if client_leader_epochs:
        return ADVERTISED_APIS
    out = {k: VersionRange(r.min_version, min(r.max_version, PRE_KIP_320_MAX_VERSIONS[k]))
           if k in PRE_KIP_320_MAX_VERSIONS else r for k, r in ADVERTISED_APIS.items()}
    del out[ApiKey.OFFSET_FOR_LEADER_EPOCH]
    return out


def is_supported(api_key: int, api_version: int) -> bool:
    vr = SUPPORTED_APIS.get(api_key)
    return vr is not None and api_version in vr
