"""The simulator's per-event invariants (issue 24, broker_app/sim/invariants.py): each one fires
on a small constructed violation and names the event, the virtual time and the state; the
fetch livelock of KAFKA-10706 is caught when the truncation fix is taken out again; which
invariants a mode enforces follows its switches; a checked run is the same run."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import pytest

import harness.run.simulated as sim_run
from broker_app.metadata.image import MetadataImage
from broker_app.sim.cluster import SimCluster
from broker_app.sim.events import EventLoop, Process
from broker_app.sim.invariants import (
    FENCED_IN_ISR,
    FETCH_LIVELOCK,
    INVARIANTS,
    ISR_HOLDS_HW,
    LEADER_HW_MONOTONIC,
    ONE_LEADER_PER_EPOCH,
    InvariantChecker,
    Violation,
    describe_event,
    enforced_invariants,
)
from broker_app.storage.log import Log
from broker_app.storage.records import CRC_OFFSET, iter_batches
from harness.plan.loader import load_plan, parse_plan
from harness.plan.timing import steps_for
from harness.sim.config import broker_configs, controller_config

from .plans import started_cluster

ROOT = Path(__file__).resolve().parents[3]
TARGETED = ROOT / "chaos_plans/random-targeted.yaml"
LIVELOCK_SEED = 301840  # issue 24's seed: a follower wedged by a stale epoch at its log end

CALM = """
name: calm
description: no faults; a tamper function breaks one invariant on purpose
cluster:
  brokers: 3
  controllers: 1
  topics: [{name: t, partitions: 1, replication_factor: 3, min_insync_replicas: 2}]
workload:
  producers: {count: 2, acks: all, rate: 40, duration_s: 4}
  consumers: {count: 1, poll_interval_ms: 200}
expected: {lost-write: "== 0"}
settle: {timeout_s: 30}
"""

Tamper = Callable[[SimCluster, dict[str, Any]], bool]


def simulate_checked(
    monkeypatch: pytest.MonkeyPatch, plan: Any, seed: int, out: Path, tamper: Tamper | None = None
) -> tuple[Any, InvariantChecker, dict[str, Any]]:
    """simulate() with an InvariantChecker attached to its cluster (as the run wires it),
    and `tamper(cluster, note)` tried every millisecond of virtual time, as an event of the
    client process, until it returns True (it did its harm; `note` records what and when)."""
    checkers: list[InvariantChecker] = []
    note: dict[str, Any] = {}

    class Checked(SimCluster):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            checkers.append(InvariantChecker(self).attach())
            if tamper is not None:
                self.client.call_later(1, partial(_retry, self, tamper, note))

    monkeypatch.setattr(sim_run, "SimCluster", Checked)
    r = sim_run.simulate(plan, steps_for(plan, seed), seed, out)
    return r, checkers[0], note


def _retry(cluster: SimCluster, tamper: Tamper, note: dict[str, Any]) -> None:
    if tamper(cluster, note):
        note["at_ms"] = cluster.loop.now_ms
    else:
        cluster.client.call_later(1, partial(_retry, cluster, tamper, note))


def _leader(cluster: SimCluster) -> Any:
    for b in cluster.brokers.values():
        rm = b.replica_manager
        p = rm.partitions.get(("t", 0)) if rm is not None else None
        if p is not None and p.is_leader and p.log.high_watermark >= 20 and len(p.isr) == 3:
            return p
    return None


def _follower(cluster: SimCluster, leader: Any) -> Any:
    rid = min(r for r in leader.isr if r != leader.local_broker_id)
    return cluster.brokers[rid].replica_manager.partitions[("t", 0)]  # type: ignore[union-attr]


def _only(checker: InvariantChecker, invariant: str) -> Violation:
    found = [v for v in checker.violations if v.invariant == invariant]
    assert found, [v.text() for v in checker.violations]
    return found[0]


# --- each invariant on a constructed violation ------------------------------------------------


def lower_hw(cluster: SimCluster, note: dict[str, Any]) -> bool:
    p = _leader(cluster)
    if p is None:
        return False
    note["hw"] = p.log.high_watermark
    p.log.high_watermark -= 5
    return True


def truncate_follower(cluster: SimCluster, note: dict[str, Any]) -> bool:
    p = _leader(cluster)
    if p is None:
        return False
    f = _follower(cluster, p)
    note["cut"] = p.log.high_watermark - 3
    f.log.truncate_to(note["cut"])
    return True


def change_a_batch(cluster: SimCluster, note: dict[str, Any]) -> bool:
    """A follower's newest batch, not yet below the leader's HW, gets another CRC."""
    p = _leader(cluster)
    if p is None:
        return False
    f = _follower(cluster, p)
    if f.log.log_end_offset <= p.log.high_watermark:
        return False
    seg = f.log.active_segment  # its newest batch's CRC field, changed on its disk
    position = 0
    for h, _view in iter_batches(seg.read_all(), allow_partial_tail=False):
        last, position = (h, position), position + h.size
    h, at = last
    fs = cluster.brokers[f.local_broker_id].fs
    fd = fs.open(seg.log_path)
    fs.pwrite(fd, (h.crc ^ 1).to_bytes(4, "big"), at + CRC_OFFSET)
    fs.close(fd)
    note["offset"] = h.base_offset
    return True


def second_leader(cluster: SimCluster, note: dict[str, Any]) -> bool:
    p = _leader(cluster)
    if p is None:
        return False
    f = _follower(cluster, p)
    f.make_leader(f.leader_epoch, tuple(f.replicas), f.replicas, f.partition_epoch + 1,
                  cluster.loop.now_ms)  # fmt: skip
    note["epoch"] = f.leader_epoch
    return True


@pytest.mark.parametrize(("tamper", "invariant", "says"), [
    (lower_hw, LEADER_HW_MONOTONIC, "high watermark went from"),
    (truncate_follower, ISR_HOLDS_HW, "holds offsets only below"),
    (change_a_batch, ISR_HOLDS_HW, "holds another batch at offset"),
    (second_leader, ONE_LEADER_PER_EPOCH, "has two leaders"),
])  # fmt: skip
def test_a_constructed_violation_names_the_event_the_time_and_the_state(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, tamper: Tamper, invariant: str, says: str
) -> None:
    plan = parse_plan(CALM, "calm.yaml")
    _r, checker, note = simulate_checked(monkeypatch, plan, 3, tmp_path, tamper)
    assert "at_ms" in note, "the tamper never found its moment"
    v = _only(checker, invariant)
    assert v.enforced and v.partition == "t-0"
    assert says in v.message, v.text()
    assert "leader of t-0 epoch" in v.state and " hw " in v.state, v.state
    if tamper is change_a_batch:
        assert f"offset {note['offset']}" in v.message
        assert v.time_ms >= note["at_ms"]  # seen once the HW covers the changed batch
    else:
        # Seen right after the tampering event, which the violation names.
        assert v.event == "client: _retry" and v.time_ms == note["at_ms"], v.text()
    if tamper is lower_hw:
        assert f"from {note['hw']} to {note['hw'] - 5}" in v.message
    if tamper is second_leader:
        assert f"leader epoch {note['epoch']} has two leaders" in v.message
    result = checker.result()
    assert result["count"] >= 1 and result["by_partition"]["t-0"] == result["count"]
    assert result["by_invariant"][invariant] >= 1
    assert v.text() in result["examples"]
    assert result["tolerated"]["count"] == 0 and result["not_enforced"] == {}


def _started_cluster(overrides: dict[str, str] | None = None) -> SimCluster:
    return started_cluster(CALM, 7, overrides)


def _fence(cluster: SimCluster, isr: tuple[int, ...]) -> int:
    """The controller's committed image with ISR `isr` for t-0 and its last member fenced."""
    raft = cluster.controllers["controller-1"].raft
    assert raft is not None
    image = raft.committed_image
    topic = image.topics["t"]
    reg = dataclasses.replace(topic.partitions[0], isr=isr, leader=isr[0])
    fenced = isr[-1]
    raft.committed_image = MetadataImage(
        brokers={**image.brokers, fenced: dataclasses.replace(image.brokers[fenced], fenced=True)},
        topics={"t": dataclasses.replace(topic, partitions={0: reg})}, offset=image.offset)
    return fenced


@pytest.mark.parametrize(("elr", "isr", "fires"), [
    ("true", (1, 2), True),  # Kafka 4.1 (KIP-966): no fenced broker in any ISR
    ("true", (2,), True),
    ("false", (1, 2), True),  # KIP-841 without ELR: only as the last member...
    ("false", (2,), False),   # ...which it is here
])  # fmt: skip
def test_fenced_in_isr_follows_the_eligible_leader_replicas_switch(elr: str,
                                                                   isr: tuple[int, ...],
                                                                   fires: bool) -> None:
    cluster = _started_cluster({"cluster.switches.eligible-leader-replicas": elr})
    checker = InvariantChecker(cluster).attach()
    cluster.loop.run_until(7_000)
    assert checker.violations == []
    fenced = _fence(cluster, isr)
    checker.check_now()
    found = [v for v in checker.violations if v.invariant == FENCED_IN_ISR]
    assert bool(found) == fires, [v.text() for v in checker.violations]
    if fires:
        v = found[0]
        assert f"names broker-{fenced}, which is fenced" in v.message
        assert f"isr {list(isr)}" in v.state and f"{fenced}:fenced" in v.state
        assert v.time_ms == 7_000 and v.event == "no event (checked outside the event loop)"


# --- the livelock of issue 24 ---------------------------------------------------------------


def _lead(cluster: SimCluster, broker: int) -> None:
    """Make `broker` the leader of t-0: reorder the replicas so it is preferred, then a
    preferred election (the controller's own operations, as kafka-reassign-partitions and
    kafka-leader-election would ask for them)."""
    from broker_app.controller.messages import ElectLeadersRequest, ReassignPartitionsRequest

    ctl = cluster.controller
    raft = ctl.raft
    assert raft is not None and ctl.controller is not None
    replicas = ctl.controller.image.topics["t"].partitions[0].replicas
    order = (broker, *(r for r in replicas if r != broker))
    now = cluster.loop.now_ms
    raft.reassign_partitions(ReassignPartitionsRequest([("t", 0, order)]), now)
    raft.elect_leaders(ElectLeadersRequest(0, [("t", 0)]), now)


def brief_leadership_without_writes(cluster: SimCluster, note: dict[str, Any]) -> bool:
    """KAFKA-10706's wedge, as it happens: a caught-up follower F becomes leader (it stamps
    the new epoch at its log end) and is replaced by the old leader L before it appends
    anything, so L never has F's epoch. F's fetches then carry that epoch, and L answers each
    with a DivergingEpoch whose end offset is F's own log end."""
    if "old" not in note:
        p = _leader(cluster)
        if p is None:
            return False
        f = _follower(cluster, p)
        if f.log.log_end_offset != p.log.log_end_offset:
            return False
        note["old"], note["new"] = p.local_broker_id, f.local_broker_id
        _lead(cluster, note["new"])
        return False
    rm = cluster.brokers[note["new"]].replica_manager
    f = rm.partitions.get(("t", 0)) if rm is not None else None
    if f is None or not f.is_leader:
        return False
    note["epoch"] = f.leader_epoch  # stamped at its log end, nothing written in it
    _lead(cluster, note["old"])
    return True


@pytest.mark.parametrize("fixed", [False, True], ids=["unfixed", "fixed"])
def test_the_kafka_10706_livelock_is_caught_when_the_fix_is_taken_out(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, fixed: bool
) -> None:
    if not fixed:
        truncate_to = Log.truncate_to

        def unfixed(self: Log, offset: int) -> bool:
            if offset >= self.log_end_offset:
                return False  # before KAFKA-10706: the epoch entry at the log end stays
            return truncate_to(self, offset)

        monkeypatch.setattr(Log, "truncate_to", unfixed)
    plan = parse_plan(CALM, "calm.yaml", {"workload.producers.duration_s": "8"})
    r, checker, note = simulate_checked(monkeypatch, plan, 1, tmp_path,
                                        brief_leadership_without_writes)  # fmt: skip
    assert "at_ms" in note, "the follower never became leader"
    if fixed:  # one DivergingEpoch answer drops the entry, the next fetch progresses
        assert checker.violations == [], [v.text() for v in checker.violations]
        assert r.verdict == "as-expected", r.judgement.misses
        return
    v = _only(checker, FETCH_LIVELOCK)
    assert v.enforced
    assert "ReplicaFetcherThread._run resumes" in v.event, v.event
    assert "times in a row" in v.message and "the leader reachable" in v.message
    # The state shows why: the follower's newest epoch starts at its log end, and the
    # leader never had that epoch.
    assert "follower of" in v.state and "leader of" in v.state
    assert f"LastFetchedEpoch {note['epoch']}" in v.message, v.message
    assert "epochs [" in v.state and v.time_ms > note["at_ms"]
    assert checker.result()["by_invariant"] == {FETCH_LIVELOCK: checker.result()["count"]}


def test_with_the_fix_the_same_seed_is_clean_and_checking_does_not_change_the_run(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    plan = load_plan(TARGETED)
    plain = sim_run.simulate(plan, steps_for(plan, LIVELOCK_SEED), LIVELOCK_SEED,
                             tmp_path / "plain")  # fmt: skip
    r, checker, _ = simulate_checked(monkeypatch, plan, LIVELOCK_SEED, tmp_path / "checked")
    assert checker.violations == [], [v.text() for v in checker.violations]
    assert checker.result() == {"count": 0, "by_partition": {}, "by_invariant": {},
                                "examples": [], "not_enforced": {},
                                "tolerated": {"count": 0, "by_partition": {},
                                              "by_invariant": {}, "examples": []}}  # fmt: skip
    assert r.events == plain.events
    assert r.history_path.read_bytes() == plain.history_path.read_bytes()  # type: ignore[union-attr]


# --- modes ------------------------------------------------------------------------------------


def _rules(overrides: dict[str, str]) -> dict[str, str | None]:
    plan = parse_plan(CALM, "calm.yaml", overrides)
    ctl, _ = controller_config(plan.cluster)
    return enforced_invariants(broker_configs(plan.cluster)[0].behaviour, ctl)


@pytest.mark.parametrize(("overrides", "not_enforced"), [
    ({}, set()),  # Kafka 4.1: everything
    ({"cluster.kafka_version": "3.9"}, set()),
    ({"cluster.kafka_version": "3.5"}, set()),
    ({"cluster.kafka_version": "3.3"}, {ISR_HOLDS_HW}),  # no KIP-903 broker epochs (L12)
    # eager ISR (L6, L9), no KIP-841 (L20)
    ({"cluster.kafka_version": "2.1"}, {ISR_HOLDS_HW, FENCED_IN_ISR}),
    # truncation to the HW (L1, L2), no KIP-841
    ({"cluster.kafka_version": "0.8"}, {ISR_HOLDS_HW, FENCED_IN_ISR}),
    ({"cluster.switches.isr-eligibility": "false"}, {FENCED_IN_ISR}),  # L20
    ({"cluster.switches.truncation": "kip-101"}, {ISR_HOLDS_HW}),
    ({"cluster.switches.truncation": "kip-279"}, set()),
    ({"cluster.switches.unclean-leader-election": "true"}, {ISR_HOLDS_HW}),  # L4
    ({"cluster.switches.controller-activation": "on-election"},  # L11
     {ONE_LEADER_PER_EPOCH, FENCED_IN_ISR, ISR_HOLDS_HW}),
])  # fmt: skip
def test_which_invariants_a_mode_enforces(overrides: dict[str, str],
                                          not_enforced: set[str]) -> None:
    rules = _rules(overrides)
    assert set(rules) == set(INVARIANTS)
    assert {k for k, why in rules.items() if why is not None} == not_enforced
    assert rules[LEADER_HW_MONOTONIC] is None and rules[FETCH_LIVELOCK] is None


def test_a_legacy_mode_violates_an_invariant_it_does_not_promise(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """L1 legacy (Kafka 0.8, truncation to the own HW): a follower in the ISR loses offsets
    below the leader's HW, then holds other batches there; tolerated, not counted."""
    text = (ROOT / "chaos_plans/scenarios/L1.yaml").read_text()
    base = parse_plan(text, "L1.yaml")
    plan = parse_plan(text, "L1.yaml", {**base.modes["legacy"].overrides,
                                        "workload.producers.duration_s": "18",
                                        "workload.consumers.count": "0"},
                      check_modes=False)  # fmt: skip
    r, checker, _ = simulate_checked(monkeypatch, plan, 1, tmp_path)
    assert r.results["anomalies"]["lost-write"]["count"] > 0
    result = checker.result()
    assert result["count"] == 0
    assert result["tolerated"]["by_invariant"].get(ISR_HOLDS_HW, 0) >= 1
    assert ISR_HOLDS_HW in result["not_enforced"]
    assert all(not v.enforced for v in checker.violations)


# --- event descriptions -------------------------------------------------------------------------


def test_describe_event_names_the_process_and_what_ran() -> None:
    loop = EventLoop(1)
    proc = Process(loop, "broker-9")
    proc.start()

    def tick() -> None:
        pass

    assert describe_event(partial(proc._run_guarded, proc.generation, tick, ())) == \
        "broker-9: test_describe_event_names_the_process_and_what_ran.<locals>.tick"
    assert describe_event(None) == "no event (checked outside the event loop)"


def test_a_power_loss_is_exempt_until_the_controller_admits_the_replica_knowingly(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """L12: a follower's power loss empties its log while the leader's ISR expansion naming it
    is in flight. Kafka 4.1 refuses that stale expansion (KIP-903), and the leader's maximal
    ISR naming the emptied replica meanwhile is no violation; Kafka 3.3 commits it after the
    replica registered again, and from then on the emptied ISR member is one (tolerated:
    3.3 does not promise isr-holds-hw)."""
    base = load_plan(ROOT / "chaos_plans/scenarios/L12.yaml")
    seen = {}
    for mode in ("fixed", "legacy"):
        plan = load_plan(ROOT / "chaos_plans/scenarios/L12.yaml", base.modes[mode].overrides)
        _r, checker, _ = simulate_checked(monkeypatch, plan, 1, tmp_path / mode)
        seen[mode] = checker
    assert seen["fixed"].violations == [], [v.text() for v in seen["fixed"].violations]
    v = _only(seen["legacy"], ISR_HOLDS_HW)
    assert not v.enforced and "holds offsets only below 0" in v.message, v.text()
    assert seen["legacy"].result()["count"] == 0


def test_power_loss_replica_added_back_on_a_pre_loss_fetch_is_not_held_before_it_registers(
        tmp_path: Path) -> None:  # fmt: skip
    """Found by `highwater bench sweep` (random-targeted, seed 1001421, Kafka 4.1): broker-1,
    out of t-1's ISR, loses two batches at its power loss; the leader's ISR expansion, sent on
    broker-1's fetch from before the loss, commits 0.4 s later while broker-1 is dead. Kafka
    cannot know of the loss before it registers again (then KIP-966 removes it), so the
    replica is not held to isr-holds-hw in that window; the run is clean."""
    from harness.plan.loader import load_plan
    from harness.run.simulated import simulate
    from harness.sim.explore import schedule_for

    plan = load_plan(ROOT / "chaos_plans/random-targeted.yaml")
    r = simulate(plan, schedule_for(plan, 1001421, plan.nemesis.overlap), 1001421, tmp_path)
    assert r.results["invariant-violations"]["count"] == 0, r.results["invariant-violations"]
    assert r.verdict == "as-expected", r.judgement.misses
