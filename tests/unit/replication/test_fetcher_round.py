"""FetchRound, the fetch round ReplicaFetcherThread drives on both runtimes: the order of its
requests, each built after the previous answer was applied; a failed send or a bug ends the
round as an error; a follower ahead of its leader under "stop" (KAFKA-3410) is `fatal`. The
session here records what the round asks of it."""

from __future__ import annotations

from typing import Any

from broker_app.replication.errors import LogTruncationNotAllowedError
from broker_app.replication.fetcher_round import FetchRound


class Session:
    leader_id = 2

    def __init__(self, list_offsets: int = 1, epochs: bool = True, fetch: bool = True,
                 apply: Any = None) -> None:
        self.calls: list[str] = []
        self._lo, self._epochs, self._fetch = list_offsets, epochs, fetch
        self._apply = apply or (lambda pending, response: 0)

    def build_list_offsets(self) -> list[str]:
        self.calls.append("build list-offsets")
        return [f"list-offsets-{i}" for i in range(self._lo)]

    def build_offset_for_leader_epoch(self) -> str | None:
        self.calls.append("build epochs")
        return "epochs" if self._epochs else None

    def build_fetch(self) -> str | None:
        self.calls.append("build fetch")
        return "fetch" if self._fetch else None

    def apply(self, pending: str, response: Any) -> int:
        self.calls.append(f"apply {pending}")
        return self._apply(pending, response)


def _drive(rnd: FetchRound, answer: Any = "ok") -> list[str]:
    sent = []
    while (pending := rnd.next_request()) is not None:
        sent.append(pending)
        if answer is None:
            rnd.failed()
        else:
            rnd.answered(pending, answer)
    return sent


def test_each_request_is_built_after_the_previous_answer_was_applied() -> None:
    session = Session(list_offsets=2)
    rnd = FetchRound(session)
    assert _drive(rnd) == ["list-offsets-0", "list-offsets-1", "epochs", "fetch"]
    assert session.calls == ["build list-offsets", "apply list-offsets-0", "apply list-offsets-1",
                             "build epochs", "apply epochs", "build fetch", "apply fetch"]
    assert (rnd.outcome.sent, rnd.outcome.errors, rnd.fatal) == (4, 0, None)
    assert rnd.next_request() is None  # over is over


def test_partition_errors_count_and_nothing_to_send_is_no_progress() -> None:
    rnd = FetchRound(Session(list_offsets=0, apply=lambda p, r: 2 if p == "fetch" else 0))
    assert _drive(rnd) == ["epochs", "fetch"]
    assert (rnd.outcome.sent, rnd.outcome.errors) == (2, 2)
    idle = FetchRound(Session(list_offsets=0, epochs=False, fetch=False))
    assert _drive(idle) == [] and not idle.outcome.progressed


def test_a_failed_send_or_a_bug_ends_the_round_as_an_error() -> None:
    failed = FetchRound(Session())
    assert _drive(failed, answer=None) == ["list-offsets-0"]
    assert (failed.outcome.sent, failed.outcome.errors) == (1, 1)

    def bug(pending: str, response: Any) -> int:
        raise KeyError(pending)

    broken = FetchRound(Session(apply=bug))
    assert _drive(broken) == ["list-offsets-0"]
    assert (broken.outcome.errors, broken.fatal) == (1, None)


def test_a_follower_ahead_under_stop_is_fatal() -> None:
    def ahead(pending: str, response: Any) -> int:
        if pending == "epochs":
            raise LogTruncationNotAllowedError("latest offset 1 is less than 5")
        return 0

    rnd = FetchRound(Session(apply=ahead))
    assert _drive(rnd) == ["list-offsets-0", "epochs"]
    assert rnd.fatal == "latest offset 1 is less than 5"
    assert (rnd.outcome.sent, rnd.outcome.errors) == (2, 1)
