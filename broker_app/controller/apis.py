"""The controller's API table and request decoding (the broker's table is protocol/apis.py).

Reuses the project codec (kio schemas, header handling, encode_response); only the table of
advertised (api, version) ranges differs, so decoding checks CONTROLLER_APIS instead of the
broker's SUPPORTED_APIS. Ranges: what kio ships and this controller handles; Fetch and Metadata
stop where the broker's do (topic ids from Fetch 13), AlterPartition starts at 2 (topic ids,
the only versions kio ships).
"""

from __future__ import annotations

from enum import IntEnum

from broker_app.protocol.apis import VersionRange
from broker_app.protocol.codec import Request, decode_request


class ControllerApiKey(IntEnum):
    FETCH = 1
    METADATA = 3
    API_VERSIONS = 18
    CREATE_TOPICS = 19
    DELETE_TOPICS = 20
    ALTER_CONFIGS = 33
    CREATE_PARTITIONS = 37
    ELECT_LEADERS = 43
    INCREMENTAL_ALTER_CONFIGS = 44
    ALTER_PARTITION_REASSIGNMENTS = 45
    ALTER_PARTITION = 56
    FETCH_SNAPSHOT = 59
    BROKER_REGISTRATION = 62
    BROKER_HEARTBEAT = 63


CONTROLLER_APIS: dict[int, VersionRange] = {
    ControllerApiKey.FETCH: VersionRange(4, 12),
    ControllerApiKey.METADATA: VersionRange(0, 12),
    ControllerApiKey.API_VERSIONS: VersionRange(0, 3),
    ControllerApiKey.CREATE_TOPICS: VersionRange(2, 7),
    ControllerApiKey.ELECT_LEADERS: VersionRange(0, 2),
    # topic admin (topic_admin_apis.py): Kafka 4.x's ranges
    ControllerApiKey.DELETE_TOPICS: VersionRange(1, 6),
    ControllerApiKey.ALTER_CONFIGS: VersionRange(0, 2),
    ControllerApiKey.CREATE_PARTITIONS: VersionRange(0, 3),
    ControllerApiKey.INCREMENTAL_ALTER_CONFIGS: VersionRange(0, 1),
    ControllerApiKey.ALTER_PARTITION_REASSIGNMENTS: VersionRange(0, 0),
    ControllerApiKey.ALTER_PARTITION: VersionRange(2, 3),
    ControllerApiKey.FETCH_SNAPSHOT: VersionRange(0, 0),  # KIP-630: brokers below the log start
    ControllerApiKey.BROKER_REGISTRATION: VersionRange(0, 4),
    ControllerApiKey.BROKER_HEARTBEAT: VersionRange(0, 1),
}


def decode_controller_request(
    frame: bytes, apis: dict[int, VersionRange] | None = None
) -> Request:
    """codec.decode_request against CONTROLLER_APIS (or `apis`: a quorum controller adds the
    Raft APIs). Raises ProtocolError subclasses."""
    return decode_request(frame, CONTROLLER_APIS if apis is None else apis)
