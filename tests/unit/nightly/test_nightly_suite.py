"""The nightly suite file: the shipped suite loads; every bad input is one file:line error."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.nightly.suite import (
    MinIsrEntry,
    PlanEntry,
    RdkafkaSuiteEntry,
    ScenarioEntry,
    load_suite,
    parse_budget,
    parse_suite,
)
from harness.plan.errors import PlanError

REPO = Path(__file__).resolve().parents[3]
PLANS = REPO / "chaos_plans"


def test_shipped_suite_loads_with_resolved_plans_and_min_isr_entry() -> None:
    suite = load_suite(PLANS / "nightly.yaml")
    plans = [e for e in suite.entries if isinstance(e, PlanEntry)]
    assert [e.label for e in plans][:1] == ["smoke"]  # smoke first
    assert all(e.plan.is_file() for e in plans)
    random_entries = [e for e in plans if e.random_nemesis]
    assert random_entries and all(e.seeds >= 2 for e in random_entries)
    assert any(isinstance(e, MinIsrEntry) for e in suite.entries)
    scenarios = [(e.scenario_id, e.mode) for e in suite.entries if isinstance(e, ScenarioEntry)]
    documented = len(list((PLANS / "scenarios").glob("L*.yaml")))
    fixed = [(f"L{i}", "fixed") for i in range(1, documented + 1)]  # every one
    assert scenarios == [*fixed, ("L3", "legacy"), ("L5", "legacy"), ("L21", "legacy")]
    kinds = [type(e).__name__ for e in suite.entries]
    assert kinds.index("MinIsrEntry") == kinds.index("ScenarioEntry") + 5  # after L1-L5
    assert suite.budget_s == 5400.0
    assert isinstance(suite.entries[-1], RdkafkaSuiteEntry)  # last: about 25 minutes


def _suite(text: str) -> object:
    return parse_suite(text, "night.yaml", PLANS)


@pytest.mark.parametrize(
    ("text", "line", "needle"),
    [
        ("entries:\n  - plan: smoke.yaml\n    seeds: 0\n", 3, "entries[0].seeds: must be >= 1"),
        ("entries:\n  - plan: smoke.yaml\n    sedes: 2\n", 3, "did you mean 'seeds'"),
        ("entries:\n  - plan: nope.yaml\n", 2, "entries[0].plan: does not load"),
        ("entries:\n  - plan: smoke.yaml\n    mode: broken\n", 3, "expected one of legacy, fixed"),
        ("entries:\n  - plan: smoke.yaml\n  - plan: smoke.yaml\n", 3, "already names the entry"),
        ("entries:\n  - min-isr: {acks: [0, 2]}\n", 2, "entries[0].min-isr.acks[1]"),
        ("entries:\n  - min-isr: {min_insync: [4]}\n", 2, "must be <= 3"),
        ("entries:\n  - seeds: 2\n", 2,
         "exactly one of `plan`, `scenario`, `min-isr` or `rdkafka-suite`"),
        ("entries:\n  - plan: smoke.yaml\n    mode: fixed\n", 3, "only a catalogue scenario"),
        ("entries:\n  - scenario: L99\n    mode: fixed\n", 2, "no scenario 'L99'"),
        ("entries:\n  - scenario: L1\n", 2, "needs `mode: legacy|fixed`"),
        ("entries:\n  - scenario: L1\n    mode: fixed\n    duration: 5\n", 4,
         "not valid for a scenario entry"),
        ("budget: soon\nentries:\n  - plan: smoke.yaml\n", 1, "budget: cannot parse 'soon'"),
        ("entries: []\n", 1, "no entries"),
        ("entries:\n  - plan: smoke.yaml\n    duration: -3\n", 3, "must be > 0"),
        ("entries:\n  - plan: smoke.yaml\n    set: {workload.producers.acks: 7}\n", 2,
         "does not load"),
        ("entries:\n  - plan: smoke.yaml\n   bad: [\n", None, "not valid YAML"),
    ],
)
def test_bad_suite_is_one_line_error_with_file_and_line(text: str, line: int | None,
                                                        needle: str) -> None:
    with pytest.raises(PlanError) as info:
        _suite(text)
    msg = str(info.value)
    assert "\n" not in msg
    if line is not None:
        assert msg.startswith(f"night.yaml:{line}: "), msg
    else:
        assert msg.startswith("night.yaml:"), msg
    assert needle in msg, msg


def test_plan_error_keeps_the_plans_own_file_and_line(tmp_path: Path) -> None:
    lines = (PLANS / "smoke.yaml").read_text().splitlines()
    n = next(i for i, ln in enumerate(lines) if ln.strip() == "brokers: 3")
    lines[n] = "  brokers: zero"
    (tmp_path / "bad.yaml").write_text("\n".join(lines) + "\n")
    with pytest.raises(PlanError) as info:
        parse_suite("entries:\n  - plan: bad.yaml\n", "night.yaml", tmp_path)
    msg = str(info.value)
    assert msg.startswith("night.yaml:2: entries[0].plan: does not load:"), msg
    assert f"{tmp_path / 'bad.yaml'}:{n + 1}: cluster.brokers" in msg, msg


def test_entries_get_labels_modes_overrides_and_names() -> None:
    suite = _suite(
        "entries:\n"
        "  - plan: smoke.yaml\n    set: {workload.producers.acks: '1'}\n    name: smoke-acks1\n"
        "  - plan: scenarios/L3.yaml\n    mode: fixed\n"
        "  - min-isr:\n"
        "  - scenario: L4\n    mode: legacy\n    seeds: 2\n"
    )
    a, b, c, d = suite.entries
    assert isinstance(a, PlanEntry) and a.label == "smoke-acks1"
    assert a.overrides == {"workload.producers.acks": "1"}
    assert isinstance(b, ScenarioEntry) and (b.label, b.scenario_id, b.mode) == (
        "L3-fixed", "L3", "fixed")
    assert b.plan == PLANS / "scenarios" / "L3.yaml" and b.kind == "scenario"
    assert isinstance(d, ScenarioEntry) and (d.label, d.seeds) == ("L4-legacy", 2)
    assert isinstance(c, MinIsrEntry) and c.acks == ("0", "1", "all") and c.line == 7


@pytest.mark.parametrize(("text", "seconds"),
                         [("30m", 1800), ("1h30m", 5400), ("90s", 90), ("45", 45), ("1.5h", 5400),
                          (120, 120)])
def test_parse_budget(text: str | int, seconds: float) -> None:
    assert parse_budget(text) == seconds


@pytest.mark.parametrize("text", ["", "soon", "0", "-5m", "30 minutes"])
def test_parse_budget_rejects_with_the_option_named(text: str) -> None:
    with pytest.raises(ValueError, match="--budget"):
        parse_budget(text)
