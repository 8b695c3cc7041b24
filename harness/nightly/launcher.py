"""Carry out one planned run as a `highwater run` subprocess (a crash there never kills the night).

Contract: `Launcher(store, log_dir, ...)(run, remaining_s) -> RunRecord`.
- Plan entries run `python -m harness.cli run PLAN --seed S --store STORE [--duration D]
  [--set k=v ...] [--run-id PREFIX<index>]`; the console output goes to `log_dir/<nn>-<label>.log`.
  The run dir is the one `highwater run` prints ("run dir PATH"); if the line is missing the
  store is searched for the plan's new run dir. Exit codes are `highwater run`'s: 0, 1, 2.
- Entries needing a command that does not exist yet (`mode:` scenarios, min-isr) are returned
  as skipped with that reason.
- Hard limit: remaining budget + `overrun_s`; past it the run gets SIGINT (it removes its
  cluster on Ctrl-C), then SIGKILL after `kill_grace_s`; recorded as exit 2 with the reason.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from harness.nightly.schedule import RAN, PlannedRun, RunRecord, skipped
from harness.nightly.suite import PlanEntry
from harness.store import Store, safe_name

EXIT_ERROR = 2
_RUN_DIR = re.compile(r"run dir (\S.*)$", re.MULTILINE)


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
        assert isinstance(e, PlanEntry)
        argv = [self.python, "-m", "harness.cli", "run", str(e.plan), "--seed", str(run.seed),
                "--store", str(self.store)]
        if e.duration_s is not None:
            argv += ["--duration", f"{e.duration_s:g}"]
        for key, value in e.overrides.items():
            argv += ["--set", f"{key}={value}"]
        if self.run_id_prefix:
            argv += ["--run-id", f"{self.run_id_prefix}{run.index}"]
        return argv

    def __call__(self, run: PlannedRun, remaining_s: float) -> RunRecord:
        e = run.entry
        if not isinstance(e, PlanEntry) or e.mode is not None:
            what = ("`highwater scenario min-isr`" if not isinstance(e, PlanEntry)
                    else f"`highwater scenario run --mode {e.mode}`")
            state = ("is not wired into the nightly yet" if command_exists("scenario")
                     else "does not exist yet")
            return skipped(run, f"needs {what}, which {state}")
        self.log_dir.mkdir(parents=True, exist_ok=True)
        log = self.log_dir / f"{run.index:02d}-{safe_name(run.label)}.log"
        before = {r.path for r in Store(self.store).runs(e.plan_name)}
        t0 = time.monotonic()
        code, reason = self._execute(self.argv(run), log, remaining_s + self.overrun_s)
        elapsed = time.monotonic() - t0
        out = log.read_text(encoding="utf-8", errors="replace")
        run_dir = self._run_dir(out, e.plan_name, before)
        if reason is None and code != 0:
            reason = _last_error(out) or f"highwater run exited {code}"
        return RunRecord(run.index, run.label, e.kind, run.seed, RAN, plan=str(e.plan),
                         mode=e.mode, exit_code=code, run_dir=run_dir, reason=reason,
                         elapsed_s=round(elapsed, 3), log=str(log))

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


def _last_error(out: str) -> str | None:
    lines = [ln.strip() for ln in out.splitlines() if ln.strip()]
    for ln in reversed(lines):
        if "could not be carried out" in ln or ln.startswith("highwater run:"):
            return ln
    return lines[-1] if lines else None
