"""Load a plan file into a validated `Plan`, or fail with a one-line, file:line PlanError.

The YAML is composed into its node tree (not loaded), so every value keeps the line it came
from. `--set key=value` overrides are applied to that tree first: dotted paths, list items
by index (`faults.0.at=3`), free-form maps taking the rest of the path as one key
(`cluster.switches.truncation=hw`, `cluster.topics.0.configs.unclean.leader.election.enable=true`).
The value is parsed as YAML. Then the tree is checked: unknown keys, types and ranges, acks,
action names and their parameters, targets against the cluster's brokers and partitions,
conditions parsed (a bad one is reported with its line and column), expectations.
`modes` (named variants: switches, set, expected, lost_by_acks) become `--set`-style overrides;
every mode is validated by loading the plan with its overrides, and `mode_overrides` returns
them for a run.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml
from yaml.constructor import ConstructorError, SafeConstructor
from yaml.error import Mark
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from harness.checker.history import ACKS, ANOMALIES
from harness.plan.actions import ACTIONS, ActionSpec, Param
from harness.plan.conditions import parse_condition
from harness.plan.errors import ConditionError, PlanError
from harness.plan.model import (
    ClusterSpec,
    ConsumerSpec,
    DrainSpec,
    Expectation,
    ModeSpec,
    NemesisSpec,
    Plan,
    ProducerSpec,
    SettleSpec,
    Step,
    TopicSpec,
    WorkloadSpec,
)
from harness.plan.targets import MAPPING_KINDS, SCALAR_KINDS, Target

_TOPIC_NAME = re.compile(r"^[A-Za-z0-9._-]{1,249}$")
_EXPECT = re.compile(r"^\s*(==|!=|>=|<=|>|<)\s*(\d+)\s*$")
_STEP_NAME = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
# Free-form maps: an override path reaching one of these takes its remainder as one key.
_FREEFORM = {("cluster", "switches"), ("cluster", "topics", "*", "configs")}
_TIMING = ("at", "after", "when")
_STEP_KEYS = ("name", "action", "at", "after", "when", "timeout", "on_timeout", "duration",
              "target", "peers", "from", "to")
MAX_SECONDS = 86_400.0
MAX_TIMEOUT = 3_600.0
# Random mode draws from these (start/resume/heal are the schedule's own business).
RANDOM_KINDS = ("partition", "isolate", "latency", "bandwidth", "kill", "stop", "restart",
                "pause", "disk-stall", "elect-preferred")
RANDOM_TARGETS = ("leader", "follower", "followers", "random", "majority", "minority", "all",
                  "controller")


def load_plan(path: str | Path, overrides: Mapping[str, str] | None = None) -> Plan:
    """Read, override and validate the plan at `path`. Raises PlanError."""
    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise PlanError(source, None, "", f"cannot read plan: {e}") from e
    return parse_plan(text, source, overrides)


def mode_overrides(plan: Plan, mode: str) -> dict[str, str]:
    """The overrides that select `mode` of `plan`; PlanError naming the plan's modes if unknown."""
    if mode not in plan.modes:
        known = ", ".join(plan.modes) or "none"
        raise PlanError(plan.source, None, "modes", f"no mode {mode!r} (plan has: {known})"
                        f"{_suggest(mode, plan.modes)}")
    return dict(plan.modes[mode].overrides)


def parse_plan(text: str, source: str = "<plan>", overrides: Mapping[str, str] | None = None,
               *, check_modes: bool = True) -> Plan:
    """Like load_plan, for plan text already in memory (`source` names it in errors).
    check_modes: also load the plan once per mode, so a mode's bad override is reported."""
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        line = mark.line + 1 if mark else None
        raise PlanError(source, line, "", f"not valid YAML: {e.problem or e.context}") from e
    except yaml.YAMLError as e:
        raise PlanError(source, None, "", f"not valid YAML: {e}") from e
    if root is None:
        raise PlanError(source, 1, "", "the plan is empty")
    b = _Builder(source)
    for key, value in (overrides or {}).items():
        root = b.apply_override(root, key, value)
    plan = b.plan(root, dict(overrides or {}))
    if check_modes:
        for mode in plan.modes.values():
            try:
                parse_plan(text, source, {**mode.overrides, **(overrides or {})},
                           check_modes=False)
            except PlanError as e:
                where = f"modes.{mode.name}" + (f" ({e.origin})" if e.origin else "")
                raise PlanError(source, e.line, e.field, e.message, origin=where) from e
    return plan


def parse_overrides(items: Iterable[str]) -> dict[str, str]:
    """`["a.b=1", ...]` from `--set` into {"a.b": "1"}; raises PlanError on a missing '='."""
    out: dict[str, str] = {}
    for item in items:
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise PlanError("--set", None, "", f"expected key=value, got {item!r}")
        out[key.strip()] = value
    return out


def _join(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


def _describe(node: Node) -> str:
    if isinstance(node, MappingNode):
        return "a mapping"
    if isinstance(node, SequenceNode):
        return "a list"
    return repr(node.value) if node.value != "" else "nothing"


def _suggest(word: str, known: Iterable[str]) -> str:
    close = difflib.get_close_matches(word, list(known), n=1)
    return f"; did you mean '{close[0]}'?" if close else ""


class _Builder:
    def __init__(self, source: str) -> None:
        self.source = source
        self.ctor = SafeConstructor()
        self.partitions: dict[str, int] = {}  # name -> replication factor
        self.brokers: tuple[int, ...] = ()

    # ---------- errors and scalars ----------
    def error(self, node: Node, path: str, message: str) -> PlanError:
        mark = node.start_mark
        if mark.line < 0:  # a node made from --set
            return PlanError(self.source, None, path, message, origin=mark.name)
        return PlanError(self.source, mark.line + 1, path, message)

    def scalar(self, node: Node, path: str, what: str) -> Any:
        if not isinstance(node, ScalarNode):
            raise self.error(node, path, f"expected {what}, got {_describe(node)}")
        try:
            return self.ctor.construct_object(node)
        except ConstructorError as e:
            raise self.error(node, path, f"bad value: {e.problem}") from e

    def int_(self, node: Node, path: str, lo: float | None = None, hi: float | None = None
             ) -> int:
        v = self.scalar(node, path, "an integer")
        if not isinstance(v, int) or isinstance(v, bool):
            raise self.error(node, path, f"expected an integer, got {_describe(node)}")
        return int(self._range(node, path, v, lo, hi))

    def num(self, node: Node, path: str, lo: float | None = None, hi: float | None = None,
            positive: bool = False) -> float:
        v = self.scalar(node, path, "a number")
        if not isinstance(v, int | float) or isinstance(v, bool):
            raise self.error(node, path, f"expected a number, got {_describe(node)}")
        if positive and v <= 0:
            raise self.error(node, path, f"must be > 0, got {v}")
        return float(self._range(node, path, v, lo, hi))

    def _range(self, node: Node, path: str, v: float, lo: float | None, hi: float | None
               ) -> float:
        if lo is not None and v < lo:
            raise self.error(node, path, f"must be >= {lo:g}, got {v}")
        if hi is not None and v > hi:
            raise self.error(node, path, f"must be <= {hi:g}, got {v}")
        return v

    def bool_(self, node: Node, path: str) -> bool:
        v = self.scalar(node, path, "true or false")
        if not isinstance(v, bool):
            raise self.error(node, path, f"expected true or false, got {_describe(node)}")
        return v

    def str_(self, node: Node, path: str) -> str:
        v = self.scalar(node, path, "a string")
        if not isinstance(v, str):
            raise self.error(node, path, f"expected a string, got {_describe(node)}")
        return v

    def enum(self, node: Node, path: str, choices: Iterable[str]) -> str:
        choices = tuple(choices)
        v = self.scalar(node, path, f"one of {', '.join(choices)}")
        if str(v) not in choices or isinstance(v, bool):
            raise self.error(node, path, f"expected one of {', '.join(choices)}, got "
                             f"{_describe(node)}{_suggest(str(v), choices)}")
        return str(v)

    def seq(self, node: Node, path: str) -> list[Node]:
        if not isinstance(node, SequenceNode):
            raise self.error(node, path, f"expected a list, got {_describe(node)}")
        return list(node.value)

    def mapping(self, node: Node, path: str, known: Iterable[str],
                required: Iterable[str] = ()) -> dict[str, tuple[Node, Node]]:
        """key -> (key node, value node); unknown, duplicate and missing keys are errors."""
        if not isinstance(node, MappingNode):
            raise self.error(node, path or "plan", f"expected a mapping, got {_describe(node)}")
        known = tuple(known)
        out: dict[str, tuple[Node, Node]] = {}
        for k, v in node.value:
            if not isinstance(k, ScalarNode):
                raise self.error(k, path, "keys must be plain names")
            key = str(k.value)
            if key in out:
                raise self.error(k, _join(path, key), "duplicate key")
            if key not in known:
                raise self.error(k, _join(path, key), f"unknown key (known: {', '.join(known)})"
                                 f"{_suggest(key, known)}")
            out[key] = (k, v)
        for r in required:
            if r not in out:
                raise self.error(node, _join(path, r), "missing (required)")
        return out

    def str_map(self, node: Node, path: str) -> dict[str, str]:
        if not isinstance(node, MappingNode):
            raise self.error(node, path, f"expected a mapping, got {_describe(node)}")
        out: dict[str, str] = {}
        for k, v in node.value:
            key = str(self.scalar(k, path, "a name"))
            if key in out:
                raise self.error(k, _join(path, key), "duplicate key")
            val = self.scalar(v, _join(path, key), "a value")
            if val is None:
                raise self.error(v, _join(path, key), "needs a value")
            out[key] = str(val).lower() if isinstance(val, bool) else str(val)
        return out

    # ---------- overrides ----------
    def apply_override(self, root: Node, key: str, value: str) -> Node:
        mark = Mark(f"--set {key}={value}", 0, -1, 0, None, None)
        try:
            new = yaml.compose(value, Loader=yaml.SafeLoader) if value.strip() else None
        except yaml.YAMLError as e:
            raise PlanError(self.source, None, key, f"value is not valid YAML: {e}",
                            origin=mark.name) from e
        if new is None:
            new = ScalarNode("tag:yaml.org,2002:str", value)
        for n in _walk(new):
            n.start_mark = n.end_mark = mark
        segments = key.split(".")
        if not key or any(s == "" for s in segments):
            raise PlanError(self.source, None, key, "empty segment in path", origin=mark.name)
        node, path, shape = root, "", []
        for i, seg in enumerate(segments):
            last = i == len(segments) - 1
            if tuple(shape) in _FREEFORM:
                seg, last = ".".join(segments[i:]), True
            if isinstance(node, SequenceNode):
                if not seg.isdigit() or int(seg) >= len(node.value):
                    raise PlanError(self.source, None, path, f"no item {seg!r}: the list has "
                                    f"{len(node.value)} item(s), 0-based", origin=mark.name)
                if last:
                    node.value[int(seg)] = new
                    return root
                node, path = node.value[int(seg)], _join(path, int(seg))
                shape.append("*")
                continue
            if not isinstance(node, MappingNode):
                raise PlanError(self.source, None, path or key,
                                f"is {_describe(node)}, has no key {seg!r}", origin=mark.name)
            for j, (k, v) in enumerate(node.value):
                if isinstance(k, ScalarNode) and k.value == seg:
                    if last:
                        node.value[j] = (k, new)
                        return root
                    node = v
                    break
            else:
                # A new key: whether it is allowed is the schema's call (it reports the
                # unknown key with this override as origin).
                child = new if last else MappingNode("tag:yaml.org,2002:map", [])
                k = ScalarNode("tag:yaml.org,2002:str", seg)
                k.start_mark = k.end_mark = child.start_mark = child.end_mark = mark
                node.value.append((k, child))
                if last:
                    return root
                node = child
            path = _join(path, seg)
            shape.append(seg)
        return root

    # ---------- the plan ----------
    def plan(self, root: Node, overrides: dict[str, str]) -> Plan:
        m = self.mapping(root, "", ("name", "description", "cluster", "workload", "faults",
                                    "nemesis", "expected", "settle", "drain", "modes",
                                    "title"),
                         required=("cluster", "workload"))
        name = Path(self.source).stem
        if "name" in m:
            name = self.str_(m["name"][1], "name")
        description = self.str_(m["description"][1], "description") if "description" in m else ""
        title = self.str_(m["title"][1], "title").strip() if "title" in m else ""
        cluster = self.cluster(m["cluster"][1], "cluster")
        workload = self.workload(m["workload"][1], "workload")
        faults = self.faults(m["faults"][1], "faults") if "faults" in m else ()
        nemesis = NemesisSpec()
        if "nemesis" in m:
            nemesis = self.nemesis(m["nemesis"][1], "nemesis", cluster)
            if nemesis.mode == "random" and faults:
                raise self.error(m["faults"][0], "faults",
                                 "must be empty with nemesis.mode random (the seed draws them)")
        expected = self.expected(m["expected"][1], "expected") if "expected" in m else {}
        settle, drain = SettleSpec(), DrainSpec()
        if "settle" in m:
            s = self.mapping(m["settle"][1], "settle", ("timeout_s",))
            if "timeout_s" in s:
                settle = SettleSpec(self.num(s["timeout_s"][1], "settle.timeout_s",
                                             hi=MAX_TIMEOUT, positive=True))
        if "drain" in m:
            d = self.mapping(m["drain"][1], "drain", ("timeout_s", "idle_s"))
            kw = {k: self.num(v, f"drain.{k}", hi=MAX_TIMEOUT, positive=True)
                  for k, (_, v) in d.items()}
            drain = DrainSpec(**kw)
        modes = self.modes(m["modes"][1], "modes") if "modes" in m else {}
        return Plan(name=name, description=description.strip(), source=self.source,
                    cluster=cluster, workload=workload, faults=faults, nemesis=nemesis,
                    expected=expected, settle=settle, drain=drain, overrides=overrides,
                    modes=modes, title=title)

    def modes(self, node: Node, path: str) -> dict[str, ModeSpec]:
        """Each mode as overrides: switches -> cluster.switches.<k>, set -> <path>, and
        expected -> the whole `expected` section (a mode says everything it expects)."""
        if not isinstance(node, MappingNode) or not node.value:
            raise self.error(node, path, "expected a mapping of mode name -> mode")
        out: dict[str, ModeSpec] = {}
        for knode, vnode in node.value:
            name = str(self.scalar(knode, path, "a mode name"))
            mpath = _join(path, name)
            if not _STEP_NAME.match(name):
                raise self.error(knode, mpath, "use 1-64 of [A-Za-z0-9._-] for a mode name")
            if name in out:
                raise self.error(knode, mpath, "duplicate mode")
            m = self.mapping(vnode, mpath, ("description", "switches", "set", "expected",
                                            "lost_by_acks", "diverged_offsets"))
            ov: dict[str, str] = {}
            if "switches" in m:
                for k, v in self.str_map(m["switches"][1], f"{mpath}.switches").items():
                    ov[f"cluster.switches.{k}"] = v
            if "set" in m:
                snode = m["set"][1]
                if not isinstance(snode, MappingNode):
                    raise self.error(snode, f"{mpath}.set", "expected a mapping path -> value")
                for k, v in snode.value:
                    key = str(self.scalar(k, f"{mpath}.set", "a dotted path"))
                    ov[key] = _yaml_text(self.ctor.construct_object(v, deep=True))
            lost: dict[str, Expectation] = {}
            if "expected" in m:
                enode = m["expected"][1]
                exp = self.expected(enode, f"{mpath}.expected")
                ov["expected"] = _yaml_text({k: str(e) for k, e in exp.items()})
            if "lost_by_acks" in m:
                lnode = m["lost_by_acks"][1]
                lpath = f"{mpath}.lost_by_acks"
                if not isinstance(lnode, MappingNode):
                    raise self.error(lnode, lpath, "expected a mapping acks -> expression")
                for k, v in lnode.value:
                    acks = self.acks(k, lpath)
                    e = _EXPECT.match(str(self.scalar(v, _join(lpath, acks), "an expression")))
                    if e is None:
                        raise self.error(v, _join(lpath, acks),
                                         f'expected an expression like "== 0", got '
                                         f"{_describe(v)}")
                    lost[acks] = Expectation(f"lost:{acks}", e.group(1), int(e.group(2)))
            diverged = None
            if "diverged_offsets" in m:
                dnode = m["diverged_offsets"][1]
                e = _EXPECT.match(str(self.scalar(dnode, f"{mpath}.diverged_offsets",
                                                  "an expression")))
                if e is None:
                    raise self.error(dnode, f"{mpath}.diverged_offsets",
                                     f'expected an expression like "> 0", got {_describe(dnode)}')
                diverged = Expectation("diverged-offsets", e.group(1), int(e.group(2)))
            desc = self.str_(m["description"][1], f"{mpath}.description") \
                if "description" in m else ""
            out[name] = ModeSpec(name, desc.strip(), ov, lost, diverged)
        return out

    def cluster(self, node: Node, path: str) -> ClusterSpec:
        m = self.mapping(node, path, ("brokers", "controllers", "topics", "switches"),
                         required=("topics",))
        brokers = self.int_(m["brokers"][1], f"{path}.brokers", 1, 99) if "brokers" in m else 3
        controllers = (self.int_(m["controllers"][1], f"{path}.controllers", 1, 9)
                       if "controllers" in m else 1)
        self.brokers = tuple(range(1, brokers + 1))
        topics: list[TopicSpec] = []
        tpath = f"{path}.topics"
        items = self.seq(m["topics"][1], tpath)
        if not items:
            raise self.error(m["topics"][1], tpath, "needs at least one topic")
        for i, item in enumerate(items):
            t = self.topic(item, _join(tpath, i), brokers)
            if any(t.name == o.name for o in topics):
                raise self.error(item, _join(tpath, i) + ".name", f"topic {t.name!r} twice")
            topics.append(t)
        switches = self.str_map(m["switches"][1], f"{path}.switches") if "switches" in m else {}
        spec = ClusterSpec(brokers, controllers, tuple(topics), switches)
        self.partitions = spec.partitions()
        return spec

    def topic(self, node: Node, path: str, brokers: int) -> TopicSpec:
        m = self.mapping(node, path, ("name", "partitions", "replication_factor",
                                      "min_insync_replicas", "configs"), required=("name",))
        name = self.str_(m["name"][1], f"{path}.name")
        if not _TOPIC_NAME.match(name):
            raise self.error(m["name"][1], f"{path}.name",
                             f"bad topic name {name!r}: use 1-249 of [A-Za-z0-9._-]")
        parts = (self.int_(m["partitions"][1], f"{path}.partitions", 1, 1000)
                 if "partitions" in m else 1)
        rf = min(3, brokers)
        if "replication_factor" in m:
            rf_node = m["replication_factor"][1]
            rf = self.int_(rf_node, f"{path}.replication_factor", 1)
            if rf > brokers:
                raise self.error(rf_node, f"{path}.replication_factor",
                                 f"{rf} is more than the cluster's {brokers} broker(s)")
        misr = 1
        if "min_insync_replicas" in m:
            misr_node = m["min_insync_replicas"][1]
            misr = self.int_(misr_node, f"{path}.min_insync_replicas", 1)
            if misr > rf:
                raise self.error(misr_node, f"{path}.min_insync_replicas",
                                 f"{misr} is more than replication_factor {rf}")
        configs = self.str_map(m["configs"][1], f"{path}.configs") if "configs" in m else {}
        return TopicSpec(name, parts, rf, misr, configs)

    def partition_ref(self, node: Node, path: str) -> str:
        p = str(self.scalar(node, path, "a partition like t-0"))
        if p not in self.partitions:
            known = ", ".join(sorted(self.partitions))
            raise self.error(node, path, f"unknown partition {p!r} (plan has: {known})"
                             f"{_suggest(p, self.partitions)}")
        return p

    def partition_list(self, node: Node, path: str) -> tuple[str, ...]:
        refs = tuple(self.partition_ref(n, _join(path, i))
                     for i, n in enumerate(self.seq(node, path)))
        if len(set(refs)) != len(refs):
            raise self.error(node, path, "a partition is listed twice")
        return refs

    def broker_id(self, node: Node, path: str) -> int:
        b = self.int_(node, path)
        if b not in self.brokers:
            raise self.error(node, path, f"no broker {b}: brokers are 1..{len(self.brokers)}")
        return b

    def workload(self, node: Node, path: str) -> WorkloadSpec:
        m = self.mapping(node, path, ("producers", "consumers"), required=("producers",))
        pnode = m["producers"][1]
        ppath = f"{path}.producers"
        if isinstance(pnode, SequenceNode):
            producers = tuple(self.producer(n, _join(ppath, i)) for i, n in enumerate(pnode.value))
            if not producers:
                raise self.error(pnode, ppath, "needs at least one producer group")
        else:
            producers = (self.producer(pnode, ppath),)
        consumers = ConsumerSpec()
        if "consumers" in m:
            cpath = f"{path}.consumers"
            c = self.mapping(m["consumers"][1], cpath, ("count", "poll_interval_ms", "partitions"))
            consumers = ConsumerSpec(
                count=self.int_(c["count"][1], f"{cpath}.count", 0, 1000) if "count" in c else 1,
                poll_interval_ms=(self.int_(c["poll_interval_ms"][1], f"{cpath}.poll_interval_ms",
                                            1, 60_000) if "poll_interval_ms" in c else 100),
                partitions=(self.partition_list(c["partitions"][1], f"{cpath}.partitions")
                            if "partitions" in c else ()),
            )
        return WorkloadSpec(producers, consumers)

    def producer(self, node: Node, path: str) -> ProducerSpec:
        m = self.mapping(node, path, ("count", "acks", "rate", "values", "duration_s",
                                      "partitions", "idempotence", "timeout_ms"))
        kw: dict[str, Any] = {}
        if "count" in m:
            kw["count"] = self.int_(m["count"][1], f"{path}.count", 1, 1000)
        if "acks" in m:
            kw["acks"] = self.acks(m["acks"][1], f"{path}.acks")
        if "rate" in m:
            kw["rate"] = self.num(m["rate"][1], f"{path}.rate", hi=1e6, positive=True)
        if "values" in m and "duration_s" in m:
            raise self.error(m["duration_s"][0], f"{path}.duration_s",
                             "give either values or duration_s, not both")
        if "values" in m:
            kw["values"] = self.int_(m["values"][1], f"{path}.values", 1, 10**9)
        elif "duration_s" in m:
            kw["duration_s"] = self.num(m["duration_s"][1], f"{path}.duration_s",
                                        hi=MAX_SECONDS, positive=True)
        else:
            raise self.error(node, f"{path}.values",
                             "missing: give values (how many) or duration_s (how long)")
        if "partitions" in m:
            kw["partitions"] = self.partition_list(m["partitions"][1], f"{path}.partitions")
        if "idempotence" in m:
            kw["idempotence"] = self.bool_(m["idempotence"][1], f"{path}.idempotence")
        if "timeout_ms" in m:
            kw["timeout_ms"] = self.int_(m["timeout_ms"][1], f"{path}.timeout_ms", 1, 3_600_000)
        return ProducerSpec(**kw)

    def acks(self, node: Node, path: str) -> str:
        v = self.scalar(node, path, 'acks: "0", "1" or "all"')
        text = "all" if str(v) in ("-1", "all") and not isinstance(v, bool) else str(v)
        if isinstance(v, bool) or text not in ACKS:
            raise self.error(node, path, f'acks must be "0", "1" or "all" (or -1), got '
                             f"{_describe(node)}")
        return text

    # ---------- faults ----------
    def faults(self, node: Node, path: str) -> tuple[Step, ...]:
        steps: list[Step] = []
        for i, item in enumerate(self.seq(node, path)):
            step = self.step(item, _join(path, i), i, [s.name for s in steps])
            if any(s.name == step.name for s in steps):
                raise self.error(item, _join(path, i) + ".name", f"step name {step.name!r} twice")
            steps.append(step)
        return tuple(steps)

    def step(self, node: Node, path: str, index: int, earlier: list[str]) -> Step:
        if not isinstance(node, MappingNode):
            raise self.error(node, path, f"expected a step (a mapping), got {_describe(node)}")
        raw = {str(k.value): (k, v) for k, v in node.value if isinstance(k, ScalarNode)}
        if "action" not in raw:
            raise self.error(node, f"{path}.action", "missing (required)")
        action_node = raw["action"][1]
        action = self.enum(action_node, f"{path}.action", ACTIONS)
        spec = ACTIONS[action]
        known = list(_STEP_KEYS) + list(spec.params)
        m = self.mapping(node, path, known)
        # Keys that exist but do not fit this action get a message naming the action.
        for key, takes in (("target", spec.target), ("peers", spec.peers),
                           ("from", spec.link), ("to", spec.link)):
            if key in m and not takes:
                raise self.error(m[key][0], _join(path, key), f"action '{action}' takes no {key}")
        if spec.target and "target" not in m:
            raise self.error(node, f"{path}.target", f"action '{action}' needs a target")
        if spec.link:
            for key in ("from", "to"):
                if key not in m:
                    raise self.error(node, _join(path, key),
                                     f"action '{action}' needs from and to (one direction)")
        name = f"{action}-{index + 1}"
        if "name" in m:
            name = self.str_(m["name"][1], f"{path}.name")
            if not _STEP_NAME.match(name):
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
        return Step(**kw)

    def timing(self, node: Node, path: str, m: dict[str, tuple[Node, Node]]) -> dict[str, Any]:
        given = [k for k in _TIMING if k in m]
        if not given:
            raise self.error(node, path, "say when the step runs: at, after or when")
        if len(given) > 1:
            raise self.error(m[given[1]][0], _join(path, given[1]),
                             f"give only one of at, after, when (also has {given[0]})")
        kw: dict[str, Any] = {}
        key = given[0]
        knode = m[key][1]
        if key in ("at", "after"):
            kw[key] = self.num(knode, _join(path, key), 0, MAX_SECONDS)
            for extra in ("timeout", "on_timeout"):
                if extra in m:
                    raise self.error(m[extra][0], _join(path, extra), "only with 'when'")
            return kw
        text = self.str_(knode, f"{path}.when")
        try:
            kw["when"] = parse_condition(text, self.partitions, self.brokers)
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

    def step_targets(self, path: str, m: dict[str, tuple[Node, Node]], spec: ActionSpec,
                     earlier: list[str]) -> dict[str, Any]:
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

    def target(self, node: Node, path: str, allowed: tuple[str, ...], earlier: list[str]
               ) -> Target:
        if isinstance(node, ScalarNode):
            v = self.scalar(node, path, "a target")
            if isinstance(v, int) and not isinstance(v, bool):
                return Target("broker", brokers=(self.broker_id(node, path),))
            if not isinstance(v, str) or v not in SCALAR_KINDS:
                raise self.error(node, path, f"unknown target {_describe(node)} (a word: "
                                 f"{', '.join(SCALAR_KINDS)}; or a mapping: "
                                 f"{', '.join(MAPPING_KINDS)}){_suggest(str(v), SCALAR_KINDS)}")
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
        if kind == "brokers":
            items = self.seq(vnode, vpath)
            if not items:
                raise self.error(vnode, vpath, "needs at least one broker")
            return Target("brokers", brokers=tuple(self.broker_id(n, _join(vpath, i))
                                                   for i, n in enumerate(items)))
        step = self.str_(vnode, vpath)
        if step not in earlier:
            raise self.error(vnode, vpath, f"no earlier step named {step!r}"
                             f"{_suggest(step, earlier)}")
        return Target("step", step=step)

    def params(self, spec: ActionSpec, given: dict[str, tuple[Node, Node]], node: Node,
               path: str) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for pname, p in spec.params.items():
            if pname not in given:
                if p.required:
                    raise self.error(node, _join(path, pname),
                                     f"action '{spec.name}' needs {pname}")
                out[pname] = p.default
                continue
            out[pname] = self.param(p, given[pname][1], _join(path, pname))
        return out

    def param(self, p: Param, node: Node, path: str) -> Any:
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
        items = self.seq(node, path)  # brokers
        ids = tuple(self.broker_id(n, _join(path, i)) for i, n in enumerate(items))
        if not ids or len(set(ids)) != len(ids):
            raise self.error(node, path, "needs distinct broker ids, at least one")
        return ids

    # ---------- nemesis and expectations ----------
    def nemesis(self, node: Node, path: str, cluster: ClusterSpec) -> NemesisSpec:
        random_keys = ("seed", "kinds", "targets", "interval_s", "fault_duration_s", "start_s",
                       "duration_s", "partitions", "params")
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
        kinds = tuple(self.enum(n, _join(f"{path}.kinds", i), RANDOM_KINDS)
                      for i, n in enumerate(self.seq(kinds_node, f"{path}.kinds")))
        targets_node = m["targets"][1]
        targets = tuple(self.enum(n, _join(f"{path}.targets", i), RANDOM_TARGETS)
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
        if "partitions" in m:
            kw["partitions"] = self.partition_list(m["partitions"][1], f"{path}.partitions")
        if "params" in m:
            ppath = f"{path}.params"
            pm = self.mapping(m["params"][1], ppath, kinds)
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
                raise self.error(kinds_node.value[i], _join(f"{path}.kinds", i),
                                 f"no target in {list(targets)} suits '{kind}' on this cluster")
        return spec

    def expected(self, node: Node, path: str) -> dict[str, Expectation]:
        m = self.mapping(node, path, ANOMALIES)
        out: dict[str, Expectation] = {}
        for anomaly, (_, vnode) in m.items():
            v = self.scalar(vnode, _join(path, anomaly), 'an expression like "== 0" or "> 0"')
            if isinstance(v, int) and not isinstance(v, bool) and v >= 0:
                out[anomaly] = Expectation(anomaly, "==", v)
                continue
            match = _EXPECT.match(str(v)) if isinstance(v, str) else None
            if match is None:
                raise self.error(vnode, _join(path, anomaly),
                                 f'expected an expression like "== 0" or "> 0", got '
                                 f"{_describe(vnode)}")
            out[anomaly] = Expectation(anomaly, match.group(1), int(match.group(2)))
        return out


def _yaml_text(value: Any) -> str:
    """A value as one line of YAML, the way a --set value is written."""
    text = yaml.safe_dump(value, default_flow_style=True, width=1 << 20).strip()
    return text[:-3].strip() if text.endswith("\n...") or text.endswith("...") else text


def _walk(node: Node) -> Iterable[Node]:
    yield node
    if isinstance(node, SequenceNode):
        for n in node.value:
            yield from _walk(n)
    elif isinstance(node, MappingNode):
        for k, v in node.value:
            yield from _walk(k)
            yield from _walk(v)
