"""The scenario plans and the scenario judge, without docker: every plan loads in every mode,
tells its story with a source, drives its faults by broker state, and says what each mode
must show; `judge` turns results.json into reproduced / not."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from harness.plan.model import Expectation, ModeSpec
from harness.scenario.catalog import ScenarioError, find, scenarios
from harness.scenario.cli import run_ids
from harness.scenario.outcome import judge, story

ALL = scenarios()
SOURCE = re.compile(r"KIP-\d+|KAFKA-\d+|Jepsen|Kafka documentation|design")


# Scenarios with one mode (each description says why): L14, a guarantee no KRaft release
# broke (a partitioned active controller commits nothing); L23, a recovery no release has
# (KIP-966's unclean recovery: every replica lost data).
FIXED_ONLY = {"L14", "L23"}


def test_the_priority_scenarios_exist_with_legacy_and_fixed() -> None:
    ids = [s.id for s in ALL]
    assert {"L1", "L2", "L3", "L4", "L5", "L11"} <= set(ids)
    for s in ALL:
        assert ({"fixed"} if s.id in FIXED_ONLY else {"legacy", "fixed"}) <= set(s.modes), s.id


@pytest.mark.parametrize("sc", ALL, ids=lambda s: s.id)
def test_plan_tells_its_story_and_waits_on_state(sc) -> None:
    assert sc.plan.title and len(sc.plan.description) > 200
    assert SOURCE.search(sc.plan.description), f"{sc.id}: description names no source"
    assert any(step.when is not None for step in sc.plan.faults), f"{sc.id}: no `when` step"
    for mode in sc.modes:
        plan = sc.load(mode)
        assert plan.name == f"{sc.id}-{mode}"
        assert plan.expected, f"{sc.id} {mode}: says nothing it expects"


@pytest.mark.parametrize("sc", ALL, ids=lambda s: s.id)
def test_fixed_mode_expects_nothing_acknowledged_lost(sc) -> None:
    fixed = sc.load("fixed")
    lost = fixed.expected.get("lost-write")
    acks_all = fixed.modes["fixed"].lost_by_acks.get("all")
    # Documented: min.insync=1's power loss loses acknowledged records in both modes; the
    # difference is the broker that stops itself (L21, KAFKA-3410) or the consumer that
    # skips what replaced the records it read (L22, KIP-320's consumer side).
    if sc.id == "L23":  # no release keeps what every replica lost (KIP-966's recovery is in
        # none): the scenario shows 4.1 losing more than the longest log would have
        assert str(fixed.expected["lost-write"]) == "> 400"
        return
    differs = {"L21": "unexpected-exits", "L22": "truncation-skip"}
    if sc.id in differs:
        assert str(fixed.expected[differs[sc.id]]) == "== 0"
        assert str(sc.load("legacy").expected[differs[sc.id]]) == "> 0"
        return
    if sc.id in ("L2",):  # documented: the unflushed tail is lost in both modes
        assert str(fixed.modes["fixed"].diverged_offsets) == "== 0"
        assert str(fixed.modes["legacy"].diverged_offsets) == "> 0"
        return
    assert (lost is not None and str(lost) == "== 0") or str(acks_all) == "== 0", sc.id


def test_legacy_modes_expect_the_documented_anomaly() -> None:
    wants = {"L1": "lost-write", "L3": "lost-write",
             "L4": "lost-write", "L5": "uncommitted-read"}
    for sid, anomaly in wants.items():
        assert str(find(sid).load("legacy").expected[anomaly]) == "> 0", sid


def test_l3_separates_acks_levels_in_both_modes() -> None:
    sc = find("L3")
    for mode in ("legacy", "fixed"):
        lba = {k: str(v) for k, v in sc.plan.modes[mode].lost_by_acks.items()}
        assert lba == {"1": "> 0", "all": "== 0"}
    assert {p.acks for p in sc.load("fixed").workload.producers} == {"1", "all"}


def test_unknown_scenario_and_mode_are_clear_errors() -> None:
    with pytest.raises(ScenarioError, match=r"no scenario 'L99'.*known: L1, L2"):
        find("L99")
    with pytest.raises(ScenarioError, match=r"L1: no mode 'new'"):
        find("L1").overrides("new")


def test_a_users_own_plan_with_modes_is_a_scenario(tmp_path: Path, capsys) -> None:
    from harness.cli import main

    mine = tmp_path / "my-failover.yaml"
    mine.write_text((Path(ALL[0].path)).read_text())  # L1's plan, under another name
    sc = find(str(mine))
    assert sc.id == "my-failover" and sc.modes == ALL[0].modes
    plan = sc.load("legacy")
    assert plan.name == "my-failover-legacy"
    assert plan.cluster.emulated_version() == ALL[0].load("legacy").cluster.emulated_version()
    # Errors name the file: no such file, no modes, an unknown mode (exit 2, nothing run).
    with pytest.raises(ScenarioError, match=r"nope\.yaml: no such plan file"):
        find(str(tmp_path / "nope.yaml"))
    plain = tmp_path / "plain.yaml"
    plain.write_text((Path(__file__).parents[2] / "chaos_plans/smoke.yaml").read_text())
    with pytest.raises(ScenarioError, match=r"plain\.yaml: the plan has no `modes:`"):
        find(str(plain))
    assert main(["scenario", "run", str(mine), "--mode", "new",
                 "--store", str(tmp_path / "store")]) == 2  # fmt: skip
    assert "my-failover has no mode 'new'" in capsys.readouterr().err


def test_run_ids_name_one_cluster_per_run_after_the_given_id() -> None:
    assert run_ids(None, ["1", "2"]) == [None, None]
    assert run_ids("tn-4", ["1"]) == ["tn-4"]
    assert run_ids("tn-4", ["m1", "m3"]) == ["tn-4-m1", "tn-4-m3"]
    with pytest.raises(ScenarioError, match=r"--run-id: run id 'Bad Id'"):
        run_ids("Bad Id", ["1"])


def _results(verdict: str, lost_by_acks: dict[str, int], **counts: int) -> dict:
    return {"verdict": verdict, "valid": not any(counts.values()),
            "expected": {"lost-write": "> 0"},
            "anomalies": {k.replace("_", "-"): {"count": v} for k, v in counts.items()},
            "stats": {"lost_by_acks": lost_by_acks}}


def test_judge() -> None:
    mode = ModeSpec("legacy", lost_by_acks={"1": Expectation("lost:1", ">", 0),
                                            "all": Expectation("lost:all", "==", 0)})
    ok = judge(mode, _results("as-expected", {"1": 3, "all": 0}, lost_write=3))
    assert ok.reproduced and ok.counts == {"lost-write": 3}
    lost_all = judge(mode, _results("as-expected", {"1": 3, "all": 1}, lost_write=4))
    assert not lost_all.reproduced and "lost acks=all == 0 (got 1)" in lost_all.why
    none = judge(ModeSpec("legacy"), _results("unexpected", {}, lost_write=0))
    assert not none.reproduced and "lost-write > 0 (got 0)" in none.why
    missing = judge(ModeSpec("fixed"), None)
    assert not missing.reproduced and not missing.carried_out


def test_story_prints_timeline_and_lost_messages_with_offsets(tmp_path: Path) -> None:
    history = [
        {"index": 0, "process": 0, "type": "invoke", "f": "send", "topic": "t", "partition": 0,
         "value": 7, "acks": "all"},
        {"index": 1, "process": 0, "type": "ok", "f": "send", "topic": "t", "partition": 0,
         "value": 7, "acks": "all", "offset": 41},
    ]
    (tmp_path / "history.jsonl").write_text("".join(json.dumps(h) + "\n" for h in history))
    (tmp_path / "run.json").write_text(json.dumps({"nemesis_events": [
        {"elapsed_s": 2.5, "step": "kill-leader", "kind": "start", "text": "kill broker-1"}]}))
    (tmp_path / "results.json").write_text(json.dumps({"anomalies": {"lost-write": {
        "count": 1, "by_partition": {"t-0": 1}, "examples": [[0, 1]]}}}))
    text = story(tmp_path)
    assert "2.5s start   kill-leader: kill broker-1" in text
    assert "lost-write: 1" in text and "send 7 acks=all ok t-0@41" in text


def test_diverged_offsets_compares_replicas_offset_by_offset() -> None:
    from harness.checker.replica_logs import diverged_offsets

    logs = {"broker-1": {0: "a", 1: "b", 2: "c"}, "broker-2": {0: "a", 1: "x"},
            "broker-3": {0: "a"}}
    assert diverged_offsets(logs) == {1: {"broker-1": "b", "broker-2": "x"}}
    assert diverged_offsets({}) == {}


def test_judge_checks_diverged_offsets_as_a_run_check(tmp_path: Path) -> None:
    def results(diverged: int | None) -> dict:
        r = {"verdict": "as-expected", "valid": True, "expected": {}, "anomalies": {},
             "stats": {}}
        if diverged is not None:
            r["diverged-offsets"] = {"count": diverged, "by_partition": {}, "examples": []}
        return r

    mode = ModeSpec("fixed", diverged_offsets=Expectation("diverged-offsets", "==", 0))
    out = judge(mode, results(0), tmp_path)
    assert out.reproduced and out.counts == {"diverged-offsets": 0}
    legacy = ModeSpec("legacy", diverged_offsets=Expectation("diverged-offsets", ">", 0))
    out = judge(legacy, results(0), tmp_path)
    assert not out.reproduced and "diverged-offsets > 0 (got 0)" in out.why
    assert judge(legacy, results(3), tmp_path).reproduced
    # No data collected (an empty run dir) and no check stored: nothing could be compared.
    out = judge(mode, results(None), tmp_path)
    assert not out.reproduced and "not checked in this run" in out.why, out.why


def test_l1_to_l10_are_documented() -> None:
    assert {f"L{i}" for i in range(1, 11)} <= {s.id for s in ALL}


@pytest.mark.parametrize("sc", ALL, ids=lambda s: s.id)
def test_every_mode_runs_from_its_version_preset_alone(sc) -> None:
    """Each mode names a kafka_version and sets no version switch of its own: the switches the
    brokers and controller run with are exactly that release's preset (docs/kafka-versions.md).
    Plain configuration (flush, lag time), L5's hypothetical consumer-visibility, L11's
    hypothetical controller-activation and L13's hypothetical raft-vote-log-check are not
    version switches."""
    from broker_app.kafka_versions import SWITCH_NAMES, preset

    for mode in sc.modes:
        assert "cluster.kafka_version" in sc.plan.modes[mode].overrides, f"{sc.id} {mode}"
        plan = sc.load(mode)
        explicit = sorted(k for k in plan.cluster.switches if k in SWITCH_NAMES)
        assert explicit == [], f"{sc.id} {mode}: version switches {explicit} beside the preset"
        assert plan.cluster.version_switches() == preset(plan.cluster.kafka_version)
        assert plan.notes == ()
    assert sc.load("fixed").cluster.kafka_version == "4.1", sc.id


def test_l10_is_pre_kip966_versus_kafka_41() -> None:
    sc = find("L10")
    legacy, fixed = sc.load("legacy"), sc.load("fixed")
    assert legacy.cluster.kafka_version == "3.9" and fixed.cluster.kafka_version == "4.1"
    assert legacy.cluster.version_switches()["strict-min-isr"] == "true"
    assert legacy.cluster.version_switches()["eligible-leader-replicas"] == "false"
    assert str(legacy.expected["lost-write"]) == "> 0"
    assert str(fixed.expected["lost-write"]) == "== 0"
    kill = next(s for s in fixed.faults if s.action == "kill")
    assert kill.params.get("lose_unsynced") is True and kill.when is not None


def test_story_names_who_was_elected_with_isr_and_elr(tmp_path: Path) -> None:
    from harness.store.states import StatesWriter

    (tmp_path / "run.json").write_text("{}")
    with StatesWriter(tmp_path / "states.jsonl", start_ns=0, clock=lambda: 0) as w:
        w.write(1, "t", 0, "leader", 1, 0, 5, 9, [1], time_ns=2 * 10**9, elr=[2])
        w.write(2, "t", 0, "leader", 2, 1, 5, 5, [2], time_ns=5 * 10**9)
    text = story(tmp_path)
    assert "      2.0s b1 epoch 0: ISR [1] ELR [2]" in text
    assert "      5.0s b2 epoch 1: ISR [2] ELR []" in text


def test_catalog_table_and_plans_name_the_same_scenarios() -> None:
    """The README's loss-catalog table and the plans' `catalog:` keys (what `scenario list`
    prints) agree: each entry's "covered by" cell names exactly the scenarios that say they
    reproduce it."""
    readme = (Path(__file__).resolve().parents[2] / "chaos_plans" / "scenarios" / "README.md")
    rows = re.findall(r"^\| (\d+) \|[^|]*\| ([^|]*) \|$", readme.read_text(), re.M)
    assert len(rows) == 25
    for number, cell in rows:
        named = set(re.findall(r"\bL\d+\b", cell))
        claim = {s.id for s in ALL if int(number) in s.plan.catalog}
        assert named == claim, f"catalog {number}: table says {named}, plans say {claim}"


def test_scenario_list_names_the_catalog_entries(capsys) -> None:
    from harness.cli import main

    assert main(["scenario", "list"]) == 0
    lines = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()}
    assert "[catalog 19]" in lines["L17"] and "[catalog 15]" in lines["L10"]
    assert "[catalog" not in lines["L5"]
