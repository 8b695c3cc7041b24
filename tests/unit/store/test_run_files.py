"""The store's run-dir file modules: history.jsonl streamed line by line with the reason a line
is not an op, results.json and run.json written atomically and read back (None/{} when absent,
StoreError naming the file when it is not a mapping)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.store import StoreError
from harness.store.history import HistoryWriter, read_history, read_ops
from harness.store.meta import read_meta, write_meta
from harness.store.results import RESULTS_FILE, read_results, write_results


def test_read_history_streams_ops_and_says_why_a_line_is_not_one(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    with HistoryWriter(path, clock=iter(range(0, 100, 10)).__next__) as h:
        inv = h.invoke(0, "send", topic="t", partition=0, value=1, acks="all")
        h.complete(inv, "ok", offset=0)
    with open(path, "a", encoding="utf-8") as fh:
        fh.write("\n[1]\n{not json\n")
    lines = list(read_history(path))
    assert [ln.lineno for ln in lines] == [1, 2, 3, 4, 5]
    assert lines[0].op == {"index": 0, "time": 10, "process": 0, "type": "invoke", "f": "send",
                           "topic": "t", "partition": 0, "value": 1, "acks": "all"}
    assert lines[1].op is not None and lines[1].op["offset"] == 0
    assert [ln.error for ln in lines[2:]] == [
        "empty line", "expected a JSON object, got list",
        "not valid JSON (Expecting property name enclosed in double quotes at column 2)"]
    # Only the wanted lines are parsed and yielded.
    assert [ln.lineno for ln in read_history(path, lines={2, 4})] == [2, 4]
    with pytest.raises(ValueError, match=rf"^{path}:3: empty line$"):
        list(read_ops(path))


def test_results_and_meta_round_trip(tmp_path: Path) -> None:
    assert read_results(tmp_path) is None and read_meta(tmp_path) == {}
    write_results(tmp_path, {"valid": True, "verdict": "as-expected"})
    assert (tmp_path / RESULTS_FILE).read_text().startswith('{\n  "valid": true')
    assert read_results(tmp_path) == {"valid": True, "verdict": "as-expected"}
    write_meta(tmp_path, seed=3)
    assert write_meta(tmp_path, exit_code=0) == {"exit_code": 0, "seed": 3}
    assert read_meta(tmp_path) == {"exit_code": 0, "seed": 3}
    (tmp_path / RESULTS_FILE).write_text("[1]")
    with pytest.raises(StoreError, match="expected a mapping, got list"):
        read_results(tmp_path)
