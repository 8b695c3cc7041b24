"""Assemble one night: run records + Spark metrics + previous nights -> summary.json's data.

Contract:
- `build_summary(date, records, metrics, previous, ...)` returns the summary.json mapping:
  `runs` (one per planned run: record + verdict + metrics + `replay` command for failures),
  `plans` (one per suite label: verdict, counts of runs/skipped, metrics), `trend`
  (previous nights' plan rows plus tonight's), `failed` (labels), `exit_code`.
- Run verdict: "skipped" (not run); a scenario record's own `verdict` (reproduced / nothing
  lost, harness.nightly.launcher) when it has one; "error" (exit 2, or no results.json); else
  results.json's. The nightly decides nothing itself: both come from
  harness.checker.expectations.judge (the checker's, and the scenario runner's with its mode).
  Plan verdict: error > unexpected > as-expected > skipped (the worst of its runs).
- `load_previous(nightly_dir, date, keep)` reads the `keep` latest `<date>/summary.json` strictly
  before `date`; an unreadable one is reported in `warnings`, never fatal.
- Exit code: 1 when any run is unexpected or errored, else 0.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from harness.checker.expectations import AS_EXPECTED, UNEXPECTED
from harness.nightly.schedule import SKIPPED, RunRecord

SUMMARY_JSON, SUMMARY_HTML, JUNIT_XML = "summary.json", "summary.html", "junit.xml"
ERROR, SKIP = "error", "skipped"
_RANK = {ERROR: 3, UNEXPECTED: 2, AS_EXPECTED: 1, SKIP: 0}
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
FORMAT = 1


def run_verdict(record: RunRecord, results_verdict: str | None) -> str:
    if record.status == SKIPPED:
        return SKIP
    if record.verdict is not None:  # the scenario's own judgement, not the plain checker's
        return record.verdict
    if record.exit_code == 2 or results_verdict is None:
        return ERROR
    if record.exit_code == 1:
        # `highwater run` exits 1 on its run verdict (expectations.run_verdict: the history
        # and the run checks, liveness among them); results.json's `verdict`, which the
        # summary job reads, is the history's alone and must not hide a failed run check.
        return UNEXPECTED
    return results_verdict


def load_previous(nightly_dir: Path, date: str, keep: int = 30
                  ) -> tuple[list[dict[str, Any]], list[str]]:
    nights, warnings = [], []
    if not nightly_dir.is_dir():
        return nights, warnings
    for d in sorted(p for p in nightly_dir.iterdir() if _DATE.match(p.name) and p.name < date):
        path = d / SUMMARY_JSON
        if not path.is_file():
            continue
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            if not isinstance(data, dict) or not isinstance(data.get("plans"), dict):
                raise ValueError("no `plans` mapping")
        except (OSError, UnicodeDecodeError, ValueError) as e:
            warnings.append(f"{path}: ignored in the trend: {e}")
            continue
        nights.append({"date": data.get("date", d.name), "plans": data["plans"]})
    return nights[-keep:], warnings


def _trend_point(plan: Mapping[str, Any]) -> dict[str, Any]:
    return {k: plan.get(k) for k in ("verdict", "throughput", "anomalies_total", "latency_ms")}


def build_summary(
    date: str,
    records: Sequence[RunRecord],
    metrics: Mapping[str, Mapping[str, Any]],
    previous: Sequence[Mapping[str, Any]] = (),
    **facts: Any,
) -> dict[str, Any]:
    run_metrics = metrics.get("runs", {})
    plan_metrics = metrics.get("plans", {})
    runs: list[dict[str, Any]] = []
    for rec in records:
        m = dict(run_metrics.get(str(Path(rec.run_dir).resolve()), {})) if rec.run_dir else {}
        verdict = run_verdict(rec, m.pop("verdict", None))
        m.pop("label", None)
        row = {**rec.to_dict(), "verdict": verdict, **m}
        if verdict in (ERROR, UNEXPECTED) and rec.run_dir:
            row["replay"] = f"highwater run --replay {rec.run_dir}"
        runs.append(row)
    plans: dict[str, dict[str, Any]] = {}
    for row in runs:
        p = plans.setdefault(row["label"], {"label": row["label"], "kind": row["kind"],
                                            "plan": row["plan"], "mode": row["mode"],
                                            "verdict": SKIP, "runs": 0, "skipped": 0})
        p["runs" if row["status"] != SKIPPED else "skipped"] += 1
        if _RANK[row["verdict"]] > _RANK[p["verdict"]]:
            p["verdict"] = row["verdict"]
    for label, p in plans.items():
        m = plan_metrics.get(label)
        if m:
            p.update(m)
    failed = [label for label, p in plans.items() if p["verdict"] in (ERROR, UNEXPECTED)]
    nights = [*previous, {"date": date, "plans": plans}]
    labels = list(plans) + sorted({k for n in previous for k in n["plans"]} - set(plans))
    trend = {
        "nights": [n["date"] for n in nights],
        "plans": {lb: [_trend_point(n["plans"][lb]) if lb in n["plans"] else None
                       for n in nights] for lb in labels},
    }
    return {"format": FORMAT, "date": date, **facts, "runs": runs, "plans": plans,
            "trend": trend, "failed": failed, "exit_code": 1 if failed else 0}


def write_json(path: Path, data: Mapping[str, Any]) -> Path:
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=False) + "\n", encoding="utf-8")
    tmp.replace(path)
    return path
