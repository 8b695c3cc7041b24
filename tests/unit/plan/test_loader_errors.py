"""Each kind of bad plan fails with one line: "<file>:<line>: <field path>: <what is wrong>"."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from harness.plan import PlanError, load_plan
from harness.plan.loader import parse_overrides

from .conftest import BASE

WritePlan = Callable[[str], Path]


def _error(path: Path, overrides: dict[str, str] | None = None) -> PlanError:
    with pytest.raises(PlanError) as info:
        load_plan(path, overrides)
    err = info.value
    assert "\n" not in str(err)
    return err


def _line_of(text: str, needle: str) -> int:
    """1-based line of the first line containing needle (the test's own oracle)."""
    for n, line in enumerate(text.splitlines(), 1):
        if needle in line:
            return n
    raise AssertionError(needle)


# (name, replace this, with this, the line containing, field, message fragment)
CASES = [
    ("unknown top-level key", "name: base", "name: base\nfualts: []", "fualts:",
     "fualts", "did you mean 'faults'"),
    ("unknown nested key", "      partitions: 2", "      partitions: 2\n      replicas: 3",
     "replicas: 3", "cluster.topics[0].replicas", "unknown key"),
    ("bad type", "brokers: 3", "brokers: three", "brokers: three",
     "cluster.brokers", "expected an integer, got 'three'"),
    ("bool is not an int", "brokers: 3", "brokers: true", "brokers: true",
     "cluster.brokers", "expected an integer"),
    ("out of range", "brokers: 3", "brokers: 0", "brokers: 0", "cluster.brokers", ">= 1"),
    ("bad acks", "acks: all", 'acks: "2"', 'acks: "2"', "workload.producers.acks",
     'acks must be "0", "1" or "all"'),
    ("rf above brokers", "replication_factor: 3", "replication_factor: 4",
     "replication_factor: 4", "cluster.topics[0].replication_factor", "more than"),
    ("min isr above rf", "min_insync_replicas: 2", "min_insync_replicas: 4",
     "min_insync_replicas: 4", "cluster.topics[0].min_insync_replicas", "more than"),
    ("unknown action", "action: kill", "action: kil", "action: kil", "faults[0].action",
     "did you mean 'kill'"),
    ("bad condition syntax", "at: 5", 'when: "leader(t-0).hw >= >= 3"\n    timeout: 5',
     "when:", "faults[0].when", "column 19"),
    ("unknown function in condition", "at: 5", 'when: "lead(t-0).hw > 1"\n    timeout: 5',
     "when:", "faults[0].when", "unknown name 'lead'"),
    ("unknown partition in condition", "at: 5", 'when: "leader(t-9).hw > 1"\n    timeout: 5',
     "when:", "faults[0].when", "unknown partition 't-9'"),
    ("missing timeout on when", "at: 5", 'when: "epoch(t-0) > 1"', "when:",
     "faults[0].timeout", "required with 'when'"),
    ("timeout without when", "at: 5", "at: 5\n    timeout: 3", "timeout: 3",
     "faults[0].timeout", "only with 'when'"),
    ("two timings", "at: 5", "at: 5\n    after: 2", "after: 2", "faults[0].after",
     "only one of at, after, when"),
    ("no timing", "    at: 5\n", "", "- name: first", "faults[0]", "at, after or when"),
    ("unknown target partition", "{leader: t-0}", "{leader: x-0}", "{leader: x-0}",
     "faults[0].target.leader", "unknown partition 'x-0'"),
    ("unknown broker", "{leader: t-0}", "{broker: 7}", "{broker: 7}",
     "faults[0].target.broker", "no broker 7"),
    ("follower index out of range", "{leader: t-0}", "{follower: t-0, index: 2}",
     "{follower: t-0", "faults[0].target.index", "2 follower(s)"),
    ("unknown scalar target", "{leader: t-0}", "leaders", "target: leaders",
     "faults[0].target", "unknown target"),
    ("client is not a kill target", "{leader: t-0}", "client", "target: client",
     "faults[0].target", "not allowed"),
    ("parameter of another action", "duration: 3", "duration: 3\n    ms: 5", "ms: 5",
     "faults[0].ms", "unknown key"),
    ("action with no duration", "action: kill", "action: start", "duration: 3",
     "faults[0].duration", "takes no duration"),
    ("disk-stall needs a duration", "action: kill\n    target: {leader: t-0}\n    duration: 3",
     "action: disk-stall\n    target: {leader: t-0}", "- name: first",
     "faults[0].duration", "needs a duration"),
    ("latency needs from and to", "action: kill\n    target: {leader: t-0}",
     "action: latency\n    ms: 10", "- name: first", "faults[0].from", "needs from and to"),
    ("bad expected expression", "name: base", "name: base\nexpected: {lost-write: '=> 1'}",
     "expected:", "expected.lost-write", 'like "== 0"'),
    ("unknown anomaly", "name: base", "name: base\nexpected: {lost-writes: '> 0'}",
     "expected:", "expected.lost-writes", "did you mean 'lost-write'"),
    ("values and duration", "values: 100", "values: 100\n    duration_s: 3", "duration_s: 3",
     "workload.producers.duration_s", "not both"),
    ("duplicate key", "brokers: 3", "brokers: 3\n  brokers: 4", "brokers: 4",
     "cluster.brokers", "duplicate key"),
    ("random mode with faults", "name: base",
     "name: base\nnemesis: {mode: random, seed: 1, kinds: [kill], targets: [leader]}",
     "faults:", "faults", "must be empty"),
    ("random mode unknown kind", "name: base",
     "name: base\nnemesis: {mode: random, seed: 1, kinds: [explode], targets: [leader]}",
     "nemesis:", "nemesis.kinds[0]", "expected one of"),
    ("bad consumer mode", "values: 100", "values: 100\n  consumers: {mode: subscrib}",
     "consumers:", "workload.consumers.mode", "did you mean 'subscribe'"),
    ("group in assign mode", "values: 100", "values: 100\n  consumers: {group: g}",
     "consumers:", "workload.consumers.group", "only with mode: subscribe"),
    ("partitions in subscribe mode", "values: 100",
     "values: 100\n  consumers:\n    mode: subscribe\n    partitions: [t-0]",
     "partitions: [t-0]", "workload.consumers.partitions", "not with mode: subscribe"),
    ("bad group id", "values: 100",
     "values: 100\n  consumers:\n    mode: subscribe\n    group: 'a b'",
     "group: 'a b'", "workload.consumers.group", "bad group id"),
    ("unknown commit mode", "values: 100",
     "values: 100\n  consumers:\n    mode: subscribe\n    commit: manual",
     "commit: manual", "workload.consumers.commit", "expected one of sync, async, auto, none"),
    ("commit mode misspelt", "values: 100",
     "values: 100\n  consumers:\n    mode: subscribe\n    commit: asynch",
     "commit: asynch", "workload.consumers.commit", "did you mean 'async'"),
    ("commit in assign mode", "values: 100", "values: 100\n  consumers: {commit: auto}",
     "consumers:", "workload.consumers.commit", "only with mode: subscribe"),
    ("unknown assignor", "values: 100",
     "values: 100\n  consumers:\n    mode: subscribe\n    assignor: sticky",
     "assignor: sticky", "workload.consumers.assignor", "expected one of range"),
    ("unknown offset reset", "values: 100",
     "values: 100\n  consumers:\n    auto_offset_reset: smallest",
     "auto_offset_reset: smallest", "workload.consumers.auto_offset_reset",
     "expected one of earliest, latest"),
    ("offset reset in subscribe mode", "values: 100",
     "values: 100\n  consumers:\n    mode: subscribe\n    auto_offset_reset: latest",
     "auto_offset_reset: latest", "workload.consumers.auto_offset_reset", "only with mode: assign"),
    ("random-only key in scripted mode", "name: base", "name: base\nnemesis: {seed: 3}",
     "nemesis:", "nemesis.seed", "only with mode: random"),
]


@pytest.mark.parametrize(("old", "new", "line_of", "field", "fragment"),
                         [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_error_names_file_line_and_field(write_plan: WritePlan, old: str, new: str,
                                         line_of: str, field: str, fragment: str) -> None:
    assert old in BASE
    text = BASE.replace(old, new, 1)
    path = write_plan(text)
    err = _error(path)
    line = _line_of(text, line_of)
    assert str(err).startswith(f"{path}:{line}: {field}: "), str(err)
    assert fragment in str(err)
    assert (err.file, err.line, err.field) == (str(path), line, field)


def test_subscribe_consumers_are_read(write_plan: WritePlan) -> None:
    text = BASE.replace("values: 100", "values: 100\n  consumers:\n    count: 3\n"
                        "    mode: subscribe\n    group: g-1\n    assignor: cooperative-sticky")
    spec = load_plan(write_plan(text)).workload.consumers
    assert (spec.count, spec.mode, spec.group, spec.commit, spec.assignor) == (
        3, "subscribe", "g-1", "sync", "cooperative-sticky")


@pytest.mark.parametrize("commit", ["sync", "async", "auto", "none"])
def test_every_commit_mode_is_read(write_plan: WritePlan, commit: str) -> None:
    text = BASE.replace("values: 100", "values: 100\n  consumers:\n    count: 2\n"
                        f"    mode: subscribe\n    commit: {commit}")
    assert load_plan(write_plan(text)).workload.consumers.commit == commit


def test_assign_consumers_take_auto_offset_reset(write_plan: WritePlan) -> None:
    from harness.workload import _consumer_config

    text = BASE.replace("values: 100", "values: 100\n  consumers: {auto_offset_reset: latest}")
    spec = load_plan(write_plan(text)).workload.consumers
    assert spec.auto_offset_reset == "latest"
    assert _consumer_config(spec, 0) == {"auto.offset.reset": "latest"}
    assert load_plan(write_plan(BASE)).workload.consumers.auto_offset_reset == "earliest"


def test_yaml_syntax_error_has_its_line(write_plan: WritePlan) -> None:
    text = BASE.replace("brokers: 3", "brokers: [3")
    err = _error(write_plan(text))
    assert err.line is not None and err.line >= _line_of(text, "brokers: [3")
    assert "not valid YAML" in str(err)


def test_empty_and_missing_files(write_plan: WritePlan, tmp_path: Path) -> None:
    assert "empty" in str(_error(write_plan("")))
    err = _error(tmp_path / "nope.yaml")
    assert str(err).startswith(f"{tmp_path / 'nope.yaml'}: cannot read plan")


def test_missing_required_section(write_plan: WritePlan) -> None:
    text = "name: x\ncluster: {topics: [{name: t}]}\n"
    err = _error(write_plan(text))
    assert str(err).endswith(":1: workload: missing (required)")


def test_step_reference_must_be_earlier(write_plan: WritePlan) -> None:
    text = BASE + "  - at: 9\n    action: start\n    target: {step: frist}\n"
    path = write_plan(text)
    err = _error(path)
    assert str(err).startswith(f"{path}:{_line_of(text, 'step: frist')}: faults[1].target.step:")
    assert "did you mean 'first'" in str(err)
    plan = load_plan(write_plan(text.replace("frist", "first")))
    assert plan.faults[1].target is not None and plan.faults[1].target.step == "first"


# ---------- --set overrides ----------

def test_set_overrides_values_and_keeps_types(write_plan: WritePlan) -> None:
    path = write_plan(BASE)
    plan = load_plan(path, {
        "workload.producers.acks": "1",
        "cluster.brokers": "5",
        "faults.0.at": "7.5",
        "cluster.switches.truncation.level": "hw",
        "cluster.topics.0.configs.unclean.leader.election.enable": "true",
        "nemesis.mode": "scripted",
    })
    assert plan.workload.producers[0].acks == "1"
    assert plan.cluster.brokers == 5
    assert plan.faults[0].at == 7.5
    assert plan.cluster.switches == {"truncation.level": "hw"}
    assert plan.cluster.topics[0].configs == {"unclean.leader.election.enable": "true"}
    assert plan.overrides["cluster.brokers"] == "5"


@pytest.mark.parametrize(("key", "value", "field", "fragment"), [
    ("workload.producer.acks", "1", "workload.producer", "did you mean 'producers'"),
    ("faults.3.at", "1", "faults", "no item '3'"),
    ("faults.x.at", "1", "faults", "no item 'x'"),
    ("cluster.brokers.count", "1", "cluster.brokers", "has no key 'count'"),
    ("cluster.brokers", "many", "cluster.brokers", "expected an integer"),
    ("workload.producers.acks", "2", "workload.producers.acks", "acks must be"),
    ("cluster..brokers", "1", "cluster..brokers", "empty segment"),
])
def test_bad_set_is_reported_with_the_override(write_plan: WritePlan, key: str, value: str,
                                               field: str, fragment: str) -> None:
    path = write_plan(BASE)
    err = _error(path, {key: value})
    assert str(err).startswith(f"{path}: --set {key}={value}: {field}: "), str(err)
    assert fragment in str(err)
    assert err.line is None


def test_parse_overrides() -> None:
    assert parse_overrides(["a.b=1", "c=x=y"]) == {"a.b": "1", "c": "x=y"}
    with pytest.raises(PlanError, match="expected key=value"):
        parse_overrides(["novalue"])


def test_a_plan_may_expect_a_metadata_divergence(write_plan: WritePlan) -> None:
    plan = load_plan(write_plan(BASE.replace(
        "name: base", "name: base\nexpected: {metadata-divergence: '> 0', lost-write: 0}")))
    assert {k: str(e) for k, e in plan.expected.items()} == {
        "metadata-divergence": "> 0", "lost-write": "== 0"}
