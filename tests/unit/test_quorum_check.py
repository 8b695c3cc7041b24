"""harness/quorum_check.commits_while_cut: a cut-off controller's high watermark must not move
in its epoch while it is cut; its log end may (what it wrote and could not commit)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.quorum_check import commits_while_cut
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
