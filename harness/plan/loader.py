"""Load a plan file into a validated `Plan`, or fail with a one-line, file:line PlanError.

The pipeline, one module per concern: the YAML is composed into its node tree with positions
(harness.plan.yamlnodes), `--set key=value` overrides are applied to that tree
(harness.plan.overrides), then the tree is checked and built (harness.plan.builder: unknown keys,
types and ranges, acks, actions and their parameters (harness.plan.steps), targets against the
cluster's brokers and partitions, conditions, expectations). `modes` (harness.plan.modes) become
`--set`-style overrides; every mode is validated by loading the plan with its overrides, and
`mode_overrides` returns them for a run.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from harness.plan.builder import PlanBuilder
from harness.plan.errors import PlanError
from harness.plan.model import Plan
from harness.plan.modes import mode_overrides
from harness.plan.overrides import apply_override, parse_overrides
from harness.plan.yamlnodes import compose

__all__ = ["load_plan", "mode_overrides", "parse_overrides", "parse_plan"]


def load_plan(path: str | Path, overrides: Mapping[str, str] | None = None) -> Plan:
    """Read, override and validate the plan at `path`. Raises PlanError."""
    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise PlanError(source, None, "", f"cannot read plan: {e}") from e
    return parse_plan(text, source, overrides)


def parse_plan(text: str, source: str = "<plan>", overrides: Mapping[str, str] | None = None,
               *, check_modes: bool = True) -> Plan:
    """Like load_plan, for plan text already in memory (`source` names it in errors).
    check_modes: also load the plan once per mode, so a mode's bad override is reported."""
    root = compose(text, source)
    b = PlanBuilder(source)
    for key, value in (overrides or {}).items():
        root = apply_override(root, key, value, source)
    plan = b.plan(root, dict(overrides or {}))
    if check_modes:
        for mode in plan.modes.values():
            try:
                parse_plan(text, source, {**mode.overrides, **(overrides or {})},
                           check_modes=False)
            except PlanError as e:
                where = f"modes.{mode.name}" + (f" ({e.origin})" if e.origin else "")
                line = e.line if e.line is not None else mode.line  # where the mode starts
                raise PlanError(source, line, e.field, e.message, origin=where) from e
    return plan
