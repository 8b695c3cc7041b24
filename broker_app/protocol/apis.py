"""The one table of APIs this broker implements, with the version ranges it advertises.

Advertise only what is implemented and tested (tests/unit/protocol/test_all_versions.py runs every
(api, version) pair below through the handlers and the codec). Lower bounds are kio's lowest
schema version where the clients (librdkafka 2.x, kafka-python 3.x) never go below; upper bounds
stop before versions that switch to topic ids (Fetch 13+, Produce 13+) or batched group
requests (OffsetFetch 8+, FindCoordinator 4+ use arrays of keys/groups; not needed by clients here).
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
    API_VERSIONS = 18
    CREATE_TOPICS = 19
    INIT_PRODUCER_ID = 22
    OFFSET_FOR_LEADER_EPOCH = 23
    ELECT_LEADERS = 43


class VersionRange(NamedTuple):
    min_version: int
    max_version: int

    def __contains__(self, version: object) -> bool:  # type: ignore[override]
        return isinstance(version, int) and self.min_version <= version <= self.max_version


SUPPORTED_APIS: dict[int, VersionRange] = {
    ApiKey.PRODUCE: VersionRange(3, 9),
    ApiKey.FETCH: VersionRange(4, 12),
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
}


def is_supported(api_key: int, api_version: int) -> bool:
    vr = SUPPORTED_APIS.get(api_key)
    return vr is not None and api_version in vr
