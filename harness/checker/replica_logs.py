"""The replicas' own logs, as a run collected them (data/<node>/...), compared offset by offset.

`replica_logs(run_dir, partition)` -> node -> {offset: value} from each replica's segments
(valid batches only: a torn tail is skipped, as recovery would). `diverged_offsets(logs)` ->
offset -> {node: value} where two replicas hold different values: replica divergence (L2)
that no client needs to have read. `partitions(run_dir)` names the partitions collected.
`run_divergence(run_dir)` is the run check `diverged-offsets` over every workload partition
(`divergence_check` gives the simulator's the same shape). Pure file reading; used by the
checker (results.json), the scenario story and the report.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

_PARTITION_DIR = re.compile(r"^(?!__)[A-Za-z0-9._-]+-\d+$")  # internal topics (__...) left out


def partitions(run_dir: Path) -> list[str]:
    data = run_dir / "data"
    if not data.is_dir():
        return []
    return sorted({p.parent.name for p in data.rglob("*.log")
                   if _PARTITION_DIR.match(p.parent.name)})


def replica_logs(run_dir: Path, partition: str = "t-0") -> dict[str, dict[int, str]]:
    """node -> {offset: value} from data/<node>/**/<partition>/*.log (valid batches only)."""
    out: dict[str, dict[int, str]] = {}
    data = run_dir / "data"
    if not data.is_dir():
        return out
    for node_dir in sorted(p for p in data.iterdir() if p.is_dir()):
        segments = [seg.read_bytes() for seg in sorted(node_dir.rglob(f"{partition}/*.log"))]
        log = values(valid_batches(segments))
        if log:
            out[node_dir.name] = log
    return out


def valid_batches(segments: list[bytes]) -> list[tuple[Any, memoryview]]:
    """(header, view) of every batch of the segment files' bytes, in order, that is whole,
    magic v2 and passes its CRC: a torn tail is skipped, as recovery would; what came before
    it is kept."""
    from broker_app.storage.errors import CorruptRecordError
    from broker_app.storage.records import compute_crc, iter_batches

    out: list[tuple[Any, memoryview]] = []
    for seg in segments:
        try:
            for h, view in iter_batches(seg, allow_partial_tail=True):
                if h.magic == 2 and compute_crc(view) == h.crc:
                    out.append((h, view))
        except CorruptRecordError:
            continue
    return out


def values(batches: list[tuple[Any, memoryview]]) -> dict[int, str]:
    """offset -> value (UTF-8, replacing what does not decode) of the batches' records."""
    from broker_app.storage.records import decode_records

    return {r.offset: "" if r.value is None else r.value.decode("utf-8", "replace")
            for _h, view in batches for r in decode_records(view)}  # fmt: skip


def diverged_offsets(logs: dict[str, dict[int, str]]) -> dict[int, dict[str, str]]:
    """offset -> {node: value} for offsets held by 2+ replicas with different values."""
    offsets = set().union(*(set(v) for v in logs.values())) if logs else set()
    out: dict[int, dict[str, str]] = {}
    for o in sorted(offsets):
        held = {n: log[o] for n, log in logs.items() if o in log}
        if len(set(held.values())) > 1:
            out[o] = held
    return out


def divergence_check(diverged: dict[str, dict[int, dict[str, str]]]) -> dict[str, Any]:
    """The run check `diverged-offsets` (results.json, in the anomalies' shape) from
    partition -> diverged_offsets(...): offsets two replicas hold with different values."""
    by_partition = {p: len(offs) for p, offs in sorted(diverged.items()) if offs}
    examples = [f"{p}@{o}: " + ", ".join(f"{n}={v}" for n, v in sorted(held.items()))
                for p, offs in sorted(diverged.items()) for o, held in list(offs.items())[:3]]
    return {"count": sum(by_partition.values()), "by_partition": by_partition,
            "examples": examples[:10]}  # fmt: skip


def run_divergence(run_dir: Path) -> dict[str, Any] | None:
    """`diverged-offsets` of a container run from its collected data dirs, every workload
    partition; None when the run collected no data (nothing could be compared)."""
    names = partitions(run_dir)
    if not names:
        return None
    return divergence_check({p: diverged_offsets(replica_logs(run_dir, p)) for p in names})
