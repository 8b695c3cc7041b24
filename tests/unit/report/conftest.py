"""A complete fixture run dir, built in the test: history, results, states, plan and run.json.

The history is written with the checker's HistoryWriter on a fake clock: 30 s of sends on
t-0/t-1 (acks 1 and all), polls, a `kill` of broker 1 from 10 s to 14 s and a network
`partition` from 20 s that is never stopped; fails and infos during the kill. States: three
brokers, leader 1 (epoch 0) until the kill, then leader 2 (epoch 1); broker 1 has no samples
while killed. results.json names lost-write examples at known indexes.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.store import Store
from harness.store.history import HistoryWriter
from harness.store.states import StatesWriter

S = 1_000_000_000


class FakeClock:
    def __init__(self) -> None:
        self.now = 0

    def __call__(self) -> int:
        return self.now


def build_run(root: Path) -> tuple[Path, dict]:
    run = Store(root / "store").create_run(
        "kill-leader", {"name": "kill-leader", "description": "fixture <run> & co",
                        "nemesis": {"mode": "scripted", "seed": None},
                        "expected": {"lost-write": "> 0"}},
    )
    run.write_meta(seed=424242)
    clock = FakeClock()
    h = HistoryWriter(run.history_path, clock=clock)
    facts: dict = {"lost": [], "sends": 0}
    value = 0
    offsets = {0: 0, 1: 0}
    killed = False
    stopped_partition = False
    for step in range(300):  # one send every 100 ms for 30 s
        clock.now = step * S // 10
        if clock.now == 10 * S:
            h.nemesis("kill", "start", {"node": 1})
            killed = True
        if clock.now == 14 * S:
            h.nemesis("kill", "stop", {"node": 1})
            killed = False
        if clock.now == 20 * S and not stopped_partition:
            h.nemesis("partition", "start", {"nodes": [2, 3]})
            stopped_partition = True
        p = step % 2
        inv = h.invoke(step % 3, "send", topic="t", partition=p, value=value, acks="1")
        clock.now += 2_000_000 + (step % 7) * 300_000  # 2-4 ms
        if killed and step % 4 == 0:
            h.complete(inv, "fail", error="NOT_LEADER_FOR_PARTITION")
        elif killed and step % 4 == 1:
            clock.now += 60_000_000
            h.complete(inv, "info", error="_MSG_TIMED_OUT")
        else:
            done = h.complete(inv, "ok", offset=offsets[p])
            offsets[p] += 1
            if 9 * S < clock.now < 10 * S:
                facts["lost"].append([inv["index"], done["index"]])
        facts["sends"] += 1
        value += 1
        if step % 10 == 0:
            poll = h.invoke(100, "poll", final=False)
            h.complete(poll, "ok", records=[{"topic": "t", "partition": 0, "offset": 0,
                                             "value": 0}])
    h.close()
    facts["last_index"] = h._index - 1

    with StatesWriter(run.states_path, start_ns=0, clock=clock) as w:
        for tick in range(0, 31):
            t = tick * S
            leader, epoch = (1, 0) if tick < 11 else (2, 1)
            for node in (1, 2, 3):
                if node == 1 and 10 <= tick < 15:
                    continue  # killed: no answer
                hw = tick * 5 - (node - 1) * 2  # followers trail the leader a little
                lag = 12 if node == 3 and tick >= 20 else 0  # cut off from 20 s
                for p in (0, 1):
                    w.write(node, "t", p, "leader" if node == leader else "follower", leader,
                            epoch, max(0, hw - lag), max(0, hw + 3 - lag + p), [1, 2, 3],
                            time_ns=t)

    results = {
        "valid": False,
        "anomalies": {
            "lost-write": {"count": len(facts["lost"]), "by_partition": {"t-0": 3, "t-1": 2},
                           "examples": facts["lost"]},
            "inconsistent-offset": {"count": 0, "by_partition": {}, "examples": []},
            "unseen-info": {"count": 1, "by_partition": {"t-1": 1}, "examples": [[101]]},
        },
        "stats": {"sends": facts["sends"], "acked": 280, "failed": 10, "info": 10, "polls": 30,
                  "lost_by_acks": {"all": 0, "1": len(facts["lost"]), "0": 0}},
        "expected": {"lost-write": "> 0"},
        "verdict": "as-expected",
    }
    run.results_path.write_text(json.dumps(results))
    return run.path, facts


@pytest.fixture
def fixture_run(tmp_path: Path) -> tuple[Path, dict]:
    return build_run(tmp_path)
