"""TopicStore: the single-node broker's topic metadata (name, id, partitions, configs).

Persisted as `highwater-topics.json` in the data dir so topics and their configs (notably
min.insync.replicas) survive a restart. Validation follows Kafka's CreateTopics rules and
returns Kafka error codes with a message naming the offending value. Sans-I/O apart from the
one JSON file. The controller will own this in a multi-node cluster.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from broker_app.protocol.error_codes import Errors

from .configs import ConfigError, validate_topic_configs
from .jsonstate import read_json, write_json_atomic

FILE_NAME = "highwater-topics.json"
_LEGAL_TOPIC = re.compile(r"^[a-zA-Z0-9._-]+$")
MAX_TOPIC_NAME = 249

class TopicError(Exception):
    def __init__(self, error_code: int, message: str) -> None:
        super().__init__(message)
        self.error_code = error_code


@dataclass
class TopicInfo:
    name: str
    topic_id: uuid.UUID
    num_partitions: int
    replication_factor: int
    configs: dict[str, str] = field(default_factory=dict)

    def min_insync_replicas(self, default: int) -> int:
        return int(self.configs.get("min.insync.replicas", default))


def validate_topic_name(name: str | None) -> None:
    if not name or name in (".", ".."):
        raise TopicError(Errors.INVALID_TOPIC_EXCEPTION, f"invalid topic name {name!r}")
    if len(name) > MAX_TOPIC_NAME:
        raise TopicError(
            Errors.INVALID_TOPIC_EXCEPTION,
            f"topic name of {len(name)} characters exceeds {MAX_TOPIC_NAME}",
        )
    if not _LEGAL_TOPIC.match(name):
        raise TopicError(
            Errors.INVALID_TOPIC_EXCEPTION,
            f"topic name {name!r} has characters outside [a-zA-Z0-9._-]",
        )


def validate_configs(configs: dict[str, str | None]) -> dict[str, str]:
    """CreateTopics' configs checked against the one catalogue (server/configs.py)."""
    try:
        return validate_topic_configs(configs)
    except ConfigError as e:
        raise TopicError(e.error_code, str(e)) from None


class TopicStore:
    def __init__(self, data_dir: Path) -> None:
        self.path = data_dir / FILE_NAME
        self.topics: dict[str, TopicInfo] = {}
        self.by_id: dict[uuid.UUID, TopicInfo] = {}
        for name, t in read_json(self.path, {}).items():
            info = TopicInfo(
                name=name,
                topic_id=uuid.UUID(t["topic_id"]),
                num_partitions=int(t["num_partitions"]),
                replication_factor=int(t["replication_factor"]),
                configs=dict(t.get("configs", {})),
            )
            self.topics[name] = info
            self.by_id[info.topic_id] = info

    def get(self, name: str) -> TopicInfo | None:
        return self.topics.get(name)

    def check_new(
        self, name: str, num_partitions: int, replication_factor: int, configs: dict
    ) -> dict[str, str]:
        """Validate a CreateTopics entry (rf already resolved); returns the cleaned configs."""
        validate_topic_name(name)
        if name in self.topics:
            raise TopicError(Errors.TOPIC_ALREADY_EXISTS, f"topic {name!r} already exists")
        if num_partitions < 1:
            raise TopicError(
                Errors.INVALID_PARTITIONS, f"num_partitions must be >= 1, got {num_partitions}"
            )
        if replication_factor != 1:
            raise TopicError(
                Errors.INVALID_REPLICATION_FACTOR,
                f"replication factor {replication_factor} is larger than the 1 available broker"
                if replication_factor > 1
                else f"replication factor must be >= 1, got {replication_factor}",
            )
        return validate_configs(configs)

    def create(
        self, name: str, num_partitions: int, replication_factor: int, configs: dict[str, str]
    ) -> TopicInfo:
        info = TopicInfo(name, uuid.uuid4(), num_partitions, replication_factor, dict(configs))
        self.topics[name] = info
        self.by_id[info.topic_id] = info
        self._save()
        return info

    def delete(self, name: str) -> TopicInfo:
        info = self.topics.pop(name)
        self.by_id.pop(info.topic_id, None)
        self._save()
        return info

    def add_partitions(self, name: str, count: int) -> None:
        self.topics[name].num_partitions = count
        self._save()

    def alter_configs(self, name: str, changes: dict[str, str | None]) -> None:
        """Apply validated changes (None deletes a setting) to a topic's configs."""
        configs = self.topics[name].configs
        for k, v in changes.items():
            if v is None:
                configs.pop(k, None)
            else:
                configs[k] = v
        self._save()

    def _save(self) -> None:
        write_json_atomic(
            self.path,
            {
                t.name: {
                    "topic_id": str(t.topic_id),
                    "num_partitions": t.num_partitions,
                    "replication_factor": t.replication_factor,
                    "configs": t.configs,
                }
                for t in self.topics.values()
            },
        )
