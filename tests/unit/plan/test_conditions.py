"""The condition language: parsing errors with columns, evaluation on hand-built states."""

from __future__ import annotations

import pytest

from harness.plan.conditions import parse_condition
from harness.plan.errors import ConditionError

from .states import three_brokers

TOPOLOGY = {"t-0": 3, "t-1": 3}
BROKERS = (1, 2, 3)


def holds(text: str, **state_kw: object) -> bool | None:
    return parse_condition(text, TOPOLOGY, BROKERS).evaluate(three_brokers(**state_kw))


@pytest.mark.parametrize(("text", "expected"), [
    ("leader(t-0).hw >= 10 and replica(t-0, follower).hw < leader(t-0).hw", False),
    ("leader(t-0).hw >= 10 and replica(t-0, follower, 1).hw < leader(t-0).hw", True),
    ("leader(t-0).leo == 20", True),
    ("leader(t-0).id == 2", True),
    ("follower(t-0).id == 1 and follower(t-0, 1).id == 3", True),
    ("replica(t-0, 3).leo == 12", True),
    ("replica(t-0, 1).leo == leader(t-0).leo", False),
    ("replica(t-0, 1).leo + 2 == leader(t-0).leo", True),
    ("leader(t-0).leo - replica(t-0, 3).leo >= 8", True),
    ("isr(t-0).size == 3", True),
    ("isr(t-1).size == 1", True),
    ("replicas(t-1).size == 3", True),
    ("epoch(t-0) > 3", True),
    ("epoch(t-1) > 3", False),
    ("2 in isr(t-0)", True),
    ("2 not in isr(t-1)", True),
    ("replica(t-1, 1).in_isr", False),
    ("replica(t-1, 3).in_isr == true", True),
    ("online(t-0) and alive(1)", True),
    ("elapsed >= 12 and elapsed < 12.5", True),
    ("not (epoch(t-0) == 4)", False),
    ("epoch(t-0) == 1 or epoch(t-1) == 1", True),
    ("leader(t-0).epoch == 3", True),
    ("leader(t-0).hw_checkpoint == 9 and leader(t-0).hw_checkpoint < leader(t-0).hw", True),
    ("follower(t-0).hw_checkpoint >= 0", False),  # never checkpointed: -1
])
def test_evaluates_on_a_hand_built_state(text: str, expected: bool) -> None:
    assert holds(text) is expected


def test_unknown_values_do_not_satisfy_a_condition() -> None:
    # Broker 1 reported nothing for t-1: its LEO is unknown, not zero.
    assert holds("replica(t-1, 1).leo == 0") is None
    assert holds("not (replica(t-1, 1).leo == 0)") is None
    assert not parse_condition("replica(t-1, 1).leo == 0").holds(three_brokers())
    # Kleene logic: a known false or true settles and/or regardless of the unknown.
    assert holds("replica(t-1, 1).leo > 0 and epoch(t-0) == 99") is False
    assert holds("replica(t-1, 1).leo > 0 or epoch(t-0) == 4") is True
    # No leader: leader(...) and follower(...) are unknown, online() is false.
    assert holds("leader(t-0).hw >= 0", leader=None) is None
    assert holds("follower(t-0).hw >= 0", leader=None) is None
    assert holds("online(t-0)", leader=None) is False
    # Liveness comes from the snapshot.
    assert holds("replica(t-0, 3).alive", alive=frozenset({1, 2})) is False
    assert holds("alive(3)", alive=frozenset({1, 2})) is False


def test_follower_follows_the_current_leader() -> None:
    # Leader moves to 1: followers are now 2 and 3 in assignment order.
    assert holds("follower(t-0).id == 2 and follower(t-0, 1).id == 3", leader=1) is True


def test_topic_names_with_dashes_and_dots() -> None:
    c = parse_condition("epoch(my-topic.v2-11) >= 0", {"my-topic.v2-11": 2})
    assert c.evaluate(three_brokers()) is None  # no such partition in the state: unknown


@pytest.mark.parametrize(("text", "column", "fragment"), [
    ("leader(t-0).hw >= >= 3", 19, "expected a value"),
    ("leader(t-0).hw >= 10 and", 25, "end of condition"),
    ("leadr(t-0).hw > 1", 1, "unknown name 'leadr'"),
    ("leader(t-0) > 1", 13, ".leo, .hw"),
    ("leader(t-0).lso > 1", 13, "unknown replica attribute 'lso'"),
    ("isr(t-0) == 3", 10, "cannot compare a set with a number"),
    ("isr(t-0).len == 3", 10, "only .size"),
    ("leader(t-0).hw", 1, "must be true or false"),
    ("leader(t-0).hw > 1 && epoch(t-0) > 1", 20, "unexpected character '&'"),
    ("leader(t9).hw > 1", 8, "expected a partition"),
    ("leader(x-0).hw > 1", 8, "unknown partition 'x-0'"),
    ("replica(t-0, 9).hw > 1", 14, "no broker 9"),
    ("replica(t-0, boss).hw > 1", 14, "'leader' or 'follower'"),
    ("follower(t-0, 2).hw > 1", 15, "follower index 2 out of range"),
    ("online(t-0) > 1", 1, "needs numbers"),
    ("online(t-0) and 3", 17, "expected true/false"),
    ("leader(t-0).hw in isr(t-0).size", 19, "isr(P) or replicas(P)"),
    ("(epoch(t-0) > 1", 16, "expected ')'"),
    ("epoch(t-0) > 1 epoch(t-0)", 16, "unexpected 'epoch'"),
    ("   ", 1, "empty condition"),
])
def test_syntax_errors_carry_the_column(text: str, column: int, fragment: str) -> None:
    with pytest.raises(ConditionError) as info:
        parse_condition(text, TOPOLOGY, BROKERS)
    assert info.value.column == column, str(info.value)
    assert fragment in info.value.message
