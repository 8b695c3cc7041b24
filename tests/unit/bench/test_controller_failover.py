"""`highwater bench controller-failover`'s pure parts: reading the quorum from the controllers'
/state answers, and attributing acknowledged-but-lost values to the kill they were sent after."""

from __future__ import annotations

import json
from pathlib import Path

from harness.bench.controller_failover import Kill, attribute, new_active, stable_leader

NAMES = ["controller-1", "controller-2", "controller-3"]


def q(epoch: int, leader: int, active: bool = False) -> dict:
    return {"epoch": epoch, "leader_id": leader, "active": active}


def test_a_stable_leader_needs_every_controller_to_agree() -> None:
    agreed = {"controller-1": q(4, 3002), "controller-2": q(4, 3002, True),
              "controller-3": q(4, 3002)}
    assert stable_leader(agreed, NAMES) == ("controller-2", 4)
    assert stable_leader({k: v for k, v in agreed.items() if k != "controller-3"}, NAMES) is None
    assert stable_leader({**agreed, "controller-3": q(5, 3002)}, NAMES) is None
    assert stable_leader({**agreed, "controller-2": q(4, 3002, False)}, NAMES) is None


def test_a_new_active_controller_is_active_at_a_higher_epoch() -> None:
    # controller-1 still claims epoch 4 (deposed, not yet resigned): not a new one.
    answers = {"controller-1": q(4, 3001, True), "controller-3": q(5, 3003, True)}
    assert new_active(answers, 4) == ("controller-3", 5)
    assert new_active({"controller-1": q(4, 3001, True)}, 4) is None
    assert new_active({"controller-2": q(5, 3003)}, 4) is None  # a follower of 3: not active


def test_lost_values_go_to_the_kill_window_they_were_sent_in(tmp_path: Path) -> None:
    ops = []

    def send(value: int, t_s: float, kind: str) -> None:
        ops.append({"time": int(t_s * 1e9), "process": 0, "type": kind, "f": "send",
                    "topic": "t", "partition": 0, "value": value, "acks": "all"})

    for v, t in ((1, 1.0), (2, 5.5), (3, 10.5), (4, 10.8)):
        send(v, t, "invoke")
        send(v, t + 0.1, "ok")
    ops.append({"time": int(20e9), "process": 9, "type": "ok", "f": "poll", "final": True,
                "records": [{"topic": "t", "partition": 0, "offset": 0, "value": 3}]})
    path = tmp_path / "history.jsonl"
    path.write_text("".join(json.dumps({"index": i, **o}) + "\n" for i, o in enumerate(ops)))
    kills = [Kill(1, "controller-1", 1, int(5e9), failover_ms=2000),
             Kill(2, "controller-2", 2, int(10e9), failover_ms=1000)]
    acked, read, lost, before = attribute(path, kills)
    assert (acked, read, lost, before) == (4, 1, [1, 2, 4], 1)
    assert [k.lost for k in kills] == [1, 1]  # 2 after kill 1; 4 after kill 2 (3 was read)
    assert [k.acked_during for k in kills] == [1, 2]  # acks within kill + failover


def test_the_quorum_timers_reach_every_controller_and_set_the_reference_bound() -> None:
    import argparse

    from harness.bench.controller_failover import (
        Result,
        add_arguments,
        controller_args,
        reference_bound_ms,
    )

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args(["--fetch-timeout-ms", "1000", "--signal", "TERM"])
    assert controller_args(args) == ["--controller-quorum-fetch-timeout-ms", "1000",
                                     "--controller-quorum-election-timeout-ms", "1000"]
    # A crash is noticed only after the fetch timeout; a graceful resign needs no detection.
    crash = Result("r", 3, "kill", "KILL", fetch_timeout_ms=2000, election_timeout_ms=1000)
    assert reference_bound_ms(crash)[0] == 3000
    graceful = Result("r", 3, "kill", "TERM", fetch_timeout_ms=2000, election_timeout_ms=1000)
    assert reference_bound_ms(graceful)[0] == 1000
