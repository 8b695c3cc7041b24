"""Carry out one planned run as a `highwater run` subprocess (a crash there never kills the night).

Contract: `Launcher(store, log_dir, ...)(run, remaining_s) -> RunRecord`.
- Plan entries run `python -m harness.cli run PLAN --seed S --store STORE [--duration D]
  [--set k=v ...] [--run-id PREFIX<index>]`; the console output goes to `log_dir/<nn>-<label>.log`.
  The run dir is the one `highwater run` prints ("run dir PATH"); if the line is missing the
  store is searched for the plan's new run dir. Exit codes are `highwater run`'s: 0, 1, 2.
- Scenario entries run `python -m harness.cli scenario run ID --mode M --repeat 1 --seed S
  --store STORE [--set k=v ...] [--run-id PREFIX<index>]`; the record's run dir is the one in
  the scenario's own summary (<store>/scenarios/<id>-<mode>-<ts>.json, printed as "summary
  PATH"), and its `verdict` is the scenario's: reproduced (legacy: the loss; fixed: nothing lost) ->
  as-expected, not reproduced -> unexpected (reason: the scenario's why), not carried out ->
  error.
- The min-isr entry runs `python -m harness.cli scenario min-isr --store STORE --min-isr M ...
  [--run-id PREFIX<index>]` (its clusters: PREFIX<index>-m<M>, or PREFIX<index> for one value);
  `run_dirs` are the matrix's runs (min-isr-<ts>.json), verdict by exit code: 0 as-expected,
  1 unexpected (an acks=all violation), 2 error.
- Entries whose command is not in harness.cli's COMMANDS are returned skipped with that reason.
- Hard limit: remaining budget + `overrun_s`; past it the run gets SIGINT (it removes its
  cluster on Ctrl-C), then SIGKILL after `kill_grace_s`; recorded as exit 2 with the reason.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from harness.nightly.schedule import RAN, PlannedRun, RunRecord, skipped
from harness.nightly.suite import MinIsrEntry, PlanEntry, RdkafkaSuiteEntry, ScenarioEntry
from harness.store import Store, safe_name

EXIT_ERROR = 2
_RUN_DIR = re.compile(r"run dir (\S.*)$", re.MULTILINE)
_SCENARIO_SUMMARY = re.compile(r"^summary (\S.*\.json)$", re.MULTILINE)
_MIN_ISR_TABLE = re.compile(r"^min-isr: table (\S.*)\.html and \.json$", re.MULTILINE)


def command_exists(name: str) -> bool:
    from harness.cli import COMMANDS

    return name in COMMANDS


class Launcher:
    def __init__(self, store: Path, log_dir: Path, overrun_s: float = 900.0,
                 kill_grace_s: float = 120.0, run_id_prefix: str | None = None,
                 python: str = sys.executable) -> None:
        self.store = Path(store)
        self.log_dir = Path(log_dir)
        self.overrun_s = overrun_s
        self.kill_grace_s = kill_grace_s
        self.run_id_prefix = run_id_prefix
        self.python = python

    def argv(self, run: PlannedRun) -> list[str]:
        e = run.entry
        cli = [self.python, "-m", "harness.cli"]
        if isinstance(e, ScenarioEntry):
            argv = [*cli, "scenario", "run", e.scenario_id, "--mode", e.mode, "--repeat", "1",
                    "--seed", str(run.seed), "--store", str(self.store)]
            for key, value in e.overrides.items():
                argv += ["--set", f"{key}={value}"]
        elif isinstance(e, RdkafkaSuiteEntry):
            argv = [*cli, "bench", "rdkafka-suite", "--out", str(self.store / "rdkafka-suite"),
                    "--timeout", f"{e.timeout_s:g}"]
            if e.tests:
                argv += ["--tests", e.tests]
            return argv  # a benchmark: no run id
        elif isinstance(e, MinIsrEntry):
            argv = [*cli, "scenario", "min-isr", "--store", str(self.store)]
            for m in e.min_insync:
                argv += ["--min-isr", str(m)]
        else:
            argv = [*cli, "run", str(e.plan), "--seed", str(run.seed), "--store", str(self.store)]
            if e.duration_s is not None:
                argv += ["--duration", f"{e.duration_s:g}"]
            for key, value in e.overrides.items():
                argv += ["--set", f"{key}={value}"]
        if self.run_id_prefix:
            argv += ["--run-id", f"{self.run_id_prefix}{run.index}"]
        return argv

    def __call__(self, run: PlannedRun, remaining_s: float) -> RunRecord:
        e = run.entry
        if not isinstance(e, PlanEntry) and not command_exists("scenario"):
            return skipped(run, "needs `highwater scenario`, which does not exist")
        self.log_dir.mkdir(parents=True, exist_ok=True)
        log = self.log_dir / f"{run.index:02d}-{safe_name(run.label)}.log"
        reports = self.store / "scenarios"
        before = ({r.path for r in Store(self.store).runs(e.plan_name)}
                  if isinstance(e, PlanEntry) else set(reports.glob("*.json")))
        t0 = time.monotonic()
        code, reason = self._execute(self.argv(run), log, remaining_s + self.overrun_s)
        elapsed = time.monotonic() - t0
        out = log.read_text(encoding="utf-8", errors="replace")
        rec = RunRecord(run.index, run.label, e.kind, run.seed, RAN,
                        plan=str(getattr(e, "plan", "")) or None, mode=getattr(e, "mode", None),
                        exit_code=code, reason=reason, elapsed_s=round(elapsed, 3), log=str(log))
        if isinstance(e, PlanEntry):
            rec.run_dir = self._run_dir(out, e.plan_name, before)
        elif isinstance(e, RdkafkaSuiteEntry):
            rdkafka_suite_record(rec, out)
        else:
            pattern = (f"{e.scenario_id}-{e.mode}-*.json" if isinstance(e, ScenarioEntry)
                       else "min-isr-*.json")
            report = _report(out, reports, pattern, before)
            if isinstance(e, ScenarioEntry):
                scenario_record(rec, report)
            else:
                min_isr_record(rec, report)
        if rec.reason is None and code != 0:
            rec.reason = _last_error(out) or f"{' '.join(self.argv(run)[3:5])} exited {code}"
        return rec

    def _execute(self, argv: list[str], log: Path, limit_s: float) -> tuple[int, str | None]:
        with open(log, "w", encoding="utf-8") as fh:
            fh.write("$ " + " ".join(argv) + "\n")
            fh.flush()
            try:
                # Own session: the limit's SIGINT reaches the run and only the run.
                proc = subprocess.Popen(argv, stdout=fh, stderr=subprocess.STDOUT,
                                        start_new_session=True,
                                        env={**os.environ, "PYTHONUNBUFFERED": "1"})
            except OSError as exc:
                return EXIT_ERROR, f"cannot start highwater run: {exc}"
            try:
                return proc.wait(timeout=limit_s), None
            except subprocess.TimeoutExpired:
                pass
            reason = f"still running {limit_s:.0f}s after it started (budget + overrun): stopped"
            for sig, wait_s in ((signal.SIGINT, self.kill_grace_s), (signal.SIGKILL, 30.0)):
                try:
                    os.killpg(proc.pid, sig)
                except ProcessLookupError:
                    break
                try:
                    proc.wait(timeout=wait_s)
                    break
                except subprocess.TimeoutExpired:
                    continue
            return EXIT_ERROR, reason

    def _run_dir(self, out: str, plan_name: str, before: set[Path]) -> str | None:
        m = _RUN_DIR.search(out)
        if m and Path(m.group(1).strip()).is_dir():
            return str(Path(m.group(1).strip()).resolve())
        new = [r.path for r in Store(self.store).runs(plan_name) if r.path not in before]
        return str(new[-1].resolve()) if new else None


def _report(out: str, reports: Path, pattern: str, before: set[Path]) -> Path | None:
    """The scenario's own summary file: the one it printed, else the newest new one."""
    for rx in (_SCENARIO_SUMMARY, _MIN_ISR_TABLE):
        for m in rx.finditer(out):
            path = Path(m.group(1).strip())
            path = path if path.suffix == ".json" else path.with_suffix(".json")
            if path.is_file() and path.match(pattern):
                return path
    new = sorted(p for p in reports.glob(pattern) if p not in before)
    return new[-1] if new else None


def _read_report(rec: RunRecord, report: Path | None) -> dict | None:
    if report is None:
        rec.verdict = "error"
        rec.reason = rec.reason or "the scenario wrote no summary in <store>/scenarios"
        return None
    rec.report = str(report)
    try:
        data = json.loads(report.read_text(encoding="utf-8"))
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
        return data
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        rec.verdict = "error"
        rec.reason = rec.reason or f"{report}: unreadable: {exc}"
        return None


def scenario_record(rec: RunRecord, report: Path | None) -> RunRecord:
    """Fill run dir, verdict and reason from `highwater scenario run`'s summary (--repeat 1)."""
    data = _read_report(rec, report)
    runs = data.get("runs") if data else None
    if data is None:
        return rec
    if not isinstance(runs, list) or not runs or not isinstance(runs[0], dict):
        rec.verdict, rec.reason = "error", rec.reason or f"{report}: no `runs`"
        return rec
    first = runs[0]
    if first.get("run") and Path(first["run"]).is_dir():
        rec.run_dir = str(Path(first["run"]).resolve())
        rec.run_dirs = [rec.run_dir]
    if not first.get("carried_out"):
        rec.verdict = "error"
    elif first.get("reproduced"):
        rec.verdict = "as-expected"
    else:
        rec.verdict = "unexpected"
    if rec.verdict != "as-expected":
        what = "not reproduced" if first.get("carried_out") else "not carried out"
        rec.reason = rec.reason or f"{what}: {first.get('why') or 'no reason given'}"
    return rec


def min_isr_record(rec: RunRecord, report: Path | None) -> RunRecord:
    """Fill run dirs and verdict from `highwater scenario min-isr`'s JSON and exit code."""
    data = _read_report(rec, report)
    if data is None:
        return rec
    runs = data.get("runs") if isinstance(data.get("runs"), dict) else {}
    dirs = [str(Path(d).resolve()) for _, d in sorted(runs.items()) if Path(d).is_dir()]
    rec.run_dirs = dirs or None
    rec.run_dir = dirs[0] if dirs else None
    rec.verdict = {0: "as-expected", 1: "unexpected"}.get(rec.exit_code or 0, "error")
    if data.get("not_carried_out"):
        rec.verdict = "error"
        rec.reason = rec.reason or f"min.insync {data['not_carried_out']}: not carried out"
    return rec


def rdkafka_suite_record(rec: RunRecord, out: str) -> RunRecord:
    """Verdict of `highwater bench rdkafka-suite` from its exit code (0: no test failed outside
    the known gaps, 1: one did, else it could not run); its report is the .tsv it printed
    (not a run dir: it holds no history for the checker)."""
    tsv = [ln.strip() for ln in out.splitlines() if ln.strip().endswith("rdkafka-suite.tsv")]
    if tsv and Path(tsv[-1]).is_file():
        rec.report = str(Path(tsv[-1]).resolve())
    rec.verdict = {0: "as-expected", 1: "unexpected"}.get(rec.exit_code or 0, "error")
    if rec.verdict != "as-expected":
        failed = [ln for ln in out.splitlines() if ln.startswith("unexpected failures:")]
        rec.reason = rec.reason or (failed[-1] if failed else _last_error(out))
    return rec


def _last_error(out: str) -> str | None:
    lines = [ln.strip() for ln in out.splitlines() if ln.strip()]
    for ln in reversed(lines):
        if ("could not be carried out" in ln or ln.startswith(("highwater run:",
                                                                 "highwater scenario:"))
                or "acks=all violation" in ln):
            return ln
    return lines[-1] if lines else None
