"""The nightly suite file (chaos_plans/nightly.yaml): load and validate it, with file:line errors.

Contract:
- `load_suite(path)` returns a `Suite` or raises `PlanError` rendering as one line
  "<file>:<line>: <field>: <problem>". The YAML node helpers are the plan loader's own
  (`harness.plan.yamlnodes.NodeReader`), so suite and plan errors look the same.
- Entry types:
  - `{plan: PATH, seeds?: N, duration?: S, set?: {key: value}, mode?: legacy|fixed, name?: X}`:
    PATH is relative to the suite file; the plan must load (its error is reported at the
    entry's line). Each entry runs `seeds` times (default 1), each with a fresh random seed.
    `mode` is only for a catalogue scenario (chaos_plans/scenarios/L<n>.yaml): such an entry
    is the same as `{scenario: L<n>, mode: ...}`.
  - `{scenario: ID, mode: legacy|fixed, seeds?: N, set?: {key: value}, name?: X}`: a documented
    scenario (harness.scenario.catalog), run as `highwater scenario run ID --mode M --repeat 1`
    once per seed; the id and mode are checked against the catalogue now. Label `ID-mode`.
  - `{min-isr: {min_insync: [1, 2, 3], acks: ["0", "1", "all"]}}`: the min.insync.replicas
    matrix, run as `highwater scenario min-isr` (which always runs every acks level).
  - `{rdkafka-suite: {timeout?: S, tests?: "0001,0002"}}`: librdkafka's own integration tests,
    run as `highwater bench rdkafka-suite`; as expected when no test fails outside its known
    gaps (features not built yet).
- `budget` (optional, e.g. "30m", "1h30m", "90s", or seconds) is the default time budget.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from yaml.nodes import Node

from harness.plan.errors import PlanError

# The plan loader's YAML-with-line-numbers helpers; reused, not copied.
from harness.plan.loader import load_plan
from harness.plan.yamlnodes import NodeReader

MODES = ("legacy", "fixed")
MIN_ISR_ACKS = ("0", "1", "all")
MAX_SEEDS = 100
MAX_DURATION_S = 86_400.0
_NUM = r"(\d+(?:\.\d+)?)"
_BUDGET = re.compile(rf"^\s*(?:{_NUM}h)?\s*(?:{_NUM}m)?\s*(?:{_NUM}s)?\s*$")
_NAME = re.compile(r"^[A-Za-z0-9._-]{1,64}$")


@dataclass(frozen=True)
class PlanEntry:
    """Run one plan `seeds` times (fresh seeds), optionally in a scenario mode."""

    line: int
    plan: Path  # resolved
    plan_name: str  # the plan's own `name` (its store directory)
    label: str  # the summary's row key: name, or plan name [+ "-" + mode]
    seeds: int = 1
    duration_s: float | None = None
    overrides: dict[str, str] = field(default_factory=dict)
    mode: str | None = None
    random_nemesis: bool = False

    @property
    def kind(self) -> str:
        return "plan"


@dataclass(frozen=True)
class MinIsrEntry:
    """The min.insync.replicas x acks matrix (runs as `highwater scenario min-isr`)."""

    line: int
    min_insync: tuple[int, ...] = (1, 2, 3)
    acks: tuple[str, ...] = MIN_ISR_ACKS
    label: str = "min-isr"
    seeds: int = 1
    duration_s: float | None = None

    @property
    def kind(self) -> str:
        return "min-isr"


@dataclass(frozen=True)
class ScenarioEntry:
    """A catalogue scenario in one mode (runs as `highwater scenario run ID --mode M`)."""

    line: int
    scenario_id: str
    mode: str
    plan: Path  # the scenario's plan file
    label: str
    seeds: int = 1
    overrides: dict[str, str] = field(default_factory=dict)
    duration_s: float | None = None  # scenarios run their plan's own duration

    @property
    def kind(self) -> str:
        return "scenario"


@dataclass(frozen=True)
class RdkafkaSuiteEntry:
    """librdkafka's integration suite (runs as `highwater bench rdkafka-suite`)."""

    line: int
    timeout_s: float = 300.0
    tests: str | None = None
    label: str = "rdkafka-suite"
    seeds: int = 1
    duration_s: float | None = None

    @property
    def kind(self) -> str:
        return "rdkafka-suite"


Entry = PlanEntry | ScenarioEntry | MinIsrEntry | RdkafkaSuiteEntry


@dataclass(frozen=True)
class Suite:
    source: str
    name: str
    entries: tuple[Entry, ...]
    budget_s: float | None = None


def parse_budget(text: str | float | int, where: str = "--budget") -> float:
    """'30m', '1h30m', '90s', '1.5h' or a bare number of seconds -> seconds (> 0)."""
    if isinstance(text, bool):
        raise ValueError(f"{where}: expected a duration like 30m, got {text!r}")
    if isinstance(text, int | float):
        seconds = float(text)
    else:
        s = str(text).strip()
        if re.fullmatch(r"\d+(\.\d+)?", s):
            seconds = float(s)
        else:
            m = _BUDGET.match(s)
            if not s or not m or not any(m.groups()):
                raise ValueError(
                    f"{where}: cannot parse {text!r}; use e.g. 30m, 1h30m, 90s or seconds"
                )
            h, mi, se = (float(g or 0) for g in m.groups())
            seconds = h * 3600 + mi * 60 + se
    if seconds <= 0:
        raise ValueError(f"{where}: must be > 0, got {text!r}")
    return seconds


def load_suite(path: str | Path) -> Suite:
    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise PlanError(source, None, "", f"cannot read the suite: {e}") from e
    return parse_suite(text, source, Path(path).resolve().parent)


def parse_suite(text: str, source: str = "<suite>", base: Path | None = None) -> Suite:
    """Like load_suite for text in memory; plan paths resolve against `base` (default cwd)."""
    base = base or Path.cwd()
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        raise PlanError(source, mark.line + 1 if mark else None, "",
                        f"not valid YAML: {e.problem or e.context}") from e
    except yaml.YAMLError as e:
        raise PlanError(source, None, "", f"not valid YAML: {e}") from e
    if root is None:
        raise PlanError(source, 1, "", "the suite is empty")
    b = NodeReader(source)
    top = b.mapping(root, "", ("name", "description", "budget", "entries"), ("entries",))
    name = b.str_(top["name"][1], "name") if "name" in top else Path(source).stem
    if "description" in top:
        b.str_(top["description"][1], "description")
    budget = None
    if "budget" in top:
        node = top["budget"][1]
        try:
            budget = parse_budget(b.scalar(node, "budget", "a duration like 30m"), "budget")
        except ValueError as e:
            raise b.error(node, "budget", str(e).removeprefix("budget: ")) from e
    entries_node = top["entries"][1]
    items = b.seq(entries_node, "entries")
    if not items:
        raise b.error(entries_node, "entries", "the suite has no entries")
    entries = [_entry(b, node, f"entries[{i}]", base) for i, node in enumerate(items)]
    seen: dict[str, int] = {}
    for e, node in zip(entries, items, strict=True):
        if e.label in seen:
            raise b.error(node, "name", f"{e.label!r} already names the entry on line "
                          f"{seen[e.label]}; give this one a distinct `name`")
        seen[e.label] = e.line
    return Suite(source, name, tuple(entries), budget)


def _entry(b: NodeReader, node: Node, path: str, base: Path) -> Entry:
    kinds = ("plan", "scenario", "min-isr", "rdkafka-suite")
    keys = (*kinds, "seeds", "duration", "set", "mode", "name")
    m = b.mapping(node, path, keys)
    line = node.start_mark.line + 1
    if sum(k in m for k in kinds) != 1:
        raise b.error(node, path, "an entry has exactly one of `plan`, `scenario`, `min-isr` "
                      "or `rdkafka-suite`")
    seeds = b.int_(m["seeds"][1], f"{path}.seeds", 1, MAX_SEEDS) if "seeds" in m else 1
    duration = (b.num(m["duration"][1], f"{path}.duration", hi=MAX_DURATION_S, positive=True)
                if "duration" in m else None)
    label = None
    if "name" in m:
        label = b.str_(m["name"][1], f"{path}.name")
        if not _NAME.match(label):
            raise b.error(m["name"][1], f"{path}.name",
                          f"use 1-64 letters, digits, '.', '_' or '-', got {label!r}")
    if "rdkafka-suite" in m:
        for k in ("set", "mode", "seeds", "duration"):
            if k in m:
                raise b.error(m[k][0], f"{path}.{k}", "not valid for an rdkafka-suite entry")
        return _rdkafka_suite(b, m["rdkafka-suite"][1], f"{path}.rdkafka-suite", line, label)
    if "min-isr" in m:
        for k in ("set", "mode"):
            if k in m:
                raise b.error(m[k][0], f"{path}.{k}", "not valid for a min-isr entry")
        return _min_isr(b, m["min-isr"][1], f"{path}.min-isr", line, label, seeds, duration)
    overrides = b.str_map(m["set"][1], f"{path}.set") if "set" in m else {}
    mode = b.enum(m["mode"][1], f"{path}.mode", MODES) if "mode" in m else None
    if "scenario" in m:
        id_node = m["scenario"][1]
        return _scenario(b, id_node, b.str_(id_node, f"{path}.scenario"), m, path, line, label,
                         seeds, overrides, mode)
    plan_node = m["plan"][1]
    plan_path = (base / b.str_(plan_node, f"{path}.plan")).resolve()
    if mode is not None:
        from harness.scenario.catalog import SCENARIO_DIR

        if plan_path.parent != SCENARIO_DIR.resolve():
            raise b.error(m["mode"][1], f"{path}.mode",
                          f"only a catalogue scenario ({SCENARIO_DIR}/L<n>.yaml) has modes; "
                          "use `scenario: ID` with `mode`")
        return _scenario(b, plan_node, plan_path.stem, m, path, line, label, seeds, overrides,
                         mode)
    try:
        plan = load_plan(plan_path, overrides)
    except PlanError as e:
        # Point at the suite line that names the plan; keep the plan's own file:line.
        raise b.error(plan_node, f"{path}.plan", f"does not load: {e}") from e
    label = label or (f"{plan.name}-{mode}" if mode else plan.name)
    return PlanEntry(line, plan_path, plan.name, label, seeds, duration, overrides, mode,
                     plan.nemesis.mode == "random")


def _scenario(b: NodeReader, node: Node, scenario_id: str, m: dict, path: str, line: int,
              label: str | None, seeds: int, overrides: dict[str, str],
              mode: str | None) -> ScenarioEntry:
    from harness.scenario.catalog import ScenarioError, find

    if mode is None:
        raise b.error(node, f"{path}.mode", "a scenario entry needs `mode: legacy|fixed`")
    if "duration" in m:
        raise b.error(m["duration"][0], f"{path}.duration",
                      "not valid for a scenario entry (it runs its plan's own duration)")
    try:
        sc = find(scenario_id)
        if mode not in sc.modes:
            raise ScenarioError(f"{sc.id} has no mode {mode!r} (modes: {', '.join(sc.modes)})")
        sc.load(mode, overrides)
    except (ScenarioError, PlanError) as e:
        raise b.error(node, f"{path}.scenario", f"does not load: {e}") from e
    return ScenarioEntry(line, sc.id, mode, sc.path, label or f"{sc.id}-{mode}", seeds,
                         overrides)


def _min_isr(b: NodeReader, node: Node, path: str, line: int, label: str | None, seeds: int,
             duration: float | None) -> MinIsrEntry:
    if isinstance(node, yaml.ScalarNode) and node.value in ("", "~", "null"):
        return MinIsrEntry(line, label=label or "min-isr", seeds=seeds, duration_s=duration)
    m = b.mapping(node, path, ("min_insync", "acks"))
    mins: tuple[int, ...] = (1, 2, 3)
    acks: tuple[str, ...] = MIN_ISR_ACKS
    if "min_insync" in m:
        items = b.seq(m["min_insync"][1], f"{path}.min_insync")
        mins = tuple(b.int_(n, f"{path}.min_insync[{i}]", 1, 3) for i, n in enumerate(items))
        if not mins:
            raise b.error(m["min_insync"][1], f"{path}.min_insync", "needs at least one value")
    if "acks" in m:
        items = b.seq(m["acks"][1], f"{path}.acks")
        acks = tuple(b.enum(n, f"{path}.acks[{i}]", MIN_ISR_ACKS) for i, n in enumerate(items))
        if not acks:
            raise b.error(m["acks"][1], f"{path}.acks", "needs at least one value")
    return MinIsrEntry(line, mins, acks, label or "min-isr", seeds, duration)


def _rdkafka_suite(b: NodeReader, node: Node, path: str, line: int,
                   label: str | None) -> RdkafkaSuiteEntry:  # fmt: skip
    if isinstance(node, yaml.ScalarNode) and node.value in ("", "~", "null"):
        return RdkafkaSuiteEntry(line, label=label or "rdkafka-suite")
    m = b.mapping(node, path, ("timeout", "tests"))
    timeout = (b.num(m["timeout"][1], f"{path}.timeout", hi=MAX_DURATION_S, positive=True)
               if "timeout" in m else 300.0)
    tests = None
    if "tests" in m:
        tests = b.str_(m["tests"][1], f"{path}.tests")
        if not re.fullmatch(r"\d{4}(,\d{4})*", tests):
            raise b.error(m["tests"][1], f"{path}.tests",
                          f"a comma-separated list of 4-digit test numbers, got {tests!r}")
    return RdkafkaSuiteEntry(line, timeout, tests, label or "rdkafka-suite")
