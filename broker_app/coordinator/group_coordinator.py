"""GroupCoordinator: committed offsets per (group, topic, partition).

Kept in memory and persisted to `highwater-group-offsets.json` in the data dir on every commit
(atomic rewrite; commit rates are low for the harness). No membership/generation checks: this
broker serves "simple" consumers (assign mode), whose commits Kafka accepts for a group with no
members. Sans-I/O apart from the JSON file.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from broker_app.server.jsonstate import read_json, write_json_atomic

FILE_NAME = "highwater-group-offsets.json"


@dataclass(frozen=True)
class OffsetAndMetadata:
    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp_ms: int


class GroupCoordinator:
    def __init__(self, data_dir: Path) -> None:
        self.path = data_dir / FILE_NAME
        self._offsets: dict[str, dict[tuple[str, int], OffsetAndMetadata]] = {}
        for group, entries in read_json(self.path, {}).items():
            self._offsets[group] = {
                (e["topic"], int(e["partition"])): OffsetAndMetadata(
                    int(e["offset"]), int(e["leader_epoch"]), e["metadata"], int(e["ts"])
                )
                for e in entries
            }

    def commit(self, group: str, offsets: dict[tuple[str, int], OffsetAndMetadata]) -> None:
        if not offsets:
            return
        self._offsets.setdefault(group, {}).update(offsets)
        self._save()

    def fetch(self, group: str, tp: tuple[str, int]) -> OffsetAndMetadata | None:
        return self._offsets.get(group, {}).get(tp)

    def committed_partitions(self, group: str) -> list[tuple[str, int]]:
        return sorted(self._offsets.get(group, {}))

    def _save(self) -> None:
        write_json_atomic(
            self.path,
            {
                group: [
                    {
                        "topic": t,
                        "partition": p,
                        "offset": o.offset,
                        "leader_epoch": o.leader_epoch,
                        "metadata": o.metadata,
                        "ts": o.commit_timestamp_ms,
                    }
                    for (t, p), o in sorted(entries.items())
                ]
                for group, entries in self._offsets.items()
            },
        )
