"""Broker-state samples: `states.jsonl` in the run dir, the input of the HW/LEO timelines.

Format: one JSON object per line, one line per (poll, broker, partition) — what broker `node`
said about its own replica of `topic`/`partition` when the run polled its admin endpoint:

| field | type | meaning |
|---|---|---|
| `time` | int | nanoseconds since the run started, the clock of history.jsonl's `time` |
| `node` | int | the broker that answered |
| `topic`, `partition` | str, int | the partition |
| `role` | str | `"leader"`, `"follower"` or `"none"` (no active replica there) |
| `leader` | int or null | the leader this broker believes in (null: unknown/offline) |
| `epoch` | int | the leader epoch this broker believes current (-1 unknown) |
| `hw` | int | this replica's high watermark |
| `leo` | int | this replica's log end offset |
| `isr` | list of int | the ISR as this broker knows it (the leader's view is authoritative) |
| `loop_lag_ms` | int, optional | the broker's event-loop lag at that poll (its /state's |
| | | `event_loop_lag_ms.current`); absent when unknown |
| `elr` | list of int | optional: the eligible leader replicas (KIP-966) in this broker's metadata |

A broker that could not be asked (down, paused, cut off) simply has no line for that poll;
the timeline shows a gap. Lines are in time order per writer; readers sort anyway.
`StatesWriter` writes the format (thread-safe, flushed per line); `read_states` parses it,
returning the samples and one `file:line: field: problem` message per bad line (never raises
on bad data).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import IO, Any, TypeVar

S = TypeVar("S")

STATES_FILE = "states.jsonl"
ROLES = ("leader", "follower", "none")


@dataclass(frozen=True)
class StateSample:
    time: int
    node: int
    topic: str
    partition: int
    role: str
    leader: int | None
    epoch: int
    hw: int
    leo: int
    isr: tuple[int, ...]
    loop_lag_ms: int | None = None
    elr: tuple[int, ...] = ()

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.partition}"

    def to_json(self) -> dict[str, Any]:
        out = {**asdict(self), "isr": list(self.isr), "elr": list(self.elr)}
        if self.loop_lag_ms is None:
            del out["loop_lag_ms"]
        return out


class StatesWriter:
    """Appends samples to states.jsonl; `time` is ns since `start_ns` on the monotonic clock.

    Pass the HistoryWriter's start so both files share one clock.
    """

    def __init__(self, path: str | Path, start_ns: int | None = None,
                 clock: Callable[[], int] = time.monotonic_ns) -> None:
        self.path = Path(path)
        self._clock = clock
        self._start = clock() if start_ns is None else start_ns
        self._lock = threading.Lock()
        self._fh: IO[str] = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 - close()

    def write(self, node: int, topic: str, partition: int, role: str, leader: int | None,
              epoch: int, hw: int, leo: int, isr: list[int] | tuple[int, ...],
              time_ns: int | None = None, loop_lag_ms: int | None = None,
              elr: list[int] | tuple[int, ...] = ()) -> StateSample:
        if role not in ROLES:
            raise ValueError(f"role must be one of {ROLES}, got {role!r}")
        t = self._clock() - self._start if time_ns is None else time_ns
        sample = StateSample(max(0, t), node, topic, partition, role, leader, epoch, hw, leo,
                             tuple(isr), loop_lag_ms, tuple(elr))
        line = json.dumps(sample.to_json(), separators=(",", ":"))
        with self._lock:
            self._fh.write(line + "\n")
            self._fh.flush()
        return sample

    def close(self) -> None:
        with self._lock:
            self._fh.close()

    def __enter__(self) -> StatesWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def parse_sample(obj: Any) -> tuple[StateSample | None, str | None]:
    """(sample, None) or (None, "field: problem")."""
    if not isinstance(obj, dict):
        return None, f"expected a JSON object, got {type(obj).__name__}"
    checks = (
        ("time", _int(obj.get("time")) and obj.get("time", -1) >= 0),
        ("node", _int(obj.get("node"))),
        ("topic", isinstance(obj.get("topic"), str) and bool(obj.get("topic"))),
        ("partition", _int(obj.get("partition")) and obj.get("partition", -1) >= 0),
        ("role", obj.get("role") in ROLES),
        ("leader", obj.get("leader") is None or _int(obj.get("leader"))),
        ("epoch", _int(obj.get("epoch"))),
        ("hw", _int(obj.get("hw"))),
        ("leo", _int(obj.get("leo"))),
        ("isr", isinstance(obj.get("isr"), list) and all(_int(i) for i in obj["isr"])),
        ("loop_lag_ms", obj.get("loop_lag_ms") is None
         or (_int(obj.get("loop_lag_ms")) and obj["loop_lag_ms"] >= 0)),
        ("elr", isinstance(obj.get("elr", []), list) and all(_int(i) for i in obj.get("elr", []))),
    )
    for name, ok in checks:
        if not ok:
            return None, f"{name}: invalid value {obj.get(name)!r}"
    return StateSample(
        obj["time"], obj["node"], obj["topic"], obj["partition"], obj["role"], obj["leader"],
        obj["epoch"], obj["hw"], obj["leo"], tuple(obj["isr"]), obj.get("loop_lag_ms"),
        tuple(obj.get("elr", [])),
    ), None


def read_states(path: str | Path, max_problems: int = 20) -> tuple[list[StateSample], list[str]]:
    """Samples sorted by time, and problems (`file:line: ...`); a missing file is no samples."""
    return read_samples(path, parse_sample, max_problems)


def read_samples(path: str | Path, parse: Callable[[Any], tuple[S | None, str | None]],
                 max_problems: int = 20) -> tuple[list[S], list[str]]:
    """A JSON-lines sample file: `parse` each line; samples sorted by their `time`, and one
    `file:line: problem` per bad line (at most max_problems). Never raises on bad data; a
    missing file is no samples. Shared by states.jsonl and quorum.jsonl."""
    path = Path(path)
    samples: list[S] = []
    problems: list[str] = []
    if not path.is_file():
        return samples, problems
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            for lineno, text in enumerate(fh, start=1):
                if not text.strip():
                    continue
                try:
                    sample, problem = parse(json.loads(text))
                except json.JSONDecodeError as e:
                    sample, problem = None, f"not valid JSON ({e.msg})"
                if sample is not None:
                    samples.append(sample)
                elif len(problems) < max_problems:
                    problems.append(f"{path}:{lineno}: {problem}")
    except OSError as e:
        problems.append(f"{path}: cannot read: {e.strerror or e}")
    samples.sort(key=lambda s: s.time)  # type: ignore[attr-defined]
    return samples, problems
