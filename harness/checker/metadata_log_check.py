"""The controllers' committed metadata logs compared record by record (issue 13): a committed
record that differs or is missing on a voter is a metadata divergence.

Input: each controller's Raft log as collected after the run (`<run>/data/controller-<c>/`,
FileReplicatedLog's `__cluster_metadata-0/`) and `committed`: the highest offset the quorum
had committed, i.e. the largest `quorum.high_watermark` any controller reported at the end
(`committed_offsets`). Every record below it was acknowledged by a majority and may never
change or disappear on any voter (Raft's Log Matching and Leader Completeness).

Definition (`compare_logs(logs, committed)`):
- For each offset o < committed, the reference record is the (epoch, bytes) most voters
  holding o agree on (ties: the highest epoch, then the smallest bytes: order-independent).
- A voter whose log starts after o (a snapshot covers o, KIP-630) is not compared at o: the
  snapshot's content is the image the digest check (harness.checker.metadata_check) compares.
- A voter whose log ends at or before o is `missing` o; one holding another record is
  `differs` at o. Each (voter, offset) counts once.
Result: {"count", "committed", "by_voter": {node: {"missing", "differs"}}, "examples": up to
10 [node, offset, "missing"|"differs"], "unreadable": {node: why}}; a voter whose log cannot be
opened is listed under `unreadable` and not counted (it is reported, not guessed).
"""

from __future__ import annotations

import shutil
import tempfile
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

MAX_EXAMPLES = 10
Record = tuple[int, bytes]  # (epoch, record bytes)


class LogView:
    """One voter's log as offset -> (epoch, bytes) for [start, end)."""

    def __init__(self, start: int, end: int, records: Mapping[int, Record]) -> None:
        self.start, self.end, self.records = start, end, dict(records)


def read_log(data_dir: Path) -> LogView:
    """The Raft log in `data_dir` (a controller's collected data dir). Opened on a copy:
    opening recovers the log (cuts a torn tail), which must not change what was collected."""
    from broker_app.raft.file_log import METADATA_DIR, FileReplicatedLog

    with tempfile.TemporaryDirectory(prefix="hw-metalog-") as tmp:
        copy = Path(tmp) / "d"
        (copy).mkdir()
        source = Path(data_dir) / METADATA_DIR
        if not source.is_dir():
            raise FileNotFoundError(f"no {METADATA_DIR} in {data_dir}")
        shutil.copytree(source, copy / METADATA_DIR)
        log = FileReplicatedLog(copy)
        try:
            records: dict[int, Record] = {}
            offset = log.start_offset
            while offset < log.end_offset:
                batches = log.read(offset, 64)
                if not batches:
                    break
                for b in batches:
                    for i, value in enumerate(b.records):
                        records[b.base_offset + i] = (b.epoch, value)
                offset = batches[-1].next_offset
            return LogView(log.start_offset, log.end_offset, records)
        finally:
            log.close()


def compare_logs(logs: Mapping[str, LogView], committed: int) -> dict[str, Any]:
    by_voter = {n: {"missing": 0, "differs": 0} for n in logs}
    examples: list[list[Any]] = []
    for o in range(committed):
        held = {n: v.records.get(o) for n, v in logs.items() if v.start <= o}
        present = [r for r in held.values() if r is not None]
        if not present:
            continue
        counts = Counter(present)
        reference = max(sorted(counts, key=lambda r: (-r[0], r[1])), key=lambda r: counts[r])
        for n in sorted(held):
            r = held[n]
            kind = "missing" if r is None else "differs" if r != reference else None
            if kind is None:
                continue
            by_voter[n][kind] += 1
            if len(examples) < MAX_EXAMPLES:
                examples.append([n, o, kind])
    count = sum(v["missing"] + v["differs"] for v in by_voter.values())
    return {"count": count, "committed": committed, "by_voter": by_voter, "examples": examples,
            "unreadable": {}}


def committed_offsets(answers: Mapping[str, Mapping[str, Any] | None]) -> int:
    """The quorum's committed offset as the controllers last reported it: the largest Raft high
    watermark among their /state answers (0 when none reported one)."""
    hws = [(a.get("quorum") or {}).get("high_watermark") for a in answers.values() if a]
    return max((h for h in hws if isinstance(h, int)), default=0)


def check_collected(data_root: Path, controllers: list[str], committed: int) -> dict[str, Any]:
    """compare_logs over each named controller's collected data dir: `<data_root>/<controller>/
    data/` (as Cluster.collect_data writes it) or `<data_root>/<controller>/`."""
    from broker_app.raft.file_log import METADATA_DIR

    logs: dict[str, LogView] = {}
    unreadable: dict[str, str] = {}
    for n in controllers:
        # Cluster.collect_data keeps the data dir's own name: <root>/<node>/data/...
        found = [d for d in (data_root / n / "data", data_root / n) if (d / METADATA_DIR).is_dir()]
        try:
            logs[n] = read_log(found[0] if found else data_root / n)
        except (OSError, ValueError) as exc:
            unreadable[n] = f"{type(exc).__name__}: {exc}"
    result = compare_logs(logs, committed)
    result["unreadable"] = unreadable
    return result


def wait_for_caught_up(endpoints: Mapping[str, str], timeout_s: float,
                       interval_s: float = 0.5) -> int:
    """Poll the controllers' /state until every one answers with the same Raft high watermark
    (the voters caught up), or timeout_s; returns the committed offset (committed_offsets)."""
    import time

    from harness.state_poller import fetch_state

    deadline = time.monotonic() + timeout_s
    while True:
        answers = {n: fetch_state(a, 2.0) for n, a in endpoints.items()}
        hws = {(a.get("quorum") or {}).get("high_watermark") if a else None
               for a in answers.values()}
        if (len(hws) == 1 and None not in hws) or time.monotonic() >= deadline:
            return committed_offsets(answers)
        time.sleep(interval_s)
