"""What the report draws, derived from a run dir's files in one streaming pass over the history.

Contract: `load_run(run_dir)` reads plan.yaml, run.json, results.json, history.jsonl and
states.jsonl (each may be missing or partly malformed: the report then says so in `warnings`,
naming file:line) and returns a `RunData`:
- `sends`: a `Sends` summary of the completed sends, built while streaming: counts per
  completion type, completions per second, and a bounded sample of `OpPoint`s (every fail/info
  up to a cap, ok sends evenly decimated), so a 10^7-send history does not sit in memory;
- `faults`: nemesis windows, a `start` matched with the next `stop` of the same fault name and
  value (an unmatched start lasts to the end of the run);
- `excerpt`: the raw history lines around every example index of results.json (only those
  lines are kept, so a 10⁷-line history does not sit in memory);
- `states` and `leader_changes` per partition (a change = a node first reporting itself leader
  with an epoch above every epoch seen before for that partition).
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.store import RunDir, StoreError
from harness.store.history import read_history
from harness.store.quorum import QUORUM_FILE, active_changes, read_quorum
from harness.store.states import StateSample, read_states

NS = 1e9
EXCERPT_CONTEXT = 4  # history lines shown either side of an example index


@dataclass(frozen=True, slots=True)  # one per send: 10^6 of them must stay small
class OpPoint:
    time_s: float  # invoke time
    latency_ms: float
    type: str  # ok | fail | info
    invoke_index: int
    index: int  # the completion's index
    end_s: float


class Sends:
    """Completed sends, summarized as they stream by (bounded memory, whatever the history).

    Keeps: `by_type` counts, completions per whole second per type (`per_second`), up to `cap`
    fail/info points (the first ones) and at most 2*`cap` ok points: every `step`-th ok send,
    `step` doubling whenever the kept ones reach 2*cap (so the kept oks stay evenly spread)."""

    def __init__(self, cap: int = 6000) -> None:
        self.cap = cap
        self.by_type: dict[str, int] = {"ok": 0, "fail": 0, "info": 0}
        self.per_second: dict[str, list[int]] = {t: [] for t in self.by_type}
        self.rare: list[OpPoint] = []
        self.oks: list[OpPoint] = []
        self.step = 1
        self._n = 0

    def append(self, p: OpPoint) -> None:
        self._n += 1
        if p.type not in self.by_type:
            return
        self.by_type[p.type] += 1
        bins = self.per_second[p.type]
        sec = max(0, int(p.end_s))
        if sec >= len(bins):
            bins.extend([0] * (sec + 1 - len(bins)))
        bins[sec] += 1
        if p.type != "ok":
            if len(self.rare) < self.cap:
                self.rare.append(p)
        elif (self.by_type["ok"] - 1) % self.step == 0:
            self.oks.append(p)
            if len(self.oks) >= 2 * self.cap:
                self.oks = self.oks[::2]
                self.step *= 2

    def points(self) -> list[OpPoint]:
        """The kept sample, in time order."""
        return sorted(self.rare + self.oks, key=lambda p: p.time_s)

    def __len__(self) -> int:
        return self._n


@dataclass(frozen=True)
class FaultWindow:
    f: str
    value: Any
    start_s: float
    end_s: float
    start_index: int
    open_ended: bool = False

    @property
    def name(self) -> str:
        """The plan step's name when the nemesis recorded one, else the fault's label."""
        step = self.value.get("step") if isinstance(self.value, dict) else None
        return str(step) if step else self.label

    @property
    def label(self) -> str:
        v = self.value
        if v is None or v == {}:
            return self.f
        if isinstance(v, dict):
            inner = ",".join(f"{k}={w}" for k, w in v.items())
            return f"{self.f} {inner}"
        return f"{self.f} {v}"


@dataclass(frozen=True)
class LeaderChange:
    time_s: float
    leader: int
    epoch: int


@dataclass
class RunData:
    run_dir: Path
    plan: dict[str, Any] | None = None
    plan_text: str = ""
    meta: dict[str, Any] = field(default_factory=dict)
    results: dict[str, Any] | None = None
    sends: Sends = field(default_factory=Sends)
    polls: int = 0
    faults: list[FaultWindow] = field(default_factory=list)
    excerpt: dict[int, str] = field(default_factory=dict)
    ops: int = 0
    end_s: float = 0.0
    states: dict[str, list[StateSample]] = field(default_factory=dict)
    leader_changes: dict[str, list[LeaderChange]] = field(default_factory=dict)
    # (time s, active controller, Raft epoch) per new active controller (quorum.jsonl)
    controller_changes: list[tuple[float, int, int]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def seed(self) -> Any:
        if "seed" in self.meta:
            return self.meta["seed"]
        nemesis = (self.plan or {}).get("nemesis") or {}
        return nemesis.get("seed") if isinstance(nemesis, dict) else None


def example_indexes(results: dict[str, Any] | None) -> set[int]:
    """Every history index named by an example in results.json."""
    out: set[int] = set()
    for a in ((results or {}).get("anomalies") or {}).values():
        for ex in (a or {}).get("examples") or []:
            for i in ex if isinstance(ex, list) else [ex]:
                if isinstance(i, int) and not isinstance(i, bool):
                    out.add(i)
    return out


def _wanted(examples: set[int]) -> set[int]:
    return {i + d for i in examples for d in range(-EXCERPT_CONTEXT, EXCERPT_CONTEXT + 1)}


def load_run(run_dir: str | Path) -> RunData:
    run = RunDir(Path(run_dir))
    data = RunData(run.path.resolve())
    for what, load in (("plan", run.plan), ("meta", run.meta), ("results", run.results)):
        try:
            setattr(data, what, load())
        except StoreError as e:
            data.warnings.append(str(e))
    if data.meta is None:
        data.meta = {}
    if run.plan_path.is_file():
        data.plan_text = run.plan_path.read_text(encoding="utf-8", errors="replace")
    if data.results is None and not data.warnings:
        data.warnings.append(f"{run.results_path}: missing (the run was not checked)")
    _read_history(run.history_path, data)
    samples, problems = read_states(run.states_path)
    data.warnings += problems
    for s in samples:
        data.states.setdefault(s.name, []).append(s)
    data.leader_changes = {p: leader_changes(ss) for p, ss in data.states.items()}
    quorum, problems = read_quorum(run.path / QUORUM_FILE)
    data.warnings += problems
    data.controller_changes = active_changes(quorum)
    if samples:
        data.end_s = max(data.end_s, samples[-1].time / NS)
    data.faults = [
        w if not w.open_ended else FaultWindow(w.f, w.value, w.start_s, data.end_s,
                                               w.start_index, True)
        for w in data.faults
    ]
    return data


def _read_history(path: Path, data: RunData, max_warnings: int = 20) -> None:
    if not path.is_file():
        data.warnings.append(f"{path}: missing")
        return
    wanted = _wanted(example_indexes(data.results))
    in_flight: dict[Any, dict[str, Any]] = {}
    open_faults: dict[tuple[str, str], list[tuple[float, int, Any]]] = defaultdict(list)
    bad = 0
    for line in read_history(path, errors="replace"):
        op, text, lineno = line.op, line.text, line.lineno
        try:
            if op is None:
                raise ValueError(line.error)
            index, t = int(op["index"]), op["time"] / NS
            process, typ, f = op["process"], op["type"], op["f"]
        except (ValueError, KeyError, TypeError) as e:
            bad += 1
            if bad <= max_warnings:
                data.warnings.append(f"{path}:{lineno}: skipped: {type(e).__name__} {e}")
            continue
        data.ops += 1
        data.end_s = max(data.end_s, t)
        if index in wanted:
            data.excerpt[index] = text
        if process == "nemesis":
            key = (f, json.dumps(op.get("value"), sort_keys=True))
            if op.get("phase") == "start":
                open_faults[key].append((t, index, op.get("value")))
            elif op.get("phase") == "stop":
                _close_fault(data, open_faults, key, t)
            continue
        if typ == "invoke":
            in_flight[process] = {"t": t, "index": index}
        elif (inv := in_flight.pop(process, None)) is not None:
            if f == "send":
                data.sends.append(OpPoint(inv["t"], (t - inv["t"]) * 1e3, typ,
                                          inv["index"], index, t))
            elif f == "poll":
                data.polls += 1
    if bad > max_warnings:
        data.warnings.append(f"{path}: {bad - max_warnings} more malformed lines skipped")
    for (f, _), starts in open_faults.items():
        for t, index, value in starts:
            data.faults.append(FaultWindow(f, value, t, t, index, open_ended=True))
    data.faults.sort(key=lambda w: (w.start_s, w.start_index))


def _close_fault(data: RunData, open_faults: dict, key: tuple[str, str], t: float) -> None:
    starts = open_faults.get(key)
    if not starts:
        # A stop whose value differs from its start (e.g. heal reports more): same name wins.
        starts = next((s for (f, _), s in open_faults.items() if f == key[0] and s), None)
    if not starts:
        data.warnings.append(f"nemesis stop of {key[0]!r} at {t:.3f}s without a start")
        return
    start_t, index, value = starts.pop(0)
    data.faults.append(FaultWindow(key[0], value, start_t, t, index))


def leader_changes(samples: list[StateSample]) -> list[LeaderChange]:
    """Self-reported leaderships with a new highest epoch, in time order."""
    out: list[LeaderChange] = []
    best = -2
    for s in samples:
        if s.role == "leader" and s.epoch > best:
            best = s.epoch
            out.append(LeaderChange(s.time / NS, s.node, s.epoch))
    return out


def isr_elr_changes(samples: list[StateSample]
                    ) -> list[tuple[float, int, int, tuple[int, ...], tuple[int, ...]]]:
    """(time s, leader, epoch, ISR, ELR) as leaders reported them, one entry per change;
    reports from a leader of an older epoch than the last entry are ignored (stale)."""
    out: list[tuple[float, int, int, tuple[int, ...], tuple[int, ...]]] = []
    for s in samples:
        if s.role != "leader" or (out and s.epoch < out[-1][2]):
            continue
        key = (s.node, s.epoch, tuple(sorted(s.isr)), tuple(sorted(s.elr)))
        if not out or out[-1][1:] != key:
            out.append((s.time / NS, *key))
    return out


def throughput(points: list[OpPoint] | Sends, end_s: float, bins: int = 60
               ) -> tuple[float, dict[str, list[tuple[float, float]]]]:
    """(bin width in s, type -> [(bin start, completions/s)]) for completion times.

    From a `Sends`, whole-second counts are summed into the bins: exact for the usual integer
    widths; a width above 600 s (runs over 10 hours) puts each second in the bin of its start."""
    width = max(end_s, 1e-3) / bins
    # At least 1 s: finer bins only show the quantisation of a steady rate.
    nice = next((w for w in (1, 2, 5, 10, 30, 60, 300, 600) if w >= width), width)
    n = int(end_s // nice) + 1
    counts = {t: [0] * n for t in ("ok", "fail", "info")}
    if isinstance(points, Sends):
        for typ, per_second in points.per_second.items():
            for sec, k in enumerate(per_second):
                counts[typ][min(n - 1, int(sec // nice))] += k
    else:
        for p in points:
            if p.type in counts:
                counts[p.type][min(n - 1, int(p.end_s // nice))] += 1
    return nice, {t: [(i * nice, c / nice) for i, c in enumerate(cs)] for t, cs in counts.items()}


def thin(points: list[OpPoint] | Sends, limit: int = 6000) -> tuple[list[OpPoint], int]:
    """At most `limit` points: every fail/info kept, ok points evenly subsampled; the count
    returned is of all sends (a `Sends` gives its already bounded sample)."""
    if isinstance(points, Sends):
        shown, _ = thin(points.points(), limit)
        return shown, len(points)
    if len(points) <= limit:
        return points, len(points)
    rare = [p for p in points if p.type != "ok"][:limit]
    oks = [p for p in points if p.type == "ok"]
    room = max(0, limit - len(rare))
    kept = oks[:: max(1, -(-len(oks) // room))] if room else []  # no room: no ok at all
    return sorted(rare + kept, key=lambda p: p.time_s), len(points)
