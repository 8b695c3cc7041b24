"""merge_run_stats: a run's stats arrive as two rows (op rows carry the file, record rows null)."""

from __future__ import annotations

import pytest

pytest.importorskip("pyspark")

from harness.checker.anomalies import merge_run_stats  # noqa: E402

COUNTS = ("n", "n_index", "bad", "sends", "acked", "failed", "info", "polls")


def _row(rid: int, file: str | None, lo: int | None, hi: int | None, n: int) -> dict:
    return {"rid": rid, "file": file, "lo": lo, "hi": hi, **dict.fromkeys(COUNTS, n)}


def test_rows_of_one_run_are_added_and_span_widened() -> None:
    ops = _row(7, "file:/r/history.jsonl", 0, 9, 10)
    records = _row(7, None, 3, 12, 5)
    other = _row(8, "file:/s/history.jsonl", 0, 1, 2)
    got = merge_run_stats([records, other, ops])
    assert got[7] == {**_row(7, "file:/r/history.jsonl", 0, 12, 15)}
    assert got[8] == other


def test_null_span_and_counts_stay_null_safe() -> None:
    a, b = _row(1, None, None, None, 0), _row(1, "f", None, None, 0)
    b["bad"] = None
    got = merge_run_stats([a, b])[1]
    assert (got["file"], got["lo"], got["hi"], got["bad"]) == ("f", None, None, 0)
