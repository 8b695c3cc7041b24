"""A plan as plain JSON-able data: what the run stores as "the plan as run" and the report shows.

Conditions become their text, targets compact mappings in the plan's own YAML vocabulary
(`{"leader": "t-0"}`, `"controller"`), tuples lists; nothing is lost that the run uses.
"""

from __future__ import annotations

from dataclasses import fields, is_dataclass
from typing import Any

from harness.plan.conditions import Condition
from harness.plan.model import Plan
from harness.plan.targets import GROUP_KINDS, SCALAR_KINDS, Target


def target_to_data(t: Target) -> Any:
    if t.kind == "controller" and t.controller is not None:
        return {"controller": t.controller}
    if t.kind in SCALAR_KINDS:
        return t.kind
    if t.kind == "follower":
        return {"follower": t.partition, "index": t.index}
    if t.kind == "standby-controller":
        return {"standby-controller": t.index}
    if t.kind in ("leader", "followers"):
        return {t.kind: t.partition}
    if t.kind == "broker":
        return {"broker": t.brokers[0]}
    if t.kind == "brokers":
        return {"brokers": list(t.brokers)}
    if t.kind in GROUP_KINDS:
        return {t.kind: t.group}
    return {"step": t.step}


def to_data(value: Any) -> Any:
    if isinstance(value, Condition):
        return value.text
    if isinstance(value, Target):
        return target_to_data(value)
    if is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_data(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, dict):
        return {str(k): to_data(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_data(v) for v in value]
    return value


def plan_to_data(plan: Plan) -> dict[str, Any]:
    """The whole validated plan; `expected` as its text form ({"lost-write": "> 0"})."""
    data = to_data(plan)
    data["expected"] = plan.expected_text()
    return data
