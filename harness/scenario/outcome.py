"""Did one run of a scenario show what its mode says it must? And the story of that run.

Contract (pure, no docker): `judge(mode, results)` -> Outcome. A run *reproduced* its mode when
harness.checker.expectations.judge (the one verdict function) says as-expected on results.json's
anomaly counts and `expected` (the mode's `expected` became the plan's) together with the mode's
`lost_by_acks` on results.json stats and the run checks it carries (`metadata-divergence`,
`unconverged-replicas`, `diverged-offsets`, ...). A run that could not be carried out
(no results) never counts as reproduced. `story(run_dir)` renders the fault timeline and the
lost / divergent messages with their offsets from history.jsonl, results.json and run.json.
A mode's `diverged_offsets` is its `diverged-offsets` expectation, judged on the replicas' own
logs (harness.checker.replica_logs, results.json's run check; computed here for a run stored before
results.json carried it): the divergence of L2, visible on disk when no client reads both.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.checker.expectations import (
    AS_EXPECTED,
    DIVERGED_OFFSETS,
    parse_expected,
    run_check_counts,
)
from harness.checker.expectations import judge as judge_run
from harness.checker.replica_logs import diverged_offsets, replica_logs, run_divergence
from harness.plan.model import ModeSpec
from harness.store.history import HISTORY_FILE, read_history
from harness.store.meta import read_meta
from harness.store.results import read_results
from harness.store.states import STATES_FILE

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
    checks = run_check_counts(results)
    if DIVERGED_OFFSETS not in checks and mode.diverged_offsets is not None \
            and run_dir is not None:  # a run stored before results.json carried the check
        found = run_divergence(run_dir)
        if found is not None:
            checks[DIVERGED_OFFSETS] = found["count"]
    if DIVERGED_OFFSETS in checks:
        counts[DIVERGED_OFFSETS] = checks[DIVERGED_OFFSETS]
    # The one verdict function, on the expectations results.json recorded (the mode's, since
    # the mode's `expected` became the plan's, its diverged_offsets among them) plus the
    # mode's own lost_by_acks.
    expected = parse_expected(results.get("expected") or {}, "results.json expected")
    if mode.diverged_offsets is not None and all(e.anomaly != DIVERGED_OFFSETS
                                                 for e in expected):  # fmt: skip
        expected.append(mode.diverged_offsets)
    j = judge_run(bool(results.get("valid")), counts, expected,
                  lost_by_acks=lost, lost_expectations=mode.lost_by_acks, run_checks=checks)
    why = "as expected" if not j.misses else "expected " + "; ".join(j.misses)
    return Outcome(j.verdict == AS_EXPECTED, True, counts, lost, why)


def _read_ops(path: Path, wanted: set[int]) -> dict[int, dict[str, Any]]:
    """The history ops whose index is in `wanted`, streaming the file: a 10^7-op history is
    read line by line and only the few ops a story names are parsed and kept."""
    out: dict[int, dict[str, Any]] = {}
    if not path.is_file() or not wanted:
        return out
    # Lines are written in index order (HISTORY.md), so line n holds index n-1; parse only
    # those lines and trust the parsed index over the position.
    for line in read_history(path, lines={i + 1 for i in wanted}):
        if line.op is None:
            continue
        out[int(line.op.get("index", line.lineno - 1))] = line.op
        if len(out) == len(wanted):
            break
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


def _leaders(run_dir: Path) -> list:
    from harness.report.data import isr_elr_changes
    from harness.store.states import read_states

    samples, _ = read_states(run_dir / STATES_FILE)
    by_partition: dict[str, list] = {}
    for s in samples:
        by_partition.setdefault(s.name, []).append(s)
    return [c for _, ss in sorted(by_partition.items()) for c in isr_elr_changes(ss)]


def story(run_dir: Path, examples: int = 5) -> str:
    """The fault timeline and up to `examples` messages per anomaly, one per line."""
    lines: list[str] = []
    meta = read_meta(run_dir)
    lines.append("fault timeline:")
    for ev in meta.get("nemesis_events", []):
        lines.append(f"  {ev['elapsed_s']:7.1f}s {ev['kind']:<7} {ev['step']}: {ev['text']}")
    if not meta.get("nemesis_events"):
        reason = f": {meta['reason']}" if "reason" in meta else ""
        lines.append(f"  (no fault events recorded{reason})")
    changes = _leaders(run_dir)
    if changes:
        lines.append("leaders (ISR, ELR as the leader reported them):")
        lines += [f"  {t:7.1f}s b{node} epoch {epoch}: ISR {list(isr)} ELR {list(elr)}"
                  for t, node, epoch, isr, elr in changes[:20]]
    results = read_results(run_dir)
    if results is None:
        return "\n".join(lines)
    wanted = {
        int(i)
        for name in STORY_ANOMALIES
        for ex in results.get("anomalies", {}).get(name, {}).get("examples", [])[:examples]
        for i in (ex if isinstance(ex, list) else [ex])
    }
    history = _read_ops(run_dir / HISTORY_FILE, wanted)
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
