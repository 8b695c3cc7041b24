"""The plain-Python validator and HistoryWriter (no Spark)."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from harness.checker.history import validate_history
from harness.store.history import HistoryWriter

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "histories"

GOOD = sorted(p.name for p in FIXTURES.iterdir() if p.name != "malformed")


@pytest.mark.parametrize("name", GOOD)
def test_fixture_histories_are_well_formed(name: str) -> None:
    assert validate_history(FIXTURES / name / "history.jsonl") == []


def test_malformed_fixture_names_file_line_and_field() -> None:
    problems = validate_history(FIXTURES / "malformed" / "history.jsonl")
    text = [str(p) for p in problems]
    assert len(problems) == 2
    assert text[0].endswith(
        "malformed/history.jsonl:2: partition: must be an integer >= 0, got 'zero'"
    )
    assert problems[1].line == 3 and problems[1].field is None
    assert "not valid JSON" in text[1]


def _write(tmp_path: Path, ops: list[dict]) -> Path:
    path = tmp_path / "history.jsonl"
    lines = [json.dumps({"index": i, "time": i, **op}) for i, op in enumerate(ops)]
    path.write_text("\n".join(lines) + "\n")
    return path


SEND = {"f": "send", "topic": "t", "partition": 0, "acks": "all"}


@pytest.mark.parametrize(
    ("ops", "line", "field", "words"),
    [
        ([{"process": 0, "type": "invoke", **SEND, "value": 1, "acks": 1}], 1, "acks", "one of"),
        ([{"process": -1, "type": "invoke", **SEND, "value": 1}], 1, "process", ">= 0"),
        ([{"process": 0, "type": "done", **SEND, "value": 1}], 1, "type", "one of"),
        (
            [
                {"process": 0, "type": "invoke", **SEND, "value": 1},
                {"process": 0, "type": "ok", **SEND, "value": 1},
            ],
            2,
            "offset",
            "needs an offset",
        ),
        (
            [
                {"process": 0, "type": "invoke", **SEND, "value": 1},
                {"process": 0, "type": "fail", **SEND, "value": 1},
            ],
            2,
            "error",
            "error name",
        ),
        ([{"process": 0, "type": "ok", **SEND, "value": 1, "offset": 0}], 1, "type", "without"),
        (
            [
                {"process": 0, "type": "invoke", **SEND, "value": 1},
                {"process": 0, "type": "invoke", **SEND, "value": 2},
            ],
            2,
            "process",
            "in flight",
        ),
        (
            [
                {"process": 0, "type": "invoke", **SEND, "value": 1},
                {"process": 0, "type": "ok", "f": "poll", "final": False, "records": []},
            ],
            2,
            "f",
            "completes",
        ),
        (
            [
                {"process": 0, "type": "invoke", **SEND, "value": 1},
                {"process": 0, "type": "info", **SEND, "value": 1, "error": "X"},
                {"process": 1, "type": "invoke", **SEND, "value": 1},
            ],
            3,
            "value",
            "already sent",
        ),
        ([{"process": 0, "type": "invoke", "f": "poll"}], 1, "final", "true or false"),
        (
            [
                {"process": 0, "type": "invoke", "f": "poll", "final": True},
                {
                    "process": 0,
                    "type": "ok",
                    "f": "poll",
                    "final": True,
                    "records": [{"topic": "t", "partition": 0, "offset": "1", "value": 1}],
                },
            ],
            2,
            "records[0].offset",
            "invalid",
        ),
        ([{"process": "nemesis", "type": "info", "f": "kill", "phase": "begin"}], 1, "phase", ""),
        ([{"process": 0, "type": "invoke", "f": "read", "final": True}], 1, "f", "'commit'"),
        # docs/history-groups.md: commit ops and group polls
        ([{"process": 0, "type": "invoke", "f": "commit", "offsets": [
            {"topic": "t", "partition": 0, "offset": 1}]}], 1, "group", "non-empty"),
        ([{"process": 0, "type": "invoke", "f": "commit", "group": "g", "offsets": []}], 1,
         "offsets", "non-empty list"),
        ([{"process": 0, "type": "invoke", "f": "commit", "group": "g", "offsets": [
            {"topic": "t", "partition": 0, "offset": -1}]}], 1, "offsets[0].offset", "invalid"),
        (
            [
                {"process": 0, "type": "invoke", "f": "commit", "group": "g",
                 "offsets": [{"topic": "t", "partition": 0, "offset": 1}]},
                {"process": 0, "type": "info", "f": "commit", "group": "g",
                 "offsets": [{"topic": "t", "partition": 0, "offset": 1}]},
            ],
            2, "error", "commit needs",
        ),
        ([{"process": 0, "type": "invoke", "f": "poll", "final": False, "group": "g",
           "generation": -2}], 1, "generation", ">= 0"),
        (
            [
                {"process": 0, "type": "invoke", "f": "poll", "final": False, "group": "g"},
                {"process": 0, "type": "ok", "f": "poll", "final": False, "group": "g",
                 "records": [{"topic": "t", "partition": 0, "offset": 1, "value": 1,
                              "generation": "x"}]},
            ],
            2, "records[0].generation", "invalid",
        ),
    ],
)
def test_validator_reports_line_and_field(tmp_path, ops, line, field, words) -> None:
    problems = validate_history(_write(tmp_path, ops))
    assert problems, "expected a problem"
    assert (problems[0].line, problems[0].field) == (line, field)
    assert words in problems[0].message


def test_index_and_time_order(tmp_path) -> None:
    path = tmp_path / "history.jsonl"
    path.write_text(
        '{"index":0,"time":5,"process":"nemesis","type":"info","f":"kill","phase":"start"}\n'
        '{"index":2,"time":4,"process":"nemesis","type":"info","f":"kill","phase":"stop"}\n'
    )
    fields = [(p.line, p.field) for p in validate_history(path)]
    assert fields == [(2, "index"), (2, "time")]


def test_missing_file_is_a_problem_not_an_exception(tmp_path) -> None:
    problems = validate_history(tmp_path / "nope.jsonl")
    assert len(problems) == 1 and "cannot read" in problems[0].message


def test_writer_output_validates_and_is_ordered(tmp_path) -> None:
    path = tmp_path / "history.jsonl"
    with HistoryWriter(path) as w:
        inv = w.invoke(0, "send", topic="t", partition=0, value=1, acks="1")
        w.nemesis("kill", "start", {"node": 1})
        ok = w.complete(inv, "ok", offset=0)
        w.nemesis("kill", "stop", {"node": 1})
        pinv = w.invoke(1, "poll", final=True)
        w.complete(pinv, "ok", records=[{"topic": "t", "partition": 0, "offset": 0, "value": 1}])
    assert ok["value"] == 1 and ok["acks"] == "1" and ok["process"] == 0
    assert validate_history(path) == []
    ops = [json.loads(line) for line in path.read_text().splitlines()]
    assert [op["index"] for op in ops] == list(range(6))
    assert ops[5]["final"] is True  # the completion carries the invoke's `final`


def test_writer_is_thread_safe_and_time_monotonic(tmp_path) -> None:
    path = tmp_path / "history.jsonl"
    with HistoryWriter(path) as w:

        def client(process: int) -> None:
            for i in range(200):
                inv = w.invoke(
                    process, "send", topic="t", partition=0, value=process * 1000 + i, acks="0"
                )
                w.complete(inv, "ok")

        threads = [threading.Thread(target=client, args=(p,)) for p in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=30)
    assert validate_history(path) == []
    ops = [json.loads(line) for line in path.read_text().splitlines()]
    assert len(ops) == 1600
    times = [op["time"] for op in ops]
    assert times == sorted(times)


def test_writer_rejects_bad_completion_type(tmp_path) -> None:
    with HistoryWriter(tmp_path / "history.jsonl") as w:
        inv = w.invoke(0, "poll", final=False)
        with pytest.raises(ValueError, match="completion type"):
            w.complete(inv, "done")
