"""The Parquet sidecar (harness.checker.sidecar): same results.json as the JSON path, and never
trusted when it does not match its history.jsonl."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from harness.bench.checker import generate
from harness.checker.sidecar import SIDECAR_FILE, VERSION, build, matches, sidecar_for
from tests.unit.checker.test_differential import FIXTURES, planted, planted_group

pytestmark = pytest.mark.spark


def _spaced(path: Path) -> None:
    """A history as another tool may write it: json.dumps' default spacing, a nemesis value
    that is a string, a topic named after the nemesis (a client line that mentions it)."""
    ops = [
        {"process": 0, "type": "invoke", "f": "send", "topic": "nemesis", "partition": 0,
         "value": 1, "acks": "all"},
        {"process": "nemesis", "type": "info", "f": "partition", "value": "b1|b2",
         "phase": "start"},
        {"process": 0, "type": "ok", "f": "send", "topic": "nemesis", "partition": 0,
         "value": 1, "acks": "all", "offset": 0},
        {"process": "nemesis", "type": "info", "f": "partition", "value": None,
         "phase": "stop"},
        {"process": 1, "type": "invoke", "f": "poll", "final": True},
        {"process": 1, "type": "ok", "f": "poll", "final": True, "records": []},
    ]
    path.write_text("".join(
        json.dumps({"index": i, "time": i * 10, **op}) + "\n" for i, op in enumerate(ops)
    ))  # fmt: skip


def test_sidecar_and_jsonl_give_identical_results_json(spark, tmp_path: Path) -> None:
    from harness.checker.check import check_runs

    runs = []
    for fixture in sorted(FIXTURES.iterdir()):
        if fixture.name != "malformed":
            runs.append(tmp_path / fixture.name)
            runs[-1].mkdir()
            shutil.copy(fixture / "history.jsonl", runs[-1] / "history.jsonl")
    for name, write in (
        ("bench", lambda p: generate(p, 20_000, partitions=4, seed=5)),
        ("planted", lambda p: planted(p, 7)),
        ("planted-group", lambda p: planted_group(p, 2)),
        ("spaced", _spaced),
    ):
        runs.append(tmp_path / name)
        runs[-1].mkdir()
        write(runs[-1] / "history.jsonl")

    by_json = check_runs(runs, spark=spark, sidecars=False)
    assert all(r.results is not None for r in by_json), [r.error for r in by_json]
    assert not any((r / SIDECAR_FILE).exists() for r in runs)
    expected = {r: (r / "results.json").read_bytes() for r in runs}
    for r in runs:
        (r / "results.json").unlink()

    by_parquet = check_runs(runs, spark=spark)
    for run, result in zip(runs, by_parquet, strict=True):
        assert result.results is not None, result.error
        assert matches(run / SIDECAR_FILE, run / "history.jsonl"), run.name
        assert (run / "results.json").read_bytes() == expected[run], run.name


def test_stale_sidecar_is_rebuilt_not_trusted(spark, tmp_path: Path, copy_fixture) -> None:
    from harness.checker.check import check_runs

    run = copy_fixture("lost-write")
    history = run / "history.jsonl"
    (before,) = check_runs([run], spark=spark)
    assert before.results["anomalies"]["lost-write"]["count"] == 2
    sidecar = run / SIDECAR_FILE
    old = sidecar.read_bytes()
    # The history is replaced (the clean fixture's lines); the old sidecar stays beside it.
    clean = (FIXTURES / "clean" / "history.jsonl").read_bytes()
    history.write_bytes(clean)
    sidecar.write_bytes(old)
    assert not matches(sidecar, history)
    (after,) = check_runs([run], spark=spark)
    assert after.results["valid"], after.results["anomalies"]
    assert matches(sidecar, history)
    # A file that is not Parquet, or a sidecar of another format version: rebuilt too.
    sidecar.write_bytes(b"not parquet")
    assert sidecar_for(history) == sidecar and matches(sidecar, history)


def test_edit_keeping_the_size_is_caught(tmp_path: Path) -> None:
    history = tmp_path / "history.jsonl"
    shutil.copy(FIXTURES / "lost-write" / "history.jsonl", history)
    sidecar = tmp_path / SIDECAR_FILE
    build(history, sidecar)
    assert matches(sidecar, history)
    text = history.read_text()
    history.write_text(text.replace('"value":1,', '"value":7,', 1))
    assert history.stat().st_size == len(text.encode())
    assert not matches(sidecar, history)


def test_version_is_recorded_and_checked(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    history = tmp_path / "history.jsonl"
    shutil.copy(FIXTURES / "clean" / "history.jsonl", history)
    sidecar = sidecar_for(history)
    assert sidecar is not None
    meta = pq.read_metadata(sidecar).metadata
    assert meta[b"highwater.sidecar.version"] == VERSION.encode()
    table = pq.read_table(sidecar)
    other = table.replace_schema_metadata({**meta, b"highwater.sidecar.version": b"0"})
    pq.write_table(other, sidecar)
    assert not matches(sidecar, history)


def test_malformed_history_gets_no_sidecar(spark, tmp_path: Path, copy_fixture) -> None:
    from harness.checker.check import check_runs

    run = copy_fixture("malformed")
    # A sidecar left from an earlier, well-formed history: deleted, the jsonl is what counts.
    shutil.copy(FIXTURES / "clean" / "history.jsonl", tmp_path / "clean.jsonl")
    build(tmp_path / "clean.jsonl", run / SIDECAR_FILE)
    (result,) = check_runs([run], spark=spark)
    assert result.results is None and "malformed history" in result.error
    assert not (run / SIDECAR_FILE).exists()


def test_nemesis_lines_at_the_edges_of_a_block(tmp_path: Path) -> None:
    """Nemesis lines are cut out of a block by position: first and last lines (the last without
    its newline), two in a row, and a client line naming the nemesis all keep their rows."""
    import pyarrow.parquet as pq

    ops = [
        {"process": "nemesis", "type": "info", "f": "kill", "value": {"node": 1},
         "phase": "start"},
        {"process": "nemesis", "type": "info", "f": "kill", "value": [1, 2], "phase": "stop"},
        {"process": 0, "type": "invoke", "f": "send", "topic": "nemesis", "partition": 0,
         "value": 7, "acks": "1"},
        {"process": "nemesis", "type": "info", "f": "heal", "value": "nemesis", "phase": "start"},
    ]
    history = tmp_path / "history.jsonl"
    history.write_text("\n".join(json.dumps({"index": i, "time": i, **op})
                                 for i, op in enumerate(ops)))  # fmt: skip
    build(history, tmp_path / SIDECAR_FILE)
    rows = pq.read_table(tmp_path / SIDECAR_FILE).to_pylist()
    assert sorted((r["index"], r["process"], r["value"]) for r in rows) == [
        (0, "nemesis", '{"node":1}'),
        (1, "nemesis", "[1,2]"),
        (2, "0", "7"),
        (3, "nemesis", "nemesis"),
    ]
