"""The controllers' committed metadata logs compared record by record
(harness/checker/metadata_log_check.py): real FileReplicatedLog directories, as collected
after a run."""

from __future__ import annotations

from pathlib import Path

from broker_app.raft.file_log import FileReplicatedLog
from harness.checker.metadata_check import with_log_check
from harness.checker.metadata_log_check import (
    LogView,
    check_collected,
    committed_offsets,
    compare_logs,
    read_log,
)


def write_log(data_dir: Path, batches: list[tuple[int, list[bytes]]]) -> None:
    log = FileReplicatedLog(data_dir)
    for epoch, records in batches:
        log.append_as_leader(records, epoch)
    log.flush()
    log.close()


def view(records: dict[int, tuple[int, bytes]], start: int = 0, end: int | None = None
         ) -> LogView:
    return LogView(start, max(records, default=-1) + 1 if end is None else end, records)


def test_identical_committed_prefixes_agree_beyond_them_anything_goes() -> None:
    common = {0: (1, b"a"), 1: (1, b"b"), 2: (2, b"c")}
    logs = {"controller-1": view({**common, 3: (2, b"x")}),
            "controller-2": view(common),  # has not fetched offset 3 yet: not committed
            "controller-3": view({**common, 3: (3, b"y")})}
    r = compare_logs(logs, committed=3)
    assert r["count"] == 0 and r["committed"] == 3


def test_a_committed_record_that_differs_or_is_missing_counts_per_voter_and_offset() -> None:
    good = {0: (1, b"a"), 1: (1, b"b"), 2: (2, b"c")}
    logs = {"controller-1": view(good), "controller-2": view(good),
            "controller-3": view({0: (1, b"a"), 1: (1, b"B")})}  # 1 differs, 2 missing
    r = compare_logs(logs, committed=3)
    assert r["count"] == 2
    assert r["by_voter"]["controller-3"] == {"missing": 1, "differs": 1}
    assert r["examples"] == [["controller-3", 1, "differs"], ["controller-3", 2, "missing"]]


def test_offsets_under_a_snapshot_are_left_to_the_image_check() -> None:
    logs = {"controller-1": view({0: (1, b"a"), 1: (1, b"b"), 2: (1, b"c")}),
            "controller-2": view({2: (1, b"c")}, start=2)}  # snapshot up to 2
    assert compare_logs(logs, committed=3)["count"] == 0


def test_read_log_and_check_collected_on_real_log_dirs(tmp_path: Path) -> None:
    write_log(tmp_path / "controller-1", [(1, [b"a", b"b"]), (2, [b"c"])])
    # As Cluster.collect_data writes it: <root>/<node>/data/__cluster_metadata-0/
    write_log(tmp_path / "controller-2" / "data", [(1, [b"a", b"b"]), (2, [b"c"])])
    write_log(tmp_path / "controller-3", [(1, [b"a", b"X"])])
    v = read_log(tmp_path / "controller-1")
    assert (v.start, v.end, v.records[2]) == (0, 3, (2, b"c"))
    names = ["controller-1", "controller-2", "controller-3", "controller-4"]
    r = check_collected(tmp_path, names, committed=3)
    assert r["by_voter"]["controller-3"] == {"missing": 1, "differs": 1}
    assert list(r["unreadable"]) == ["controller-4"]  # nothing collected for it
    merged = with_log_check({"count": 1, "examples": []}, r)
    assert merged["count"] == 3 and merged["committed_log"]["count"] == 2
    # Reading did not touch what was collected.
    assert read_log(tmp_path / "controller-3").end == 2


def test_committed_is_the_largest_high_watermark_reported() -> None:
    answers = {"controller-1": {"quorum": {"high_watermark": 40}},
               "controller-2": {"quorum": {"high_watermark": None}},
               "controller-3": None}
    assert committed_offsets(answers) == 40
    assert committed_offsets({}) == 0
