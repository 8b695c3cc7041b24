"""KRaft quorum samples: `quorum.jsonl` in the run dir, the report's controller epoch timeline.

Format: one JSON object per line, one line per (poll, controller that answered) — what
controller `controller` said about the Raft quorum (its /state "quorum") when the run polled
its admin endpoint:

| field | type | meaning |
|---|---|---|
| `time` | int | nanoseconds since the run started, the clock of history.jsonl's `time` |
| `controller` | int | the controller that answered (controller-<c>: c) |
| `epoch` | int | the Raft epoch it is in |
| `leader` | int or null | the leader it knows for that epoch (c), null while an election runs |
| `active` | bool | it is that leader and serves as the active controller |
| `hw` | int or null | its Raft high watermark (null: not known yet) |
| `committed` | int | offset below which its metadata is committed and applied |
| `leo` | int or absent | its metadata log end offset (committed or not); absent in runs before it |

A controller that could not be asked has no line for that poll. `QuorumWriter` writes the
format (thread-safe, flushed per line); `read_quorum` parses it, returning the samples and one
`file:line: problem` message per bad line (never raises on bad data); a missing file (a run
before issue 13, the simulator) is no samples.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import IO, Any

from harness.store.states import _int, read_samples

QUORUM_FILE = "quorum.jsonl"


@dataclass(frozen=True)
class QuorumSample:
    time: int
    controller: int
    epoch: int
    leader: int | None
    active: bool
    hw: int | None
    committed: int
    leo: int | None = None  # absent (None) in files written before it


class QuorumWriter:
    """Appends samples to quorum.jsonl; `time` is ns since `start_ns` on the monotonic clock."""

    def __init__(self, path: str | Path, start_ns: int | None = None,
                 clock: Callable[[], int] = time.monotonic_ns) -> None:
        self.path = Path(path)
        self._clock = clock
        self._start = clock() if start_ns is None else start_ns
        self._lock = threading.Lock()
        self._fh: IO[str] = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 - close()

    def write(self, controller: int, epoch: int, leader: int | None, active: bool,
              hw: int | None, committed: int, time_ns: int | None = None,
              leo: int | None = None) -> QuorumSample:
        t = self._clock() - self._start if time_ns is None else time_ns
        sample = QuorumSample(max(0, t), controller, epoch, leader, active, hw, committed, leo)
        fields = asdict(sample)
        if leo is None:
            del fields["leo"]
        line = json.dumps(fields, separators=(",", ":"))
        with self._lock:
            self._fh.write(line + "\n")
            self._fh.flush()
        return sample

    def close(self) -> None:
        with self._lock:
            self._fh.close()


def parse_quorum_sample(obj: Any) -> tuple[QuorumSample | None, str | None]:
    """(sample, None) or (None, "field: problem")."""
    if not isinstance(obj, dict):
        return None, f"expected a JSON object, got {type(obj).__name__}"
    checks = (
        ("time", _int(obj.get("time")) and obj["time"] >= 0),
        ("controller", _int(obj.get("controller"))),
        ("epoch", _int(obj.get("epoch"))),
        ("leader", obj.get("leader") is None or _int(obj.get("leader"))),
        ("active", isinstance(obj.get("active"), bool)),
        ("hw", obj.get("hw") is None or _int(obj.get("hw"))),
        ("committed", _int(obj.get("committed"))),
        ("leo", obj.get("leo") is None or _int(obj.get("leo"))),
    )
    for name, ok in checks:
        if not ok:
            return None, f"{name}: invalid value {obj.get(name)!r}"
    return QuorumSample(obj["time"], obj["controller"], obj["epoch"], obj.get("leader"),
                        obj["active"], obj.get("hw"), obj["committed"], obj.get("leo")), None


def read_quorum(path: str | Path, max_problems: int = 20
                ) -> tuple[list[QuorumSample], list[str]]:
    """Samples sorted by time, and problems (`file:line: ...`)."""
    return read_samples(path, parse_quorum_sample, max_problems)


def active_changes(samples: list[QuorumSample]) -> list[tuple[float, int, int]]:
    """(time s, active controller, Raft epoch) each time a controller first reports itself
    active at an epoch above every epoch seen active before: the controller epoch timeline."""
    out: list[tuple[float, int, int]] = []
    best = -1
    for s in samples:
        if s.active and s.epoch > best:
            best = s.epoch
            out.append((s.time / 1e9, s.controller, s.epoch))
    return out
