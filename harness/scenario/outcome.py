"""Did one run of a scenario show what its mode says it must? And the story of that run.

Contract (pure, no docker): `judge(mode, results)` -> Outcome. A run *reproduced* its mode when
the checker's verdict is as-expected (the mode's `expected` became the plan's) and every
`lost_by_acks` expectation holds on results.json stats. A run that could not be carried out
(no results) never counts as reproduced. `story(run_dir)` renders the fault timeline and the
lost / divergent messages with their offsets from history.jsonl, results.json and run.json.
Modes with `diverged_offsets` are judged on the replicas' own logs (harness.replica_logs): the
divergence of L2, visible on disk even when no client reads both replicas.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.plan.model import ModeSpec
from harness.replica_logs import diverged_offsets, replica_logs

# The anomalies a scenario story prints messages for, in this order.
STORY_ANOMALIES = ("lost-write", "inconsistent-offset", "uncommitted-read")


@dataclass(frozen=True)
class Outcome:
    reproduced: bool
    carried_out: bool
    counts: dict[str, int] = field(default_factory=dict)  # non-zero anomalies
    lost_by_acks: dict[str, int] = field(default_factory=dict)
    why: str = ""


def judge(mode: ModeSpec, results: dict[str, Any] | None,
          run_dir: Path | None = None) -> Outcome:
    if results is None:
        return Outcome(False, False, why="the run could not be carried out (no results.json)")
    counts = {k: int(v["count"]) for k, v in results.get("anomalies", {}).items() if v["count"]}
    lost = {str(k): int(v) for k, v in results.get("stats", {}).get("lost_by_acks", {}).items()}
    misses = []
    if results.get("verdict") != "as-expected":
        expected = results.get("expected", {})
        misses += [f"{a} {e} (got {counts.get(a, 0)})" for a, e in expected.items()]
    for acks, exp in mode.lost_by_acks.items():
        if not exp.matches(lost.get(acks, 0)):
            misses.append(f"lost acks={acks} {exp} (got {lost.get(acks, 0)})")
    if mode.diverged_offsets is not None:
        n = len(diverged_offsets(replica_logs(run_dir))) if run_dir is not None else 0
        counts["diverged-offsets"] = n
        if not mode.diverged_offsets.matches(n):
            misses.append(f"diverged offsets on disk {mode.diverged_offsets} (got {n})")
    why = "as expected" if not misses else "expected " + "; ".join(misses)
    return Outcome(not misses, True, counts, lost, why)


def _read_jsonl(path: Path) -> dict[int, dict[str, Any]]:
    out: dict[int, dict[str, Any]] = {}
    if path.is_file():
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                op = json.loads(line)
                out[int(op.get("index", len(out)))] = op
    return out


def _describe_op(op: dict[str, Any] | None) -> str:
    if op is None:
        return "?"
    if op.get("f") == "send":
        where = f"{op.get('topic')}-{op.get('partition')}"
        off = f"@{op['offset']}" if "offset" in op else ""
        return f"send {op.get('value')} acks={op.get('acks')} {op.get('type')} {where}{off}"
    if op.get("f") == "poll":
        recs = op.get("records") or []
        shown = ", ".join(f"{r['value']}@{r['offset']}" for r in recs[:4])
        more = f" (+{len(recs) - 4})" if len(recs) > 4 else ""
        final = " final" if op.get("final") else ""
        return f"poll{final} p{op.get('process')} [{shown}{more}]"
    return f"{op.get('f')} {op.get('type')}"


def story(run_dir: Path, examples: int = 5) -> str:
    """The fault timeline and up to `examples` messages per anomaly, one per line."""
    lines: list[str] = []
    meta_path, res_path = run_dir / "run.json", run_dir / "results.json"
    meta = json.loads(meta_path.read_text()) if meta_path.is_file() else {}
    lines.append("fault timeline:")
    for ev in meta.get("nemesis_events", []):
        lines.append(f"  {ev['elapsed_s']:7.1f}s {ev['kind']:<7} {ev['step']}: {ev['text']}")
    if not meta.get("nemesis_events"):
        reason = f": {meta['reason']}" if "reason" in meta else ""
        lines.append(f"  (no fault events recorded{reason})")
    if not res_path.is_file():
        return "\n".join(lines)
    results = json.loads(res_path.read_text())
    history = _read_jsonl(run_dir / "history.jsonl")
    for name in STORY_ANOMALIES:
        a = results.get("anomalies", {}).get(name, {})
        if not a.get("count"):
            continue
        lines.append(f"{name}: {a['count']} ({a.get('by_partition', {})}), e.g.:")
        for ex in a.get("examples", [])[:examples]:
            ids = ex if isinstance(ex, list) else [ex]
            lines.append("  " + " | ".join(_describe_op(history.get(int(i))) for i in ids))
    diverged = diverged_offsets(replica_logs(run_dir))
    if diverged:
        lines.append(f"replicas diverge on disk at {len(diverged)} offset(s), e.g.:")
        for o, held in list(diverged.items())[:examples]:
            lines.append(f"  offset {o}: " + ", ".join(f"{n}={v}" for n, v in held.items()))
    return "\n".join(lines)
