"""`modes:` in a plan: named variants as --set-style overrides, validated per mode."""

from __future__ import annotations

import pytest

from harness.plan.errors import PlanError
from harness.plan.loader import mode_overrides, parse_plan

from .conftest import BASE

MODES = BASE + """\
modes:
  legacy:
    description: old truncation
    kafka_version: "3.3"
    switches: {truncation: high-watermark, strict-min-isr: false}
    set:
      cluster.topics.0.min_insync_replicas: 1
      cluster.topics.0.configs.unclean.leader.election.enable: "true"
    expected: {lost-write: "> 0"}
    lost_by_acks: {"1": "> 0", all: "== 0"}
  fixed:
    expected: {lost-write: "== 0", inconsistent-offset: "== 0"}
"""


def test_modes_become_overrides_that_select_the_variant() -> None:
    plan = parse_plan(MODES, "p.yaml")
    assert list(plan.modes) == ["legacy", "fixed"]
    assert plan.cluster.switches == {} and plan.expected == {}  # no mode: the base plan
    legacy = parse_plan(MODES, "p.yaml", mode_overrides(plan, "legacy"))
    assert legacy.cluster.switches == {"truncation": "high-watermark", "strict-min-isr": "false"}
    assert legacy.cluster.kafka_version == "3.3"
    assert legacy.cluster.topics[0].min_insync_replicas == 1
    assert legacy.cluster.topics[0].configs == {"unclean.leader.election.enable": "true"}
    assert legacy.expected_text() == {"lost-write": "> 0"}
    assert {k: str(v) for k, v in plan.modes["legacy"].lost_by_acks.items()} == {
        "1": "> 0", "all": "== 0"}
    fixed = parse_plan(MODES, "p.yaml", mode_overrides(plan, "fixed"))
    assert fixed.expected_text() == {"lost-write": "== 0", "inconsistent-offset": "== 0"}
    assert fixed.cluster.topics[0].min_insync_replicas == 2


def test_a_mode_replaces_the_whole_expected_section() -> None:
    text = MODES.replace("modes:", 'expected: {duplicate: "== 0"}\nmodes:')
    plan = parse_plan(text, "p.yaml")
    assert plan.expected_text() == {"duplicate": "== 0"}
    legacy = parse_plan(text, "p.yaml", mode_overrides(plan, "legacy"))
    assert legacy.expected_text() == {"lost-write": "> 0"}


def test_user_overrides_apply_after_the_mode() -> None:
    plan = parse_plan(MODES, "p.yaml")
    ov = {**mode_overrides(plan, "legacy"), "cluster.switches.truncation": "kip-101"}
    assert parse_plan(MODES, "p.yaml", ov).cluster.switches["truncation"] == "kip-101"


def test_unknown_mode_names_the_known_ones() -> None:
    plan = parse_plan(MODES, "p.yaml")
    with pytest.raises(PlanError, match=r"no mode 'legasy' .*legacy, fixed.*did you mean 'legacy'"):
        mode_overrides(plan, "legasy")


@pytest.mark.parametrize("bad, message", [
    ("    set: {cluster.topics.0.min_insync_replicas: 7}\n",
     r"modes.fixed \(--set cluster.topics.0.min_insync_replicas=7\): "
     r"cluster.topics\[0\].min_insync_replicas: 7 is more than replication_factor 3"),
    ("    expected: {lost-writes: '> 0'}\n", r"modes.fixed.expected.lost-writes: unknown key"),
    ("    lost_by_acks: {'2': '> 0'}\n", "acks must be"),
    ("    lost_by_acks: {'1': 'lots'}\n", r"modes.fixed.lost_by_acks.1: expected an expression"),
    ("    colour: red\n", r"modes.fixed.colour: unknown key"),
])
def test_a_bad_mode_is_reported_with_its_place(bad: str, message: str) -> None:
    text = BASE + "modes:\n  fixed:\n" + bad
    with pytest.raises(PlanError, match=message):
        parse_plan(text, "p.yaml")


def test_title_is_kept() -> None:
    assert parse_plan("title: a story\n" + BASE, "p.yaml").title == "a story"
