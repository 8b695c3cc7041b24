"""Pure parts of the harness the report builds on: store layout, scheduling, error classes.

(They sit beside the report tests because this task owns tests/unit/report; no sockets.)
"""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml

from harness.checker.history import validate_history
from harness.client import classify, decode_value, encode_value
from harness.plan.model import ClusterSpec, ProducerSpec, TopicSpec
from harness.store import RunDir, Store, StoreError, safe_name
from harness.workload import (
    Pacer,
    PartitionCycle,
    ProducerJob,
    Values,
    parse_partition,
    producer_jobs,
)

# ------------------------------------------------------------------ store


def test_store_layout_latest_and_listing(tmp_path: Path) -> None:
    store = Store(tmp_path / "store")
    t = datetime(2030, 1, 2, 3, 4, 5, 678000, tzinfo=UTC)
    a = store.create_run("kill-leader", {"name": "kill-leader", "expected": {"lost-write": "> 0"}},
                         now=t)
    assert a.path == tmp_path / "store" / "kill-leader" / "20300102T030405.678Z"
    assert a.logs_dir.is_dir() and a.data_dir.is_dir()
    assert yaml.safe_load(a.plan_path.read_text())["expected"] == {"lost-write": "> 0"}
    assert store.latest() == RunDir(a.path)
    assert (tmp_path / "store" / "latest").readlink() == Path("kill-leader/20300102T030405.678Z")

    clashes = [store.create_run("kill-leader", now=t) for _ in range(11)]
    assert [c.timestamp for c in clashes[:2]] == ["20300102T030405.678Z-1",
                                                 "20300102T030405.678Z-2"]
    b = store.create_run("no/faults", now=datetime(2030, 1, 2, 3, 4, 6, tzinfo=UTC))
    assert b.plan_name == "no_faults"
    assert store.latest() == b
    runs = store.runs()
    assert runs[0] == a and runs[-1] == b
    assert runs[-2].timestamp.endswith("-11")  # "-11" sorts after "-9" (numeric suffix)
    assert [r.plan_name for r in store.runs("kill-leader")] == ["kill-leader"] * 12
    assert store.plans() == ["kill-leader", "no_faults"]


def test_run_meta_merges_and_bad_files_name_themselves(tmp_path: Path) -> None:
    run = Store(tmp_path).create_run("p")
    run.write_meta(seed=7)
    assert run.write_meta(exit_code=0) == {"seed": 7, "exit_code": 0}
    run.results_path.write_text("[1, 2")
    with pytest.raises(StoreError, match=r"results\.json: cannot read"):
        run.results()
    run.plan_path.write_text("- a list\n")
    with pytest.raises(StoreError, match=r"plan\.yaml: expected a mapping, got list"):
        run.plan()


def test_history_writer_of_a_run(tmp_path: Path) -> None:
    run = Store(tmp_path).create_run("p")
    with run.history_writer() as h:
        inv = h.invoke(0, "send", topic="t", partition=0, value=1, acks="1")
        h.complete(inv, "ok", offset=0)
    assert validate_history(run.history_path) == []


def test_safe_name() -> None:
    assert safe_name("..") == "_.." and safe_name(".") == "_."
    assert "/" not in safe_name("a/../b") and safe_name("") == "plan"


# ------------------------------------------------------------------ scheduling


def test_values_are_unique_across_threads() -> None:
    values = Values()
    got: list[int] = []
    lock = threading.Lock()

    def take() -> None:
        mine = [values() for _ in range(2000)]
        with lock:
            got.extend(mine)

    threads = [threading.Thread(target=take) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert sorted(got) == list(range(8000))


def test_pacer_keeps_rate_and_never_bursts_after_a_slow_op() -> None:
    p = Pacer(rate=10, start=100.0)
    assert p.delay(100.0) == 0
    p.started(100.0)
    assert p.delay(100.05) == pytest.approx(0.05)
    p.started(100.1)
    p.started(100.21)  # slightly late: still on the 0.1 s grid
    assert p.due == pytest.approx(100.3)
    p.started(105.0)  # an op that waited 5 s: next one a full interval later, no catch-up
    assert p.delay(105.0) == pytest.approx(0.1)
    with pytest.raises(ValueError, match="rate must be > 0"):
        Pacer(0, 0)


def test_partition_cycle_and_names() -> None:
    c = PartitionCycle([("t", 0), ("t", 1), ("u", 0)], offset=1)
    assert [c() for _ in range(4)] == [("t", 1), ("u", 0), ("t", 0), ("t", 1)]
    assert parse_partition("my-topic-12") == ("my-topic", 12)
    with pytest.raises(ValueError, match="'<topic>-<n>', got 'nope'"):
        parse_partition("nope")
    with pytest.raises(ValueError, match="at least one partition"):
        PartitionCycle([])


def test_producer_jobs_expand_counts_over_partitions() -> None:
    cluster = ClusterSpec(topics=(TopicSpec("t", partitions=2), TopicSpec("u", partitions=1)))
    jobs = producer_jobs(
        [ProducerSpec(count=2, acks="1", rate=5, values=10),
         ProducerSpec(count=1, acks="all", duration_s=3, partitions=("u-0",))],
        cluster,
    )
    assert [(j.slot, j.acks) for j in jobs] == [(0, "1"), (1, "1"), (2, "all")]
    assert jobs[0].partitions == (("t", 0), ("t", 1), ("u", 0))
    assert jobs[2].partitions == (("u", 0),)
    assert jobs[0].finished(10, 0.0) and not jobs[0].finished(9, 1e9)
    assert jobs[2].finished(0, 3.0) and not jobs[2].finished(10**6, 2.9)
    assert not ProducerJob(0, "1", 1.0, (("t", 0),)).finished(10**9, 10**9)  # until stopped


# ------------------------------------------------------------------ client classification


@pytest.mark.parametrize(
    ("name", "single", "expected"),
    [
        ("NOT_ENOUGH_REPLICAS", True, "fail"),  # rejected before append
        ("NOT_ENOUGH_REPLICAS", False, "info"),  # an earlier attempt may have been appended
        ("NOT_LEADER_FOR_PARTITION", True, "info"),  # an acks=all batch may be appended
        ("LEADER_NOT_AVAILABLE", True, "fail"),  # refused before any append
        ("NOT_ENOUGH_REPLICAS_AFTER_APPEND", True, "info"),  # appended, ISR shrank after
        ("REQUEST_TIMED_OUT", True, "info"),  # appended on the leader, acks=all wait expired
        ("_MSG_TIMED_OUT", True, "info"),
        ("_TRANSPORT", True, "info"),
        ("KAFKA_STORAGE_ERROR", True, "info"),
        ("_UNKNOWN_PARTITION", False, "fail"),  # librdkafka never sent it
        ("SOMETHING_NEW", True, "info"),
    ],
)
def test_produce_error_classification(name: str, single: bool, expected: str) -> None:
    assert classify(name, single) == expected


def test_value_encoding() -> None:
    assert decode_value(encode_value(-42)) == -42
    assert decode_value(b"x1") is None and decode_value(None) is None
    assert decode_value(b"\xff") is None


def test_client_arguments_are_checked_before_any_connection(tmp_path: Path) -> None:
    from harness.client import ConsumerClient, ProducerClient
    from harness.store.history import HistoryWriter

    with HistoryWriter(tmp_path / "h.jsonl") as h:
        with pytest.raises(ValueError, match="acks must be '0', '1' or 'all', got '2'"):
            ProducerClient(0, "127.0.0.1:1", h, acks="2")
        with pytest.raises(ValueError, match="consumer mode must be 'assign' or 'subscribe'"):
            ConsumerClient(0, "127.0.0.1:1", h, [("t", 0)], mode="both")
    assert (tmp_path / "h.jsonl").read_text() == ""  # nothing recorded for a client never made
