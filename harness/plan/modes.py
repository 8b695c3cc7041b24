"""Plan modes: named variants (kafka_version, switches, set, expected, lost_by_acks,
diverged_offsets) turned into `--set`-style overrides, and `mode_overrides` to select one.

A mode's `expected` replaces the whole `expected` section (a mode says everything it expects);
lost_by_acks is the scenario runner's (harness.scenario.outcome); diverged_offsets is the
run check `diverged-offsets` (kept as a key of its own for the scenario's summary) and joins
the mode's `expected`, judged like every run check.
Every mode is validated by loading the plan with its overrides (harness.plan.loader.parse_plan).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from yaml.nodes import MappingNode, Node

from harness.checker.expectations import Expectation, parse_expression
from harness.plan.errors import PlanError
from harness.plan.model import ModeSpec, Plan
from harness.plan.steps import STEP_NAME
from harness.plan.yamlnodes import describe, join, suggest, yaml_text

if TYPE_CHECKING:
    from harness.plan.builder import PlanBuilder


def mode_overrides(plan: Plan, mode: str) -> dict[str, str]:
    """The overrides that select `mode` of `plan`; PlanError naming the plan's modes if unknown."""
    if mode not in plan.modes:
        known = ", ".join(plan.modes) or "none"
        raise PlanError(plan.source, None, "modes", f"no mode {mode!r} (plan has: {known})"
                        f"{suggest(mode, plan.modes)}")
    return dict(plan.modes[mode].overrides)


class ModesMixin:
    """PlanBuilder's `modes` section."""

    def modes(self: PlanBuilder, node: Node, path: str) -> dict[str, ModeSpec]:
        """Each mode as overrides: switches -> cluster.switches.<k>, set -> <path>, and
        expected -> the whole `expected` section (a mode says everything it expects)."""
        if not isinstance(node, MappingNode) or not node.value:
            raise self.error(node, path, "expected a mapping of mode name -> mode")
        out: dict[str, ModeSpec] = {}
        for knode, vnode in node.value:
            name = str(self.scalar(knode, path, "a mode name"))
            mpath = join(path, name)
            if not STEP_NAME.match(name):
                raise self.error(knode, mpath, "use 1-64 of [A-Za-z0-9._-] for a mode name")
            if name in out:
                raise self.error(knode, mpath, "duplicate mode")
            m = self.mapping(vnode, mpath, ("description", "kafka_version", "switches", "set",
                                            "expected", "lost_by_acks", "diverged_offsets"))
            ov: dict[str, str] = {}
            if "kafka_version" in m:
                vnode_ = m["kafka_version"][1]
                self.kafka_version(vnode_, f"{mpath}.kafka_version")
                ov["cluster.kafka_version"] = yaml_text(str(vnode_.value))
            if "switches" in m:
                for k, v in self.str_map(m["switches"][1], f"{mpath}.switches").items():
                    ov[f"cluster.switches.{k}"] = v
            if "set" in m:
                snode = m["set"][1]
                if not isinstance(snode, MappingNode):
                    raise self.error(snode, f"{mpath}.set", "expected a mapping path -> value")
                for k, v in snode.value:
                    key = str(self.scalar(k, f"{mpath}.set", "a dotted path"))
                    ov[key] = yaml_text(self.ctor.construct_object(v, deep=True))
            lost: dict[str, Expectation] = {}
            exp: dict[str, Expectation] = {}
            if "expected" in m:
                exp = self.expected(m["expected"][1], f"{mpath}.expected")
            if "lost_by_acks" in m:
                lnode = m["lost_by_acks"][1]
                lpath = f"{mpath}.lost_by_acks"
                if not isinstance(lnode, MappingNode):
                    raise self.error(lnode, lpath, "expected a mapping acks -> expression")
                for k, v in lnode.value:
                    acks = self.acks(k, lpath)
                    e = parse_expression(str(self.scalar(v, join(lpath, acks),
                                                         "an expression")))
                    if e is None:
                        raise self.error(v, join(lpath, acks),
                                         f'expected an expression like "== 0", got '
                                         f"{describe(v)}")
                    lost[acks] = Expectation(f"lost:{acks}", *e)
            diverged = None
            if "diverged_offsets" in m:
                dnode = m["diverged_offsets"][1]
                e = parse_expression(str(self.scalar(dnode, f"{mpath}.diverged_offsets",
                                                     "an expression")))
                if e is None:
                    raise self.error(dnode, f"{mpath}.diverged_offsets",
                                     f'expected an expression like "> 0", got {describe(dnode)}')
                diverged = Expectation("diverged-offsets", *e)
                if "expected" not in m:
                    raise self.error(dnode, f"{mpath}.diverged_offsets",
                                     "needs the mode's `expected` (it becomes its "
                                     "diverged-offsets entry)")
                exp = {**exp, "diverged-offsets": diverged}
            if "expected" in m:
                ov["expected"] = yaml_text({k: str(e) for k, e in exp.items()})
            desc = self.str_(m["description"][1], f"{mpath}.description") \
                if "description" in m else ""
            out[name] = ModeSpec(name, desc.strip(), ov, lost, diverged,
                                 line=knode.start_mark.line + 1)
        return out
