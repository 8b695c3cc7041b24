"""TopicPartition and the `<topic>-<partition>` directory naming Kafka uses."""

from __future__ import annotations

from typing import NamedTuple


class TopicPartition(NamedTuple):
    topic: str
    partition: int

    @property
    def dir_name(self) -> str:
        return f"{self.topic}-{self.partition}"

    def __str__(self) -> str:
        return self.dir_name

    @classmethod
    def parse_dir_name(cls, name: str) -> TopicPartition:
        """ "orders-3" -> ("orders", 3); topics may contain '-', the partition is after the last."""
        topic, sep, part = name.rpartition("-")
        if not sep or not topic or not part.isdigit():
            raise ValueError(f"log directory name {name!r} is not '<topic>-<partition>'")
        return cls(topic, int(part))
