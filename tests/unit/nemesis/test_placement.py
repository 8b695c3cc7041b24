"""harness.nemesis.placement: the placement `kafka-reassign-partitions --generate` proposes."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from harness.nemesis.placement import place_topic, propose


def test_placement_spreads_leaders_and_replicas_round_robin() -> None:
    placed = place_topic(6, 3, [1, 2, 3], random.Random(5))
    assert all(len(set(r)) == 3 for r in placed)  # no broker twice in one partition
    assert Counter(r[0] for r in placed) == {1: 2, 2: 2, 3: 2}  # leaders spread evenly
    assert Counter(b for r in placed for b in r) == {1: 6, 2: 6, 3: 6}


def test_kafkas_formula_with_known_start_and_shift() -> None:
    class Fixed(random.Random):
        def randrange(self, n: int) -> int:  # type: ignore[override]
            return 0  # start index 0, replica shift 0

    # first = p mod n; others at first + 1 + (shift + j) mod (n - 1); shift +1 every n
    assert place_topic(4, 2, [1, 2, 3], Fixed()) == [[1, 2], [2, 3], [3, 1], [1, 3]]


def test_propose_lists_only_partitions_that_move_and_keeps_rf() -> None:
    current = {"t": {0: [1, 2], 1: [2, 3], 2: [3, 1]}}
    moves = propose(current, [1, 2, 3, 4], random.Random(1))
    assert moves and all(len(r) == 2 and set(r) <= {1, 2, 3, 4} for r in moves.values())
    assert all(current["t"][p] != r for (_, p), r in moves.items())
    assert any(4 in r for r in moves.values())  # the new broker gets replicas


def test_rf_larger_than_the_brokers_is_an_error() -> None:
    with pytest.raises(ValueError, match="replication factor 3 does not fit 2 broker"):
        propose({"t": {0: [1, 2, 3]}}, [1, 2], random.Random(1))
