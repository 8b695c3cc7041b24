"""Fault plans: the YAML format, its validated model, conditions, targets and the random nemesis.

Everything here is pure (no sockets, no docker, no clock): the run interprets a `Plan`
against the live cluster. Entry point: `load_plan(path, overrides) -> Plan`.
"""

from harness.plan.errors import ConditionError, PlanError, ResolutionError
from harness.plan.loader import load_plan
from harness.plan.model import Plan, Step

__all__ = ["ConditionError", "Plan", "PlanError", "ResolutionError", "Step", "load_plan"]
