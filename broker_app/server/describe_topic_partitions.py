"""DescribeTopicPartitions (API 75, KIP-966): leader, ISR and ELR of each partition, paged.

`describe(topics, wanted, limit, cursor)` is pure: `topics` maps each topic name to
(topic id, [partition dicts in Metadata's shape plus eligible_leader_replicas and
last_known_elr]); `wanted` is the requested names (empty: every topic, as Kafka's
`kafka-topics --describe` asks); partitions are listed in (topic name, partition) order from
the cursor on, at most `limit` (response_partition_limit) of them; when the limit cuts a
topic short, next_cursor names the first partition not returned (Kafka's paging). An unknown
topic gets UNKNOWN_TOPIC_OR_PARTITION; a cursor topic that is not requested is
INVALID_REQUEST for the whole answer, as in Kafka.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from broker_app.protocol.error_codes import Errors
from broker_app.server.api_common import TOPIC_OPERATIONS, image_partition_entry

Partitions = list[dict[str, Any]]


def describe(
    topics: Mapping[str, tuple[uuid.UUID, Partitions]],
    wanted: Sequence[str],
    limit: int,
    cursor: tuple[str, int] | None,
) -> dict[str, Any]:
    names = sorted(set(wanted)) if wanted else sorted(topics)
    if cursor is not None and cursor[0] not in names:
        return {"throttle_time": 0, "next_cursor": None, "topics": [{
            "error_code": Errors.INVALID_REQUEST, "name": cursor[0], "topic_id": uuid.UUID(int=0),
            "partitions": []}]}  # fmt: skip
    if cursor is not None:
        names = [n for n in names if n >= cursor[0]]
    budget = max(1, limit)
    out: list[dict[str, Any]] = []
    next_cursor = None
    for name in names:
        if name not in topics:
            out.append({"error_code": Errors.UNKNOWN_TOPIC_OR_PARTITION, "name": name,
                        "topic_id": uuid.UUID(int=0), "partitions": []})  # fmt: skip
            continue
        topic_id, parts = topics[name]
        first = cursor[1] if cursor is not None and name == cursor[0] else 0
        parts = [p for p in parts if p["partition_index"] >= first]
        if budget == 0:
            next_cursor = {"topic_name": name, "partition_index": first}
            break
        taken, rest = parts[:budget], parts[budget:]
        budget -= len(taken)
        out.append({"error_code": Errors.NONE, "name": name, "topic_id": topic_id,
                    "is_internal": False, "partitions": taken})  # fmt: skip
        if rest:
            next_cursor = {"topic_name": name, "partition_index": rest[0]["partition_index"]}
            break
    for t in out:  # KIP-430: always set here (the request has no flag), as in Kafka
        t["topic_authorized_operations"] = TOPIC_OPERATIONS
    return {"throttle_time": 0, "topics": out, "next_cursor": next_cursor}


def image_partitions(image: Any, topic: Any) -> Partitions:
    """The partitions of `topic` as committed in the metadata image, with the ELR fields."""
    return [
        {
            **image_partition_entry(image, idx, reg),
            "eligible_leader_replicas": list(reg.elr),
            "last_known_elr": list(reg.last_known_elr),
        }
        for idx, reg in sorted(topic.partitions.items())
    ]
