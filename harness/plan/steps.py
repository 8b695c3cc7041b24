"""The plan's `faults` (steps: action, timing, targets, parameters) and `nemesis` sections.

Steps are checked against the action table (harness.plan.actions): the keys an action takes,
its duration rule and its parameters' types and bounds; targets against the cluster's brokers
and partitions; `when` conditions parsed (a bad one reported with its column).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from yaml.nodes import MappingNode, Node, ScalarNode

from harness.plan.actions import ACTIONS, RANDOM_KINDS, ActionSpec, Param
from harness.plan.conditions import parse_condition
from harness.plan.errors import ConditionError, PlanError
from harness.plan.model import ClusterSpec, NemesisSpec, Step, WorkloadSpec
from harness.plan.targets import GROUP_KINDS, MAPPING_KINDS, SCALAR_KINDS, Target
from harness.plan.yamlnodes import describe, join, suggest

if TYPE_CHECKING:
    from harness.plan.builder import PlanBuilder

STEP_NAME = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
TIMING = ("at", "after", "when")
STEP_KEYS = ("name", "action", "at", "after", "when", "timeout", "on_timeout", "duration",
             "target", "peers", "from", "to")
MAX_SECONDS = 86_400.0
MAX_OVERLAP = 10  # nemesis.overlap: superimposed random schedules
MAX_TIMEOUT = 3_600.0
RANDOM_TARGETS = ("leader", "follower", "followers", "random", "majority", "minority", "all",
                  "controller", "active-controller", "random-controller")


class StepsMixin:
    """PlanBuilder's `faults` and `nemesis` sections."""

    def faults(self: PlanBuilder, node: Node, path: str) -> tuple[Step, ...]:
        steps: list[Step] = []
        for i, item in enumerate(self.seq(node, path)):
            step = self.step(item, join(path, i), i, [s.name for s in steps])
            if any(s.name == step.name for s in steps):
                raise self.error(item, join(path, i) + ".name", f"step name {step.name!r} twice")
            steps.append(step)
        return tuple(steps)

    def step(self: PlanBuilder, node: Node, path: str, index: int, earlier: list[str]) -> Step:
        if not isinstance(node, MappingNode):
            raise self.error(node, path, f"expected a step (a mapping), got {describe(node)}")
        raw = {str(k.value): (k, v) for k, v in node.value if isinstance(k, ScalarNode)}
        if "action" not in raw:
            raise self.error(node, f"{path}.action", "missing (required)")
        action_node = raw["action"][1]
        action = self.enum(action_node, f"{path}.action", ACTIONS)
        spec = ACTIONS[action]
        known = list(STEP_KEYS) + list(spec.params)
        m = self.mapping(node, path, known)
        # Keys that exist but do not fit this action get a message naming the action.
        for key, takes in (("target", spec.target), ("peers", spec.peers),
                           ("from", spec.link), ("to", spec.link)):
            if key in m and not takes:
                raise self.error(m[key][0], join(path, key), f"action '{action}' takes no {key}")
        if spec.target and "target" not in m:
            raise self.error(node, f"{path}.target", f"action '{action}' needs a target")
        if spec.link:
            for key in ("from", "to"):
                if key not in m:
                    raise self.error(node, join(path, key),
                                     f"action '{action}' needs from and to (one direction)")
        name = f"{action}-{index + 1}"
        if "name" in m:
            name = self.str_(m["name"][1], f"{path}.name")
            if not STEP_NAME.match(name):
                raise self.error(m["name"][1], f"{path}.name",
                                 "use 1-64 of [A-Za-z0-9._-] for a step name")
        kw: dict[str, Any] = {"action": action, "name": name,
                              "line": node.start_mark.line + 1 if node.start_mark.line >= 0
                              else None}
        kw.update(self.timing(node, path, m))
        kw.update(self.step_targets(path, m, spec, earlier))
        if "duration" in m:
            if spec.duration == "none":
                raise self.error(m["duration"][0], f"{path}.duration",
                                 f"action '{action}' takes no duration")
            kw["duration"] = self.num(m["duration"][1], f"{path}.duration", hi=MAX_SECONDS,
                                      positive=True)
        elif spec.duration == "required":
            raise self.error(node, f"{path}.duration", f"action '{action}' needs a duration")
        kw["params"] = self.params(spec, {k: v for k, v in m.items() if k in spec.params},
                                   node, path)
        if (action == "corrupt-file" and kw["params"]["partition"] is None
                and kw["params"]["file"] != "replication-offset-checkpoint"):
            raise self.error(m["file"][1], f"{path}.partition",
                             f"file {kw['params']['file']} needs a partition")
        return Step(**kw)

    def check_group_steps(self: PlanBuilder, steps: Sequence[Step], workload: WorkloadSpec
                          ) -> None:
        """Group actions and targets need the subscribe workload's group (and a member slot
        it has)."""
        c = workload.consumers
        for i, st in enumerate(steps):
            if st.action == "replace-consumer":
                slot = int(st.params.get("consumer") or 0)
                if c.mode != "assign" or c.count < 1:
                    raise PlanError(self.source, st.line, f"faults[{i}]",
                                    f"step {st.name!r} replaces an assign-mode consumer: it "
                                    f"needs workload.consumers with mode: assign (a group "
                                    f"member is replaced by replace-member)")
                if slot >= c.count:
                    raise PlanError(self.source, st.line, f"faults[{i}].consumer",
                                    f"no consumer {slot}: the workload has {c.count} "
                                    f"(0..{c.count - 1})")
                continue
            group_target = st.target is not None and st.target.kind in GROUP_KINDS
            if ACTIONS[st.action].kind != "group" and not group_target:
                continue
            path = f"faults[{i}]"
            if c.mode != "subscribe" or c.count < 1:
                raise PlanError(self.source, st.line, path,
                                f"step {st.name!r} acts on a consumer group: it needs "
                                f"workload.consumers with mode: subscribe")
            if group_target and st.target is not None and st.target.group != c.group:
                raise PlanError(self.source, st.line, f"{path}.target",
                                f"group {st.target.group!r} is not the workload's group "
                                f"{c.group!r}")
            member = st.params.get("member")
            if st.action == "replace-member" and int(member or 0) >= c.count:
                raise PlanError(self.source, st.line, f"{path}.member",
                                f"no member {member}: the group has {c.count} "
                                f"(0..{c.count - 1})")

    def timing(self: PlanBuilder, node: Node, path: str, m: dict[str, tuple[Node, Node]]
               ) -> dict[str, Any]:
        given = [k for k in TIMING if k in m]
        if not given:
            raise self.error(node, path, "say when the step runs: at, after or when")
        if len(given) > 1:
            raise self.error(m[given[1]][0], join(path, given[1]),
                             f"give only one of at, after, when (also has {given[0]})")
        kw: dict[str, Any] = {}
        key = given[0]
        knode = m[key][1]
        if key in ("at", "after"):
            kw[key] = self.num(knode, join(path, key), 0, MAX_SECONDS)
            for extra in ("timeout", "on_timeout"):
                if extra in m:
                    raise self.error(m[extra][0], join(path, extra), "only with 'when'")
            return kw
        text = self.str_(knode, f"{path}.when")
        try:
            kw["when"] = parse_condition(text, self.partitions, self.brokers,
                                         controllers=self.controllers)
        except ConditionError as e:
            raise self.error(knode, f"{path}.when",
                             f"bad condition at column {e.column}: {e.message}") from e
        if "timeout" not in m:
            raise self.error(m["when"][0], f"{path}.timeout",
                             f"required with 'when': seconds to wait, 0 < timeout <= "
                             f"{MAX_TIMEOUT:g}")
        kw["timeout"] = self.num(m["timeout"][1], f"{path}.timeout", hi=MAX_TIMEOUT,
                                 positive=True)
        if "on_timeout" in m:
            kw["on_timeout"] = self.enum(m["on_timeout"][1], f"{path}.on_timeout",
                                         ("fail", "skip"))
        return kw

    def step_targets(self: PlanBuilder, path: str, m: dict[str, tuple[Node, Node]],
                     spec: ActionSpec, earlier: list[str]) -> dict[str, Any]:
        kw: dict[str, Any] = {}
        nodes_only = tuple(k for k in SCALAR_KINDS + MAPPING_KINDS if k not in ("client", "rest"))
        if "target" in m:
            kw["target"] = self.target(m["target"][1], f"{path}.target", nodes_only, earlier)
        if "peers" in m:
            kw["peers"] = self.target(m["peers"][1], f"{path}.peers",
                                      nodes_only + ("rest",), earlier)
        if spec.link:
            src = self.target(m["from"][1], f"{path}.from", SCALAR_KINDS + MAPPING_KINDS, earlier)
            dst = self.target(m["to"][1], f"{path}.to", SCALAR_KINDS + MAPPING_KINDS, earlier)
            if src.kind == dst.kind and src.kind in ("client", "rest"):
                raise self.error(m["to"][1], f"{path}.to", f"from and to are both {src.kind}")
            kw["src"], kw["dst"] = src, dst
        return kw

    def target(self: PlanBuilder, node: Node, path: str, allowed: tuple[str, ...],
               earlier: list[str]) -> Target:
        if isinstance(node, ScalarNode):
            v = self.scalar(node, path, "a target")
            if isinstance(v, int) and not isinstance(v, bool):
                return Target("broker", brokers=(self.broker_id(node, path),))
            if not isinstance(v, str) or v not in SCALAR_KINDS:
                raise self.error(node, path, f"unknown target {describe(node)} (a word: "
                                 f"{', '.join(SCALAR_KINDS)}; or a mapping: "
                                 f"{', '.join(MAPPING_KINDS)}){suggest(str(v), SCALAR_KINDS)}")
            if v not in allowed:
                raise self.error(node, path, f"target '{v}' is not allowed here")
            if v == "minority" and len(self.brokers) < 3:
                raise self.error(node, path, f"{len(self.brokers)} broker(s) have no minority")
            return Target(v)
        m = self.mapping(node, path, MAPPING_KINDS + ("index",))
        roles = [k for k in m if k != "index"]
        if len(roles) != 1:
            raise self.error(node, path, f"give exactly one of {', '.join(MAPPING_KINDS)}")
        kind = roles[0]
        if kind not in allowed:
            raise self.error(m[kind][0], path, f"target '{kind}' is not allowed here")
        if "index" in m and kind != "follower":
            raise self.error(m["index"][0], f"{path}.index", "index goes with follower only")
        vnode = m[kind][1]
        vpath = f"{path}.{kind}"
        if kind in ("leader", "follower", "followers"):
            p = self.partition_ref(vnode, vpath)
            index = 0
            if "index" in m:
                followers = self.partitions[p] - 1
                index = self.int_(m["index"][1], f"{path}.index", 0)
                if index >= followers:
                    raise self.error(m["index"][1], f"{path}.index",
                                     f"{p} has {followers} follower(s): index 0..{followers - 1}")
            elif self.partitions[p] < 2 and kind != "leader":
                raise self.error(vnode, vpath, f"{p} has replication factor 1: no followers")
            return Target(kind, partition=p, index=index)
        if kind == "broker":
            return Target("broker", brokers=(self.broker_id(vnode, vpath),))
        if kind == "standby-controller":
            i = self.int_(vnode, vpath, 0)
            if i >= len(self.controllers) - 1:
                raise self.error(vnode, vpath, f"{len(self.controllers)} controller(s) have "
                                 f"{len(self.controllers) - 1} standby: index 0.."
                                 f"{len(self.controllers) - 2}")
            return Target("standby-controller", index=i)
        if kind == "controller":
            c = self.int_(vnode, vpath)
            if c not in self.controllers:
                raise self.error(vnode, vpath, f"no controller {c}: controllers are "
                                 f"1..{len(self.controllers)} (cluster.controllers)")
            return Target("controller", controller=c)
        if kind == "brokers":
            items = self.seq(vnode, vpath)
            if not items:
                raise self.error(vnode, vpath, "needs at least one broker")
            return Target("brokers", brokers=tuple(self.broker_id(n, join(vpath, i))
                                                   for i, n in enumerate(items)))
        if kind in GROUP_KINDS:
            group = self.str_(vnode, vpath)
            if not group:
                raise self.error(vnode, vpath, "needs a consumer group id")
            return Target(kind, group=group)
        step = self.str_(vnode, vpath)
        if step not in earlier:
            raise self.error(vnode, vpath, f"no earlier step named {step!r}"
                             f"{suggest(step, earlier)}")
        return Target("step", step=step)

    def params(self: PlanBuilder, spec: ActionSpec, given: dict[str, tuple[Node, Node]],
               node: Node, path: str) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for pname, p in spec.params.items():
            if pname not in given:
                if p.required:
                    raise self.error(node, join(path, pname),
                                     f"action '{spec.name}' needs {pname}")
                out[pname] = p.default
                continue
            out[pname] = self.param(p, given[pname][1], join(path, pname))
        return out

    def param(self: PlanBuilder, p: Param, node: Node, path: str) -> Any:
        if p.type == "int":
            return self.int_(node, path, p.min, p.max)
        if p.type == "float":
            return self.num(node, path, p.min, p.max)
        if p.type == "bool":
            return self.bool_(node, path)
        if p.type == "enum":
            return self.enum(node, path, p.choices)
        if p.type == "partition":
            return self.partition_ref(node, path)
        if p.type == "partitions":
            return self.partition_list(node, path)
        if p.type == "topics":
            known = sorted({name.rpartition("-")[0] for name in self.partitions})
            names = tuple(self.enum(n, join(path, i), known)
                          for i, n in enumerate(self.seq(node, path)))
            if not names or len(set(names)) != len(names):
                raise self.error(node, path, "needs distinct topic names, at least one")
            return names
        items = self.seq(node, path)  # brokers
        ids = tuple(self.broker_id(n, join(path, i)) for i, n in enumerate(items))
        if not ids or len(set(ids)) != len(ids):
            raise self.error(node, path, "needs distinct broker ids, at least one")
        return ids


    def nemesis(self: PlanBuilder, node: Node, path: str, cluster: ClusterSpec) -> NemesisSpec:
        random_keys = ("seed", "kinds", "targets", "interval_s", "fault_duration_s", "start_s",
                       "duration_s", "partitions", "params", "overlap")
        m = self.mapping(node, path, ("mode",) + random_keys)
        mode = self.enum(m["mode"][1], f"{path}.mode", ("scripted", "random")) \
            if "mode" in m else "scripted"
        if mode == "scripted":
            for k in random_keys:
                if k in m:
                    raise self.error(m[k][0], f"{path}.{k}", "only with mode: random")
            return NemesisSpec()
        for k in ("kinds", "targets"):
            if k not in m:
                raise self.error(node, f"{path}.{k}", "required with mode: random")
        kw: dict[str, Any] = {"mode": mode}
        if "seed" in m:
            kw["seed"] = self.int_(m["seed"][1], f"{path}.seed", 0, 2**63 - 1)
        kinds_node = m["kinds"][1]
        from harness.plan.random_nemesis import COMPOUND_KINDS

        kinds = tuple(self.enum(n, join(f"{path}.kinds", i), RANDOM_KINDS + COMPOUND_KINDS)
                      for i, n in enumerate(self.seq(kinds_node, f"{path}.kinds")))
        targets_node = m["targets"][1]
        targets = tuple(self.enum(n, join(f"{path}.targets", i), RANDOM_TARGETS)
                        for i, n in enumerate(self.seq(targets_node, f"{path}.targets")))
        if not kinds:
            raise self.error(kinds_node, f"{path}.kinds", "needs at least one kind")
        if not targets:
            raise self.error(targets_node, f"{path}.targets", "needs at least one target")
        kw["kinds"], kw["targets"] = kinds, targets
        for k in ("interval_s", "fault_duration_s", "duration_s"):
            if k in m:
                kw[k] = self.num(m[k][1], f"{path}.{k}", hi=MAX_SECONDS, positive=True)
        if "start_s" in m:
            kw["start_s"] = self.num(m["start_s"][1], f"{path}.start_s", 0, MAX_SECONDS)
        if "overlap" in m:
            kw["overlap"] = self.int_(m["overlap"][1], f"{path}.overlap", 1, MAX_OVERLAP)
        if "partitions" in m:
            kw["partitions"] = self.partition_list(m["partitions"][1], f"{path}.partitions")
        if "params" in m:
            ppath = f"{path}.params"
            pm = self.mapping(m["params"][1], ppath,
                              tuple(k for k in kinds if k not in COMPOUND_KINDS))
            kw["params"] = {}
            for kind, (_, pnode) in pm.items():
                spec = ACTIONS[kind]
                given = self.mapping(pnode, f"{ppath}.{kind}", tuple(spec.params))
                # Only what is given: the schedule fills the rest with its defaults.
                kw["params"][kind] = {
                    k: self.param(spec.params[k], v, f"{ppath}.{kind}.{k}")
                    for k, (_, v) in given.items()
                }
        spec = NemesisSpec(**kw)
        # Imported here: random_nemesis imports this module's constants.
        from harness.plan.random_nemesis import compatible_targets

        partitions = spec.partitions or tuple(cluster.partitions())
        for i, kind in enumerate(kinds):
            if not compatible_targets(kind, targets, cluster, partitions):
                raise self.error(kinds_node.value[i], join(f"{path}.kinds", i),
                                 f"no target in {list(targets)} suits '{kind}' on this cluster")
        return spec
