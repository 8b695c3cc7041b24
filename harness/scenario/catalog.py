"""The scenario catalogue: every plan in chaos_plans/scenarios/ with its id, title and modes.

Contract: `scenarios(dir)` loads each `L*.yaml` (sorted by number); `find(id, dir)` returns one
or raises ScenarioError naming the known ids; `find` also takes the path of a user's own plan
with `modes:` (id: the file's stem; a plan without modes is a ScenarioError). A plan that does
not load is a ScenarioError with the loader's file:line message: the catalogue never hides a
broken plan.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from harness.plan.errors import PlanError
from harness.plan.loader import load_plan, mode_overrides
from harness.plan.model import Plan

SCENARIO_DIR = Path(__file__).resolve().parents[2] / "chaos_plans" / "scenarios"
_ID = re.compile(r"^L(\d+)$")


class ScenarioError(Exception):
    pass


@dataclass(frozen=True)
class Scenario:
    id: str
    path: Path
    plan: Plan  # the plan without a mode applied

    @property
    def title(self) -> str:
        return self.plan.title or self.plan.name

    @property
    def modes(self) -> tuple[str, ...]:
        return tuple(self.plan.modes)

    def overrides(self, mode: str) -> dict[str, str]:
        """--set overrides selecting `mode`, plus the run's name `<id>-<mode>` in the store."""
        try:
            return {"name": f"{self.id}-{mode}", **mode_overrides(self.plan, mode)}
        except PlanError as e:
            raise ScenarioError(f"{self.id}: {e.message}") from e

    def load(self, mode: str, extra: dict[str, str] | None = None) -> Plan:
        return load_plan(self.path, {**self.overrides(mode), **(extra or {})})


def _number(path: Path) -> int:
    m = _ID.match(path.stem)
    return int(m.group(1)) if m else 10**6


def scenarios(directory: Path = SCENARIO_DIR) -> list[Scenario]:
    out = []
    for path in sorted(directory.glob("L*.yaml"), key=_number):
        if not _ID.match(path.stem):
            continue
        try:
            out.append(Scenario(path.stem, path, load_plan(path)))
        except PlanError as e:
            raise ScenarioError(str(e)) from e
    return out


def find(scenario_id: str, directory: Path = SCENARIO_DIR) -> Scenario:
    """A catalogue id (L1), or the path of a user's own plan with `modes:` (its id is the
    file's stem)."""
    given = Path(scenario_id)
    if not _ID.match(scenario_id) and (given.suffix in (".yaml", ".yml") or given.is_file()):
        return _from_path(given)
    path = directory / f"{scenario_id}.yaml"
    if not _ID.match(scenario_id) or not path.is_file():
        known = ", ".join(p.stem for p in sorted(directory.glob("L*.yaml"), key=_number))
        raise ScenarioError(f"no scenario {scenario_id!r} in {directory} (known: {known})")
    try:
        return Scenario(scenario_id, path, load_plan(path))
    except PlanError as e:
        raise ScenarioError(str(e)) from e


def _from_path(path: Path) -> Scenario:
    if not path.is_file():
        raise ScenarioError(f"{path}: no such plan file")
    try:
        plan = load_plan(path)
    except PlanError as e:
        raise ScenarioError(str(e)) from e
    if not plan.modes:
        raise ScenarioError(f"{path}: the plan has no `modes:` (a scenario needs at least one "
                            "mode, e.g. legacy and fixed; see chaos_plans/scenarios/README.md)")
    return Scenario(path.stem, path, plan)
