"""history.jsonl (HISTORY.md): its one writer and its one streaming reader.

Contract:
- `HistoryWriter` is the only place the harness writes histories: it assigns `index` (0, 1, 2…)
  and `time` (monotonic ns since the writer was created) under a lock, one JSON line per op,
  flushed per line so a crashed harness leaves a readable prefix.
- `read_history(path, lines=None)` streams the file one line at a time (a 10^7-op history is
  never held in memory) as `HistoryLine`s: 1-based `lineno`, the `text` without its newline,
  the parsed `op` (a JSON object) or, when the line is blank, not JSON or not an object, `op`
  None and `error` saying why. With `lines`, only those line numbers are parsed and yielded
  (the rest are skipped unparsed). OSError and (with errors="strict") UnicodeDecodeError
  propagate: the caller decides what an unreadable file means. `read_ops(path)` is the strict
  form for tools that trust the file: each op in turn, ValueError naming file:line at the first
  line that is not one.
The validator of the format (names, field checks, the Spark schema) is harness.checker.history.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Container, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

HISTORY_FILE = "history.jsonl"
TYPES = ("invoke", "ok", "fail", "info")
COMPLETIONS = ("ok", "fail", "info")
PHASES = ("start", "stop")
NEMESIS = "nemesis"


@dataclass(frozen=True, slots=True)
class HistoryLine:
    lineno: int
    text: str
    op: dict[str, Any] | None
    error: str | None = None


def parse_line(lineno: int, text: str) -> HistoryLine:
    text = text.rstrip("\r\n")
    if not text.strip():
        return HistoryLine(lineno, text, None, "empty line")
    try:
        op = json.loads(text)
    except json.JSONDecodeError as e:
        return HistoryLine(lineno, text, None, f"not valid JSON ({e.msg} at column {e.colno})")
    if not isinstance(op, dict):
        return HistoryLine(lineno, text, None, f"expected a JSON object, got {type(op).__name__}")
    return HistoryLine(lineno, text, op)


def read_history(path: str | Path, lines: Container[int] | None = None,
                 errors: str = "strict") -> Iterator[HistoryLine]:
    """The lines of a history file, parsed one at a time; see the module docstring."""
    with open(path, encoding="utf-8", errors=errors) as fh:
        for lineno, text in enumerate(fh, start=1):
            if lines is None or lineno in lines:
                yield parse_line(lineno, text)


def read_ops(path: str | Path) -> Iterator[dict[str, Any]]:
    for line in read_history(path):
        if line.op is None:
            raise ValueError(f"{path}:{line.lineno}: {line.error}")
        yield line.op


class HistoryWriter:
    """Appends ops to a history.jsonl, assigning index and time; safe to share between threads.

    Lines are flushed as they are written so a crashed harness leaves a readable prefix;
    `flush_lines=False` leaves it to the file's buffer and close() (the simulator: its run is
    one Python call, closed in a `finally`, and a flush per op was a syscall per op).
    """

    def __init__(self, path: str | Path, clock=time.monotonic_ns, flush_lines: bool = True
                 ) -> None:
        self.path = Path(path)
        self._clock = clock
        self.start_ns = clock()  # time 0 of the history; other run records share this clock
        self._lock = threading.Lock()
        self._index = 0
        self._last_time = 0
        self._flush_lines = flush_lines
        self._fh: IO[str] = open(self.path, "w", encoding="utf-8")  # noqa: SIM115 - closed in close()

    def append(self, op: dict[str, Any]) -> dict[str, Any]:
        """Write op with the next index and the current time; returns the written op."""
        with self._lock:
            # max() keeps time monotonic even with a caller-supplied clock that is not.
            t = max(self._clock() - self.start_ns, self._last_time)
            out = {"index": self._index, "time": t, **op}
            self._fh.write(json.dumps(out, separators=(",", ":")) + "\n")
            if self._flush_lines:
                self._fh.flush()
            self._index += 1
            self._last_time = t
            return out

    def invoke(self, process: int, f: str, **fields: Any) -> dict[str, Any]:
        return self.append({"process": process, "type": "invoke", "f": f, **fields})

    def complete(self, invoke: dict[str, Any], type: str, **fields: Any) -> dict[str, Any]:
        """The completion of `invoke`: same process and f; a send repeats its destination fields."""
        if type not in COMPLETIONS:
            raise ValueError(f"completion type must be one of {COMPLETIONS}, got {type!r}")
        carried = {
            k: invoke[k]
            for k in ("topic", "partition", "value", "acks", "final", "group", "offsets")
            if k in invoke
        }
        return self.append(
            {"process": invoke["process"], "type": type, "f": invoke["f"], **carried, **fields}
        )

    def nemesis(self, f: str, phase: str, value: Any = None) -> dict[str, Any]:
        if phase not in PHASES:
            raise ValueError(f"nemesis phase must be one of {PHASES}, got {phase!r}")
        return self.append(
            {"process": NEMESIS, "type": "info", "f": f, "value": value, "phase": phase}
        )

    def close(self) -> None:
        with self._lock:
            if not self._fh.closed:
                self._fh.close()

    def __enter__(self) -> HistoryWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
