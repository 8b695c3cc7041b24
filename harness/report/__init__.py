"""The run report: `report.html`, self-contained and readable offline (inline SVG, no CDN).

`write_report(run_dir)` reads the run dir (plan.yaml, run.json, results.json, history.jsonl,
states.jsonl — see harness.report.states for the broker-state sample format) and writes
`report.html` there; it returns the path. Missing or malformed inputs never stop the report:
they are listed in its Warnings section. `highwater report RUN_DIR` regenerates it.
"""

from __future__ import annotations

from pathlib import Path

from harness.store import REPORT_FILE


def write_report(run_dir: str | Path, output: str | Path | None = None) -> Path:
    from harness.report.data import load_run
    from harness.report.page import render

    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise FileNotFoundError(f"{run_dir}: not a run directory")
    out = Path(output) if output else run_dir / REPORT_FILE
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(render(load_run(run_dir)), encoding="utf-8")
    tmp.replace(out)  # a reader never sees half a report
    return out
