"""`replace-consumer`: an assign-mode consumer of the workload is replaced by a new process
reading from the beginning (L2 uses it to have each rack's consumer re-read its replica).
Plan validation, the nemesis handler, the Workload's own restart (a real thread around a
fake client is not needed: the slot bookkeeping is what the handler drives), the simulator."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.nemesis import Nemesis, NemesisError
from harness.plan.errors import PlanError
from harness.plan.loader import parse_plan
from harness.plan.model import ConsumerSpec
from harness.plan.timing import steps_for
from harness.run.simulated import simulate
from harness.store.history import HistoryWriter
from harness.workload import Workload

from .states import three_brokers

PLAN = """\
name: r
cluster:
  brokers: 3
  topics: [{name: t, partitions: 1, replication_factor: 3}]
workload:
  producers: {acks: all, rate: 50, duration_s: 6}
  consumers: {count: 2, racks: [rack-1, rack-2]}
faults:
  - {name: reread, at: 3, action: replace-consumer, consumer: 1}
"""


def test_a_replace_consumer_step_is_read() -> None:
    step = parse_plan(PLAN).faults[0]
    assert (step.action, step.params) == ("replace-consumer", {"consumer": 1})


@pytest.mark.parametrize(("edit", "message"), [
    (("consumer: 1}", "consumer: 2}"), "no consumer 2: the workload has 2"),
    (("{count: 2, racks: [rack-1, rack-2]}", "{count: 2, mode: subscribe}"),
     "needs workload.consumers with mode: assign"),
    (("consumer: 1}", "consumer: -1}"), "consumer"),
])
def test_replace_consumer_is_validated(edit: tuple[str, str], message: str) -> None:
    with pytest.raises(PlanError, match=message):
        parse_plan(PLAN.replace(*edit))


class _Consumers:
    def __init__(self, mode: str = "assign") -> None:
        self.consumer_spec = ConsumerSpec(count=2, mode=mode)
        self.restarted: list[int] = []

    def restart_consumer(self, slot: int) -> None:
        self.restarted.append(slot)


def _fault(workload: Any) -> Any:
    plan = parse_plan(PLAN)
    n = Nemesis(object(), list(plan.faults), history=None,  # type: ignore[arg-type]
                state=three_brokers, seed=1, workload=workload)
    return n._plan(0, plan.faults[0], three_brokers())


def test_the_handler_restarts_the_slot() -> None:
    wl = _Consumers()
    fault = _fault(wl)
    fault.act()
    assert wl.restarted == [1] and fault.undo is None and fault.nodes == ("consumer-1",)
    with pytest.raises(NemesisError, match="needs an assign-mode consumer workload"):
        _fault(_Consumers("subscribe"))


def test_the_workload_marks_the_slot_for_its_consumer_loop(tmp_path: Path) -> None:
    history = HistoryWriter(tmp_path / "h.jsonl")
    try:
        wl = Workload("127.0.0.1:1", history, [], ConsumerSpec(count=2))
        wl.restart_consumer(1)
        assert wl._restart_consumers == {1}  # the consumer loop of slot 1 picks it up
    finally:
        history.close()


def test_on_the_simulator_the_consumer_starts_over_from_its_rack_replica(
        tmp_path: Path) -> None:
    plan = parse_plan(PLAN.replace("  brokers: 3\n", "  brokers: 3\n"
                                   "  switches: {replica-selector: rack-aware}\n"))
    r = simulate(plan, steps_for(plan, 1), 1, tmp_path)
    assert r.results["valid"], r.results["anomalies"]
    # consumers in the followers' racks read there (KIP-392), not only from the leader
    assert sum(r.follower_reads.values()) > 0, r.follower_reads
    ops = [json.loads(line) for line in r.history_path.read_text().splitlines()]
    starts: dict[int, int] = {}
    for o in ops:
        if o["f"] == "poll" and o["type"] == "ok" and not o["final"] and o["records"]:
            starts.setdefault(o["process"], o["records"][0]["offset"])
    # two consumers, then the replacement of slot 1: a third process, reading from 0 again
    assert len(starts) == 3 and all(v == 0 for v in starts.values()), starts
