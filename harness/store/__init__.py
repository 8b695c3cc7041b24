"""The store: one directory per run, found by path, listed for nightly summaries.

Contract:
- `Store(root).create_run(plan_name, plan_data)` makes `root/<plan>/<timestamp>/` with
  `plan.yaml` (the plan as run: `harness.plan.serialize.plan_to_data`), `logs/`, `data/`, and
  points `root/latest` (a relative symlink, replaced atomically) at it.
- The store owns the run-dir file formats, one module per kind, each with its one writer and
  one reader: harness.store.history (history.jsonl: HistoryWriter, read_history),
  harness.store.states (states.jsonl: StatesWriter, read_states), harness.store.results
  (results.json: write_results, read_results) and harness.store.meta (run.json: the run's own
  facts, seed, start time, argv, exit reason: write_meta, read_meta). Producers (the run, the
  checker, the state poller) and readers (report, scenario, nightly, bench) go through them.
  `report.html` is the report's own output.
- Timestamps are UTC `YYYYmmddTHHMMSS.mmmZ`, so names sort in time order; a clash within the
  same millisecond gets a `-1`, `-2`, … suffix, never an overwrite.
- `Store.runs(plan=None)` lists run dirs oldest first; `RunDir(path)` opens any run dir by path
  (a store is not needed to read one).
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from harness.store.files import StoreError, load_mapping
from harness.store.history import HISTORY_FILE, HistoryWriter
from harness.store.meta import META_FILE, read_meta, write_meta
from harness.store.results import RESULTS_FILE, read_results
from harness.store.states import STATES_FILE

PLAN_FILE = "plan.yaml"
REPORT_FILE = "report.html"
LATEST = "latest"
_SAFE = re.compile(r"[^A-Za-z0-9._-]+")
_TIMESTAMP = re.compile(r"^\d{8}T\d{6}\.\d{3}Z(-\d+)?$")


def safe_name(name: str) -> str:
    """A plan name as one path component: unsafe characters become `_`, never `.`/`..`."""
    cleaned = _SAFE.sub("_", name).strip("_") or "plan"
    return "_" + cleaned if cleaned in (".", "..") else cleaned


def timestamp(now: datetime | None = None) -> str:
    now = now or datetime.now(UTC)
    return now.strftime("%Y%m%dT%H%M%S.") + f"{now.microsecond // 1000:03d}Z"


@dataclass(frozen=True)
class RunDir:
    """The files of one run; every path is under `path`."""

    path: Path

    @property
    def plan_name(self) -> str:
        return self.path.parent.name

    @property
    def timestamp(self) -> str:
        return self.path.name

    plan_path = property(lambda self: self.path / PLAN_FILE)
    history_path = property(lambda self: self.path / HISTORY_FILE)
    states_path = property(lambda self: self.path / STATES_FILE)
    results_path = property(lambda self: self.path / RESULTS_FILE)
    report_path = property(lambda self: self.path / REPORT_FILE)
    meta_path = property(lambda self: self.path / META_FILE)
    logs_dir = property(lambda self: self.path / "logs")
    data_dir = property(lambda self: self.path / "data")

    def history_writer(self) -> HistoryWriter:
        return HistoryWriter(self.history_path)

    def write_plan(self, plan_data: Mapping[str, Any]) -> Path:
        text = yaml.safe_dump(dict(plan_data), sort_keys=False, default_flow_style=False)
        self.plan_path.write_text(text, encoding="utf-8")
        return self.plan_path

    def plan(self) -> dict[str, Any] | None:
        """plan.yaml as data, None when absent; a broken file is a StoreError naming it."""
        return load_mapping(self.plan_path, yaml.safe_load)

    def results(self) -> dict[str, Any] | None:
        return read_results(self.path)

    def meta(self) -> dict[str, Any]:
        return read_meta(self.path)

    def write_meta(self, **fields: Any) -> dict[str, Any]:
        """Merge `fields` into run.json (seed, started, argv, exit code, reason…)."""
        return write_meta(self.path, **fields)


def _order(run: RunDir) -> tuple[str, int, str]:
    # "…Z-10" must sort after "…Z-9": compare the clash suffix as a number.
    base, _, n = run.timestamp.partition("-")
    return base, int(n or 0), run.plan_name


class Store:
    """A directory of runs: `<root>/<plan>/<timestamp>/` plus the `latest` symlink."""

    def __init__(self, root: str | Path = "store") -> None:
        self.root = Path(root)

    def create_run(
        self, plan_name: str, plan_data: Mapping[str, Any] | None = None,
        now: datetime | None = None,
    ) -> RunDir:
        plan_dir = self.root / safe_name(plan_name)
        plan_dir.mkdir(parents=True, exist_ok=True)
        base = timestamp(now)
        for n in range(1000):
            path = plan_dir / (base if n == 0 else f"{base}-{n}")
            try:
                path.mkdir()
                break
            except FileExistsError:
                continue
        else:
            raise StoreError(f"{plan_dir}: 1000 runs started in the same millisecond ({base})")
        run = RunDir(path)
        run.logs_dir.mkdir()
        run.data_dir.mkdir()
        if plan_data is not None:
            run.write_plan(plan_data)
        self._point_latest(run)
        return run

    def _point_latest(self, run: RunDir) -> None:
        link = self.root / LATEST
        tmp = self.root / f".{LATEST}.{os.getpid()}"
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        # Relative, so the store can be moved or mounted elsewhere; os.replace is atomic.
        os.symlink(os.path.relpath(run.path, self.root), tmp)
        os.replace(tmp, link)

    def latest(self) -> RunDir | None:
        link = self.root / LATEST
        return RunDir(link.resolve()) if link.is_symlink() and link.resolve().is_dir() else None

    def runs(self, plan: str | None = None) -> list[RunDir]:
        """Every run dir (of one plan, or all), oldest first."""
        if not self.root.is_dir():
            return []
        plans = [self.root / safe_name(plan)] if plan else sorted(self.root.iterdir())
        found = [
            RunDir(d)
            for p in plans
            if p.is_dir() and not p.is_symlink()
            for d in p.iterdir()
            if d.is_dir() and _TIMESTAMP.match(d.name)
        ]
        return sorted(found, key=_order)

    def plans(self) -> list[str]:
        return sorted({r.plan_name for r in self.runs()})
