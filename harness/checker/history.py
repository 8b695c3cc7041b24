"""The history format of HISTORY.md: names, Spark schema, validator and writer.

Contract (HISTORY.md is the authority, this module is its one implementation):
- `history_schema()` is the Spark StructType the checker reads `history.jsonl` with; `value` is
  kept as raw JSON text because nemesis ops put arbitrary JSON there.
- `validate_history(path)` is a plain-Python validator: it returns `HistoryProblem`s naming
  file:line and field for every malformed line (up to `max_problems`), never raises on bad data.
- Writing and reading the file is the store's (harness.store.history: HistoryWriter,
  read_history); the validator reads through read_history too.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.store.history import NEMESIS, PHASES, TYPES, HistoryLine, read_history

ACKS = ("0", "1", "all")
CLIENT_FS = ("send", "poll", "commit")  # commit: docs/history-groups.md

# Every anomaly name of HISTORY.md, in the order results.json lists them.
ANOMALIES = (
    "lost-write",
    "inconsistent-offset",
    "uncommitted-read",
    "duplicate",
    "nonmonotonic-poll",
    "poll-skip",
    "lost-failure",
    "unseen-info",
    "no-final-read",
    # docs/history-truncation-skip.md: a consumer that read past a truncation without
    # re-reading what replaced the records it had read (KIP-320's consumer side)
    "truncation-skip",
    # Consumer-group anomalies (docs/history-groups.md): only histories with group polls and
    # commit ops can have them.
    "commit-regression",
    "rebalance-skip",
    "double-assignment",
    "generation-reuse",
)
# Anomalies that do not make a history invalid (HISTORY.md: `unseen-info` aside).
INFORMATIONAL = frozenset({"unseen-info"})


def partition_name(topic: str, partition: int) -> str:
    """Kafka's `<topic>-<partition>` naming, used as the key of every by_partition map."""
    return f"{topic}-{partition}"


def history_schema():  # -> pyspark.sql.types.StructType; pyspark imported lazily
    """The Spark schema of one history line, plus `_corrupt_record` for lines that do not fit."""
    from pyspark.sql import types as T

    record = T.StructType(
        [
            T.StructField("topic", T.StringType()),
            T.StructField("partition", T.IntegerType()),
            T.StructField("offset", T.LongType()),
            T.StructField("value", T.LongType()),
            T.StructField("generation", T.IntegerType()),  # group polls only
            T.StructField("rebalance", T.IntegerType()),  # group polls only
        ]
    )
    return T.StructType(
        [
            T.StructField("index", T.LongType()),
            T.StructField("time", T.LongType()),
            # int for clients, "nemesis" for faults: read as text, digits checked later.
            T.StructField("process", T.StringType()),
            T.StructField("type", T.StringType()),
            T.StructField("f", T.StringType()),
            T.StructField("topic", T.StringType()),
            T.StructField("partition", T.IntegerType()),
            # an int for sends, any JSON for nemesis ops: Spark keeps non-strings as raw JSON.
            T.StructField("value", T.StringType()),
            T.StructField("acks", T.StringType()),
            T.StructField("offset", T.LongType()),
            T.StructField("error", T.StringType()),
            T.StructField("final", T.BooleanType()),
            T.StructField("records", T.ArrayType(record)),
            T.StructField("phase", T.StringType()),
            # docs/history-groups.md: group polls and commits. `offsets` is read with the record
            # type (value and generation then null), so one array type holds both.
            T.StructField("group", T.StringType()),
            T.StructField("generation", T.IntegerType()),
            T.StructField("offsets", T.ArrayType(record)),
            T.StructField("_corrupt_record", T.StringType()),
        ]
    )


# ---------------------------------------------------------------- validation


@dataclass(frozen=True)
class HistoryProblem:
    path: str
    line: int  # 1-based
    field: str | None
    message: str

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}"
        return (
            f"{where}: {self.field}: {self.message}" if self.field else f"{where}: {self.message}"
        )


def _is_int(v: Any) -> bool:
    # bool is an int subclass in Python but `true` is not a valid index/offset in JSON terms.
    return isinstance(v, int) and not isinstance(v, bool)


class _LineChecker:
    """Checks one history line at a time, keeping the cross-line state (in-flight ops, values)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.problems: list[HistoryProblem] = []
        self.in_flight: dict[int, tuple[int, dict[str, Any]]] = {}  # process -> (line, invoke)
        self.values: dict[int, int] = {}  # send value -> line of its invoke
        self.last_time: int | None = None

    def problem(self, line: int, field: str | None, message: str) -> None:
        self.problems.append(HistoryProblem(self.path, line, field, message))

    def check(self, line: HistoryLine) -> None:
        lineno, op = line.lineno, line.op
        if op is None:
            self.problem(lineno, None, line.error or "not an op")
            return
        before = len(self.problems)
        self._common(lineno, op)
        if len(self.problems) > before:
            return  # per-kind checks would only repeat the same root cause
        if op["process"] == NEMESIS:
            self._nemesis(lineno, op)
        elif op["f"] == "send":
            self._send(lineno, op)
        elif op["f"] == "poll":
            self._poll(lineno, op)
        elif op["f"] == "commit":
            self._commit(lineno, op)
        else:
            self.problem(lineno, "f", f"client ops are {', '.join(map(repr, CLIENT_FS))}, "
                                      f"got {op['f']!r}")
        if op["process"] != NEMESIS and op["f"] in CLIENT_FS:
            self._pairing(lineno, op)

    def _common(self, lineno: int, op: dict[str, Any]) -> None:
        index = op.get("index")
        if not _is_int(index):
            self.problem(lineno, "index", f"must be an integer, got {index!r}")
        elif index != lineno - 1:
            self.problem(lineno, "index", f"must be {lineno - 1} (file order), got {index}")
        t = op.get("time")
        if not _is_int(t) or t < 0:
            self.problem(lineno, "time", f"must be a non-negative integer (ns), got {t!r}")
        else:
            if self.last_time is not None and t < self.last_time:
                self.problem(lineno, "time", f"goes backwards ({t} < {self.last_time})")
            self.last_time = t
        process = op.get("process")
        if not ((_is_int(process) and process >= 0) or process == NEMESIS):
            self.problem(
                lineno, "process", f"must be an integer >= 0 or 'nemesis', got {process!r}"
            )
        if op.get("type") not in TYPES:
            self.problem(lineno, "type", f"must be one of {list(TYPES)}, got {op.get('type')!r}")
        if not isinstance(op.get("f"), str) or not op.get("f"):
            self.problem(lineno, "f", f"must be a non-empty string, got {op.get('f')!r}")

    def _nemesis(self, lineno: int, op: dict[str, Any]) -> None:
        if op["type"] != "info":
            self.problem(lineno, "type", f"nemesis ops are 'info', got {op['type']!r}")
        if op.get("phase") not in PHASES:
            self.problem(lineno, "phase", f"must be 'start' or 'stop', got {op.get('phase')!r}")

    def _send(self, lineno: int, op: dict[str, Any]) -> None:
        if not isinstance(op.get("topic"), str) or not op.get("topic"):
            self.problem(lineno, "topic", f"must be a non-empty string, got {op.get('topic')!r}")
        p = op.get("partition")
        if not _is_int(p) or p < 0:
            self.problem(lineno, "partition", f"must be an integer >= 0, got {p!r}")
        if not _is_int(op.get("value")):
            self.problem(lineno, "value", f"must be an integer, got {op.get('value')!r}")
        if op.get("acks") not in ACKS:
            self.problem(lineno, "acks", f"must be one of {list(ACKS)}, got {op.get('acks')!r}")
        typ, offset = op["type"], op.get("offset")
        if typ == "ok" and op.get("acks") in ("1", "all"):
            if not _is_int(offset) or offset < 0:
                self.problem(lineno, "offset", f"ok send needs an offset >= 0, got {offset!r}")
        elif offset is not None and (not _is_int(offset) or offset < 0):
            self.problem(lineno, "offset", f"must be an integer >= 0, got {offset!r}")
        if typ in ("fail", "info") and not isinstance(op.get("error"), str):
            self.problem(lineno, "error", f"{typ} send needs the client's error name")
        if typ == "invoke" and _is_int(op.get("value")):
            first = self.values.setdefault(op["value"], lineno)
            if first != lineno:
                self.problem(lineno, "value", f"{op['value']} already sent on line {first}")

    def _group_fields(self, lineno: int, op: dict[str, Any], required: bool) -> None:
        group = op.get("group")
        if (required or group is not None) and (not isinstance(group, str) or not group):
            self.problem(lineno, "group", f"must be a non-empty string, got {group!r}")
        gen = op.get("generation")
        if gen is not None and (not _is_int(gen) or gen < 0):
            self.problem(lineno, "generation", f"must be an integer >= 0, got {gen!r}")

    def _commit(self, lineno: int, op: dict[str, Any]) -> None:
        self._group_fields(lineno, op, required=True)
        offsets = op.get("offsets")
        if not isinstance(offsets, list) or not offsets:
            self.problem(lineno, "offsets", f"must be a non-empty list, got {offsets!r}")
            return
        self._positions(lineno, "offsets", offsets, lambda o: ())
        if op["type"] in ("fail", "info") and not isinstance(op.get("error"), str):
            self.problem(lineno, "error", f"{op['type']} commit needs the client's error name")

    def _poll(self, lineno: int, op: dict[str, Any]) -> None:
        if not isinstance(op.get("final"), bool):
            self.problem(lineno, "final", f"must be true or false, got {op.get('final')!r}")
        self._group_fields(lineno, op, required=False)
        assignment = op.get("assignment")
        if assignment is not None and not (
            isinstance(assignment, list)
            and all(isinstance(a, dict) and isinstance(a.get("topic"), str)
                    and _is_int(a.get("partition")) for a in assignment)
        ):
            self.problem(lineno, "assignment", "must be a list of {topic, partition}")
        if op["type"] != "ok":
            return
        records = op.get("records")
        if not isinstance(records, list):
            self.problem(lineno, "records", f"ok poll needs a list, got {records!r}")
            return
        self._positions(lineno, "records", records, lambda r: (
            ("value", _is_int(r.get("value"))),
            ("generation", r.get("generation") is None
             or (_is_int(r.get("generation")) and r["generation"] >= 0)),
            ("rebalance", r.get("rebalance") is None
             or (_is_int(r.get("rebalance")) and r["rebalance"] >= 1)),
        ))

    def _positions(self, lineno: int, name: str, items: list[Any],
                   more: Callable[[dict[str, Any]], Iterable[tuple[str, bool]]]) -> None:
        """Each item of `name` (a poll's records, a commit's offsets) is an object with a topic,
        a partition and an offset, plus the checks `more` gives for its kind."""
        for i, o in enumerate(items):
            field = f"{name}[{i}]"
            if not isinstance(o, dict):
                self.problem(lineno, field, "must be an object")
                continue
            for key, ok in (
                ("topic", isinstance(o.get("topic"), str) and bool(o.get("topic"))),
                ("partition", _is_int(o.get("partition")) and o.get("partition", -1) >= 0),
                ("offset", _is_int(o.get("offset")) and o.get("offset", -1) >= 0),
                *more(o),
            ):
                if not ok:
                    self.problem(lineno, f"{field}.{key}", f"invalid: {o.get(key)!r}")

    def _pairing(self, lineno: int, op: dict[str, Any]) -> None:
        process = op["process"]
        if op["type"] == "invoke":
            if process in self.in_flight:
                line, _ = self.in_flight[process]
                self.problem(
                    lineno,
                    "process",
                    f"process {process} still has the op of line {line} in flight",
                )
            self.in_flight[process] = (lineno, op)
            return
        if process not in self.in_flight:
            self.problem(lineno, "type", f"{op['type']} without an invoke of process {process}")
            return
        line, invoke = self.in_flight.pop(process)
        if invoke["f"] != op["f"]:
            self.problem(lineno, "f", f"{op['f']!r} completes the {invoke['f']!r} of line {line}")
        elif op["f"] == "send" and invoke.get("value") != op.get("value"):
            self.problem(lineno, "value", f"differs from its invoke on line {line}")


def validate_history(path: str | Path, max_problems: int = 20) -> list[HistoryProblem]:
    """Every problem of a history file (up to max_problems); an empty list means well-formed."""
    checker = _LineChecker(str(path))
    try:
        for line in read_history(path):
            checker.check(line)
            if len(checker.problems) >= max_problems:
                break
    except OSError as e:
        return [HistoryProblem(str(path), 0, None, f"cannot read: {e.strerror or e}")]
    except UnicodeDecodeError as e:
        return [HistoryProblem(str(path), 0, None, f"not UTF-8: {e.reason}")]
    return checker.problems[:max_problems]
