"""cluster.kafka_version in plans and modes: presets, overrides (explicit wins, with a note),
and one-line file:line refusals."""

from __future__ import annotations

import pytest

from broker_app.kafka_versions import preset
from harness.plan.errors import PlanError
from harness.plan.loader import mode_overrides, parse_plan

from .conftest import BASE


def _with(cluster_extra: str, tail: str = "") -> str:
    return BASE.replace("  brokers: 3\n", "  brokers: 3\n" + cluster_extra) + tail


def test_version_preset_gives_every_switch():
    plan = parse_plan(_with('  kafka_version: "3.9"\n'), "p.yaml")
    assert plan.cluster.kafka_version == "3.9" and plan.cluster.emulated_version() == "3.9"
    assert plan.cluster.version_switches() == preset("3.9")
    assert plan.notes == ()
    default = parse_plan(BASE, "p.yaml")
    assert default.cluster.kafka_version is None and default.cluster.emulated_version() == "4.1"


def test_unknown_version_is_a_file_line_error_listing_the_known_ones():
    with pytest.raises(PlanError) as e:
        parse_plan(_with("  kafka_version: 4.10\n"), "p.yaml")
    msg = str(e.value)
    assert msg.startswith("p.yaml:4: cluster.kafka_version: unknown Kafka version '4.10'")
    assert "known: 0.8, 0.11" in msg and "\n" not in msg


def test_explicit_switch_wins_with_a_note():
    plan = parse_plan(_with('  kafka_version: "3.9"\n  switches: {truncation: kip-101}\n'),
                      "p.yaml")
    assert plan.cluster.version_switches() == {**preset("3.9"), "truncation": "kip-101"}
    assert plan.notes == ("p.yaml:5: cluster.switches.truncation: kip-101 overrides "
                          "kafka_version 3.9's diverging-epoch (the explicit switch wins)",)
    same = parse_plan(_with('  kafka_version: "3.9"\n  switches: {truncation: diverging-epoch}\n'),
                      "p.yaml")
    assert same.notes == ()


def test_contradiction_with_elr_is_refused_at_the_switch():
    with pytest.raises(PlanError) as e:
        parse_plan(_with('  kafka_version: "4.1"\n  switches: {strict-min-isr: false}\n'),
                   "p.yaml")
    assert str(e.value).startswith("p.yaml:5: cluster.switches.strict-min-isr: "
                                   "eligible-leader-replicas=true needs strict-min-isr=true")
    ok = parse_plan(_with('  kafka_version: "3.3"\n  switches: {strict-min-isr: false}\n'),
                    "p.yaml")
    assert ok.cluster.version_switches()["strict-min-isr"] == "false"


def test_bad_switch_value_is_refused():
    with pytest.raises(PlanError, match=r"p.yaml:4: cluster.switches.isr-update: .*not one of"):
        parse_plan(_with("  switches: {isr-update: lazy}\n"), "p.yaml")


def test_mode_names_a_version_instead_of_switches():
    text = BASE + ('modes:\n  legacy:\n    kafka_version: "3.9"\n'
                   '  fixed:\n    kafka_version: "4.1"\n')
    plan = parse_plan(text, "p.yaml")
    legacy = parse_plan(text, "p.yaml", mode_overrides(plan, "legacy"))
    assert legacy.cluster.kafka_version == "3.9"
    assert legacy.cluster.version_switches()["eligible-leader-replicas"] == "false"
    fixed = parse_plan(text, "p.yaml", mode_overrides(plan, "fixed"))
    assert fixed.cluster.version_switches()["eligible-leader-replicas"] == "true"
    bad = BASE + 'modes:\n  legacy:\n    kafka_version: "3.10"\n'
    with pytest.raises(PlanError, match=r"^p.yaml:\d+: modes.legacy.kafka_version: unknown"):
        parse_plan(bad, "p.yaml")
