"""harness/checker/quorum_check.commits_while_cut: a cut-off controller's high watermark must
not move in its epoch while it is cut; its log end may (what it wrote and could not commit)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from harness.checker.quorum_check import commits_while_cut
from harness.store.quorum import QuorumSample, QuorumWriter, read_quorum

S = 1_000_000_000


def q(t_s: float, c: int, epoch: int, leader: int | None, hw: int | None,
      leo: int | None = None) -> QuorumSample:
    return QuorumSample(int(t_s * S), c, epoch, leader, leader == c, hw, hw or 0, leo)


BEFORE = [q(9.5, 1, 1, 1, 11, 11), q(9.5, 2, 1, 1, 11, 11), q(9.5, 3, 1, 1, 11, 11)]


def test_a_cut_leader_that_appends_but_does_not_commit() -> None:
    samples = [*BEFORE, q(11.1, 1, 1, 1, 11, 12), q(11.6, 3, 2, 3, 12, 12),
               q(12.5, 1, 1, 1, None, 12),  # resigned: no high watermark
               q(18.4, 1, 2, 3, 14, 14)]  # after the cut: follows epoch 2
    r = commits_while_cut(samples, 1, 10 * S, 18 * S)
    assert r["commits"] == 0 and r["hw_at_cut"] == r["max_hw_while_cut"] == 11
    assert r["appended_while_cut"] == 1 and r["new_active"] == [[3, 2]]
    assert r["samples"] == 2


def test_a_high_watermark_that_moves_in_the_old_epoch_is_a_commit() -> None:
    samples = [*BEFORE, q(11.0, 1, 1, 1, 12, 12), q(12.0, 1, 1, 1, 13, 13)]
    r = commits_while_cut(samples, 1, 10 * S, 18 * S)
    assert r["commits"] == 2 and r["max_hw_while_cut"] == 13


def test_a_later_epoch_and_other_controllers_are_not_its_commits() -> None:
    samples = [*BEFORE, q(12.0, 1, 2, 3, 20, 20), q(12.0, 2, 2, 3, 20, 20)]
    r = commits_while_cut(samples, 1, 10 * S, 18 * S)
    assert r["commits"] == 0 and r["appended_while_cut"] == 0


def test_no_sample_before_the_cut_cannot_be_judged() -> None:
    with pytest.raises(ValueError, match="no quorum sample before the cut"):
        commits_while_cut([q(11.0, 1, 1, 1, 11)], 1, 10 * S, 18 * S)
    with pytest.raises(ValueError, match="ends"):
        commits_while_cut(BEFORE, 1, 18 * S, 10 * S)


def test_leo_round_trips_and_is_optional(tmp_path: Path) -> None:
    path = tmp_path / "quorum.jsonl"
    w = QuorumWriter(path, start_ns=0, clock=lambda: 5)
    w.write(1, 3, 1, True, 10, 10, leo=12)
    w.write(2, 3, 1, False, 10, 10)  # a poller that does not know the log end
    w.close()
    assert '"leo"' not in path.read_text().splitlines()[1]
    samples, problems = read_quorum(path)
    assert problems == [] and [s.leo for s in samples] == [12, None]
    with open(path, "a") as fh:
        fh.write('{"time":6,"controller":1,"epoch":3,"leader":1,"active":true,"hw":1,'
                 '"committed":1,"leo":"x"}\n')
    _, problems = read_quorum(path)
    assert len(problems) == 1 and "leo" in problems[0]


# ---------------------------------------------------------------- the run check

def nemesis(index: int, t_s: float, f: str, phase: str, value: dict) -> dict:
    return {"index": index, "time": int(t_s * S), "process": "nemesis", "type": "info",
            "f": f, "phase": phase, "value": value}


CONTAINER_CUT = {"step": "cut", "nodes": ["controller-1"],
                 "peers": ["controller-2", "controller-3", "broker-3"], "duration": 8}


def test_cut_windows_are_steps_that_separate_a_voter_from_every_other_one() -> None:
    from harness.checker.quorum_check import cut_windows

    ops = [
        nemesis(3, 10, "partition", "start", CONTAINER_CUT),
        # only one other voter: controller-2 still reaches controller-3, no window
        nemesis(4, 10, "partition", "start", {"step": "half", "nodes": ["controller-2"],
                                              "peers": ["controller-1"]}),
        # the simulator's form: the links it cut, by name (controller-3 from both others)
        nemesis(5, 11, "partition", "start", {"step": "sim", "cut": [
            "controller-3<->controller-1", "controller-2<->controller-3", "broker-1<->broker-2"]}),
        # a container isolate cuts its node from everything
        nemesis(6, 12, "isolate", "start", {"step": "iso", "nodes": ["controller-2"]}),
        nemesis(7, 13, "kill", "start", {"step": "k", "nodes": ["controller-1"]}),
        nemesis(8, 18, "partition", "stop", CONTAINER_CUT),
        nemesis(9, 18, "partition", "stop", {"step": "half"}),
        nemesis(10, 19, "partition", "stop", {"step": "sim"}),
        nemesis(11, 20, "isolate", "stop", {"step": "iso"}),
    ]
    got = [(w.controller, w.start_ns // S, w.end_ns // S, w.step, w.indices)
           for w in cut_windows(ops, [1, 2, 3])]
    assert got == [(1, 10, 18, "cut", (3, 8)), (3, 11, 19, "sim", (5, 10)),
                   (2, 12, 20, "iso", (6, 11))]
    assert cut_windows(ops, [1]) == []  # a lone controller has no other voter to be cut from


def _run(tmp_path: Path, samples: list[QuorumSample]) -> tuple[Path, Path]:
    history = tmp_path / "history.jsonl"
    lines = [{"index": 0, "time": 0, "process": 0, "type": "invoke", "f": "send",
              "topic": "t", "partition": 0, "value": 0, "acks": "all"},
             nemesis(1, 10, "partition", "start", CONTAINER_CUT),
             nemesis(2, 18, "partition", "stop", CONTAINER_CUT)]
    history.write_text("".join(json.dumps(x) + "\n" for x in lines))
    quorum = tmp_path / "quorum.jsonl"
    quorum.write_text("".join(json.dumps(dataclasses.asdict(s)) + "\n" for s in samples))
    return history, quorum


def test_the_run_check_counts_moves_after_the_grace_only(tmp_path: Path) -> None:
    from harness.checker.quorum_check import controller_cut_check

    # 10.4 s: a fetch in flight at the cut lands (within the 1 s grace): not a commit while
    # cut. 12 s and 13 s: the high watermark moves again in epoch 1: two commits while cut.
    samples = [*BEFORE, q(10.4, 1, 1, 1, 12, 12), q(11.5, 1, 1, 1, 12, 13),
               q(12.0, 1, 1, 1, 13, 14), q(13.0, 1, 1, 1, 14, 14)]
    r = controller_cut_check(*_run(tmp_path, samples))
    assert r is not None
    assert (r["count"], r["by_partition"], r["examples"]) == (2, {"controller-1": 2}, [[1, 2]])
    clean = [*BEFORE, q(10.4, 1, 1, 1, 12, 12), q(11.5, 1, 1, 1, 12, 13),
             q(14.0, 1, 2, 3, 15, 15)]  # then it follows epoch 2: not its commits
    r = controller_cut_check(*_run(tmp_path, clean))
    assert r is not None and r["count"] == 0 and r["windows"][0]["appended_while_cut"] == 1


def test_the_run_check_is_absent_when_nothing_could_be_judged(tmp_path: Path) -> None:
    from harness.checker.quorum_check import controller_cut_check

    # No sample of controller 1 before the cut (plus grace): nothing to compare with.
    late = [q(12.0, 1, 1, 1, 13, 14), q(9.0, 2, 1, 1, 11, 11), q(9.0, 3, 1, 1, 11, 11)]
    assert controller_cut_check(*_run(tmp_path, late)) is None
    assert controller_cut_check(*_run(tmp_path, [])) is None  # no quorum samples at all
