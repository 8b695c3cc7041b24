"""ProducerIdManager: ids are never reused, across restarts and across brokers."""

from __future__ import annotations

from pathlib import Path

from broker_app.coordinator.producer_ids import FILE_NAME, NODE_RANGE_BITS, ProducerIdManager


def test_brokers_allocate_from_disjoint_ranges(tmp_path: Path) -> None:
    for d in ("a", "b"):
        (tmp_path / d).mkdir()
    a = ProducerIdManager(tmp_path / "a", node_id=1, block_size=10)
    b = ProducerIdManager(tmp_path / "b", node_id=2, block_size=10)
    ids_a = {a.generate() for _ in range(25)}
    ids_b = {b.generate() for _ in range(25)}
    assert not ids_a & ids_b
    assert min(ids_a) == 1 << NODE_RANGE_BITS and min(ids_b) == 2 << NODE_RANGE_BITS


def test_a_restart_resumes_at_the_next_block(tmp_path: Path) -> None:
    first = ProducerIdManager(tmp_path, node_id=3, block_size=10)
    used = [first.generate() for _ in range(3)]
    again = ProducerIdManager(tmp_path, node_id=3, block_size=10)
    assert again.generate() == used[0] + 10  # the reserved block is never handed out twice


def test_a_file_from_before_the_ranges_moves_up_to_the_brokers_range(tmp_path: Path) -> None:
    (tmp_path / FILE_NAME).write_text('{"next_block_start": 2000}')
    m = ProducerIdManager(tmp_path, node_id=1)
    assert m.generate() == 1 << NODE_RANGE_BITS
