"""The nemesis handlers against a fake cluster: every action of the table has a handler that
states its undo, link actions call the right Net method on every proxied pair and undo it,
and the Nemesis schedule writes start/stop ops around a fault's window."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from harness.nemesis import HANDLERS, UNSUPPORTED, Nemesis, NemesisError, handler_for
from harness.plan.actions import ACTIONS, RANDOM_KINDS
from harness.plan.model import Step
from harness.plan.targets import Target
from harness.store.history import HistoryWriter
from tests.unit.plan.states import three_brokers


class FakeNet:
    nodes = ["broker-1", "broker-2", "broker-3", "client", "controller-1"]

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def linked(self, a: str, b: str) -> bool:
        return a != b and a in self.nodes and b in self.nodes

    def __getattr__(self, name: str) -> Any:
        return lambda *a, **k: self.calls.append((name, *a, *sorted(k.items())))


class FakeCluster:
    disk_faults = True

    def __init__(self) -> None:
        self.net = FakeNet()
        self.calls: list[tuple[Any, ...]] = []
        self.statuses: dict[str, str] = {}

    def node_names(self) -> list[str]:
        return ["controller-1", "broker-1", "broker-2", "broker-3"]

    def status(self, n: str) -> str:
        return self.statuses.get(n, "running")

    def __getattr__(self, name: str) -> Any:
        return lambda *a, **k: self.calls.append((name, *a, *sorted(k.items())))


def _fault(step: Step, cluster: FakeCluster | None = None) -> tuple[Any, FakeCluster]:
    cluster = cluster or FakeCluster()
    n = Nemesis(cluster, [step], history=None, state=three_brokers, seed=7)  # type: ignore[arg-type]
    return n._plan(0, step, three_brokers()), cluster


def test_every_action_has_a_handler_that_states_its_undo() -> None:
    for name, spec in ACTIONS.items():
        if name in UNSUPPORTED:
            with pytest.raises(NemesisError):
                handler_for(name)
            continue
        handler = handler_for(name)
        assert handler is HANDLERS[spec.kind]
        assert name in handler.undoes, name
        # The table documents the undo; the handler is what does it: they must agree.
        assert handler.undoes[name] == spec.undo, name
    assert set(RANDOM_KINDS) <= set(ACTIONS) - set(UNSUPPORTED)


LINK_CASES = [
    ("latency", {"ms": 100, "jitter_ms": 5}, ("latency", 100, 5)),
    ("bandwidth", {"kbps": 64}, ("bandwidth", 64)),
    ("blackhole", {"close_after_ms": 0}, ("blackhole", 0)),
    ("reset", {"after_ms": 250}, ("reset", 250)),
    ("slice", {"bytes": 16, "variation": 4, "delay_us": 10}, ("slice", 16, 4, 10)),
    ("limit-data", {"bytes": 1024}, ("limit_data", 1024)),
]


@pytest.mark.parametrize(("action", "params", "call"), LINK_CASES)
def test_link_action_hits_each_pair_and_undo_clears_only_its_kind(action, params, call) -> None:
    step = Step(action=action, name="s", at=0, src=Target("leader", partition="t-0"),
                dst=Target("rest"), duration=1.0, params=params)
    fault, cluster = _fault(step)
    # t-0's leader is broker 2; rest = the other brokers and the controller.
    assert fault.nodes == ("broker-2->broker-1", "broker-2->broker-3",
                           "broker-2->controller-1")
    fault.act()
    name, *args = call
    assert cluster.net.calls == [(name, "broker-2", y, *args)
                                 for y in ("broker-1", "broker-3", "controller-1")]
    cluster.net.calls.clear()
    assert fault.undo is not None
    fault.undo()
    assert cluster.net.calls == [("clear", "broker-2", y, ("kinds", (action,)))
                                 for y in ("broker-1", "broker-3", "controller-1")]


def test_partition_and_process_and_disk_faults() -> None:
    part, cluster = _fault(Step(action="partition", name="p", at=0,
                                target=Target("leader", partition="t-0"), duration=2))
    assert part.extra == {"peers": ["broker-1", "broker-3", "controller-1"]}
    part.act()
    part.undo()
    assert [c[0] for c in cluster.net.calls] == ["partition"] * 3 + ["heal"] * 3

    kill, cluster = _fault(Step(action="kill", name="k", at=0, target=Target("broker",
                                brokers=(3,)), duration=2, params={"lose_unsynced": True}))
    kill.act()
    cluster.statuses["broker-3"] = "exited"
    kill.undo()
    assert cluster.calls == [("kill", "broker-3", ("lose_unsynced", True)),
                             ("start", "broker-3")]

    stall, cluster = _fault(Step(action="disk-stall", name="d", at=0, target=Target("all"),
                                 duration=4, params={"ops": "fsync"}))
    stall.act()
    stall.undo()
    assert cluster.calls[0] == ("disk_stall", "broker-1", 4.0, "fsync")
    assert cluster.calls[-1] == ("disk_unstall", "broker-3")

    heal, cluster = _fault(Step(action="heal-all", name="h", at=0))
    cluster.statuses["broker-1"] = "paused"
    heal.act()
    assert heal.undo is None
    assert cluster.net.calls == [("heal_all",)]
    assert ("resume", "broker-1") in cluster.calls
    assert [c for c in cluster.calls if c[0] == "disk_unstall"] == [
        ("disk_unstall", f"broker-{i}") for i in (1, 2, 3)]


def test_nemesis_writes_a_window_around_a_link_fault(tmp_path: Path) -> None:
    history = HistoryWriter(tmp_path / "history.jsonl")
    cluster = FakeCluster()
    step = Step(action="reset", name="rst", at=0, src=Target("client"),
                dst=Target("broker", brokers=(1,)), duration=0.2, params={"after_ms": 0})
    n = Nemesis(cluster, [step], history, state=three_brokers, seed=1).start()
    deadline = time.monotonic() + 5
    while not n.done() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert n.done() and n.failure is None
    history.close()
    ops = [json.loads(line) for line in (tmp_path / "history.jsonl").read_text().splitlines()]
    assert [(o["f"], o["phase"]) for o in ops] == [("reset", "start"), ("reset", "stop")]
    assert ops[0]["value"]["links"] == ["client->broker-1"]
    assert ops[1]["time"] - ops[0]["time"] >= 0.2e9
    assert cluster.net.calls == [("reset", "client", "broker-1", 0),
                                 ("clear", "client", "broker-1", ("kinds", ("reset",)))]
