"""Did a controller cut off from the other voters commit anything while it was cut? (issue 13)

Input: the run's quorum samples (quorum.jsonl, harness/store/quorum.py; the simulator writes
the same file), the controller that was cut (its number c of controller-c) and the cut's
start and end on the samples' clock (ns since the run started).

Definition (`commits_while_cut`): the baseline is the cut controller's last sample at or
before the start (its Raft epoch and high watermark then). A commit while cut is a sample of
it strictly inside (start, end] in that same epoch whose high watermark is above every high
watermark it reported in that epoch before (the baseline's included): a leader that no
majority fetches from must not move its high watermark (KIP-595: commit needs a majority of
voters). Samples of a later epoch (it learned the new leader, or stood for election) are not
commits of the old epoch and are not counted. `appended_while_cut` is how far its log end
(`leo`, when the samples carry it) rose in that epoch while cut: records it wrote and could
not commit (0 means the check had nothing to refuse). The result also names the epochs in which
another controller was active during the cut (the election the cut must cause).

Result: {"controller", "epoch", "hw_at_cut", "max_hw_while_cut", "commits",
"appended_while_cut" (None without leo), "samples", "new_active": [[controller, epoch],
...]}; `commits` is the number of samples that moved the high watermark. No baseline sample
(the controller never answered before the cut) is a ValueError: nothing could be judged.

`controller_cut_check(history_path, quorum_path)` is the run check results.json carries as
`controller-commit-while-cut` (docs/controller-cut.md): it finds the windows in which the run's
nemesis cut a controller from every other voter (`cut_windows`: one partition or isolate step
whose cut links separate it from all of them, between that step's start and stop ops) and sums
`commits` over them, each window judged from CUT_GRACE_NS after its start op: the op is written
just before the links are cut, and a fetch already in flight when they were may still reach the
leader and legitimately move its high watermark (a fetch waits at most 500 ms), so only later
moves are commits while cut. None when the run has no quorum samples, cut no controller that
way, or had no sample to judge any window by.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.store.quorum import QuorumSample, read_quorum

CUT_ACTIONS = ("partition", "isolate")
#: from a cut's start op to the moment no fetch sent before the cut can still arrive
CUT_GRACE_NS = 1_000_000_000


@dataclass(frozen=True)
class CutWindow:
    """Controller `controller` cut from every other voter from `start_ns` to `end_ns` (history
    clock) by nemesis step `step`, whose start and stop ops are `indices`."""

    controller: int
    start_ns: int
    end_ns: int
    step: str
    indices: tuple[int, int]


def _controller(name: str) -> int | None:
    prefix, _, n = name.partition("-")
    return int(n) if prefix == "controller" and n.isdigit() else None


def _cut_pairs(value: dict[str, Any]) -> set[frozenset[str]] | None:
    """The node pairs a start op's value says were cut; None when it cuts everything around
    its nodes (a container isolate)."""
    if "cut" in value:  # the simulator: "x<->y" per cut link
        return {frozenset(str(c).split("<->")) for c in value["cut"]}
    if "peers" in value:  # containers: every node with every peer
        return {frozenset((str(x), str(y))) for x in value.get("nodes", [])
                for y in value["peers"]}
    return None


def cut_windows(ops: Iterable[dict[str, Any]], voters: Iterable[int]) -> list[CutWindow]:
    """The windows of nemesis ops (in history order) that cut a voter from all the others."""
    voters = sorted(set(voters))
    open_: dict[str, tuple[dict[str, Any], list[int]]] = {}
    windows: list[CutWindow] = []
    for op in ops:
        if op.get("process") != "nemesis" or op.get("f") not in CUT_ACTIONS:
            continue
        value = op.get("value") if isinstance(op.get("value"), dict) else {}
        step = str(value.get("step"))
        if op.get("phase") == "start":
            pairs = _cut_pairs(value)
            cut = []
            for c in voters:
                me = f"controller-{c}"
                others = [f"controller-{d}" for d in voters if d != c]
                if pairs is None:
                    isolated = me in value.get("nodes", [])
                else:
                    isolated = all(frozenset((me, o)) in pairs for o in others)
                if others and isolated:
                    cut.append(c)
            if cut:
                open_[step] = (op, cut)
        elif op.get("phase") == "stop" and step in open_:
            start, cut = open_.pop(step)
            windows += [CutWindow(c, int(start["time"]), int(op["time"]), step,
                                  (int(start["index"]), int(op["index"]))) for c in cut]
    return windows


def _nemesis_ops(history_path: Path) -> Iterator[dict[str, Any]]:
    # Only nemesis lines are parsed: a long history is mostly sends and polls.
    with Path(history_path).open("rb") as f:
        for line in f:
            if b'"nemesis"' in line:
                yield json.loads(line)


def controller_cut_check(history_path: Path, quorum_path: Path) -> dict[str, Any] | None:
    """results.json's `controller-commit-while-cut` for a run, or None (see the module doc)."""
    samples, _problems = read_quorum(quorum_path)
    if not samples:
        return None
    windows = cut_windows(_nemesis_ops(history_path), {s.controller for s in samples})
    if not windows:
        return None
    count, by_controller, examples, judged, unjudged = 0, {}, [], [], []
    for w in windows:
        if w.end_ns - w.start_ns <= CUT_GRACE_NS:
            unjudged.append({"step": w.step, "controller": w.controller,
                             "why": "the cut was not longer than the grace"})
            continue
        try:
            r = commits_while_cut(samples, w.controller, w.start_ns + CUT_GRACE_NS, w.end_ns)
        except ValueError as e:
            unjudged.append({"step": w.step, "controller": w.controller, "why": str(e)})
            continue
        judged.append({"step": w.step, **r})
        if r["commits"]:
            count += r["commits"]
            key = f"controller-{w.controller}"
            by_controller[key] = by_controller.get(key, 0) + r["commits"]
            examples.append(list(w.indices))
    if not judged:
        return None  # no window could be judged: not checked (an expectation about it misses)
    return {"count": count, "by_partition": by_controller, "examples": examples[:10],
            "windows": judged, "unjudged": unjudged}


def commits_while_cut(samples: Iterable[QuorumSample], controller: int, start_ns: int,
                      end_ns: int) -> dict[str, Any]:
    if end_ns < start_ns:
        raise ValueError(f"the cut ends ({end_ns}) before it starts ({start_ns})")
    ordered = sorted(samples, key=lambda s: s.time)
    before = [s for s in ordered if s.controller == controller and s.time <= start_ns]
    if not before:
        raise ValueError(f"controller {controller} has no quorum sample before the cut")
    epoch = before[-1].epoch
    high = max((s.hw for s in before if s.epoch == epoch and s.hw is not None), default=None)
    hw_at_cut = high
    leo_at_cut = before[-1].leo if before[-1].epoch == epoch else None
    max_leo = leo_at_cut
    commits = seen = 0
    new_active: set[tuple[int, int]] = set()
    for s in ordered:
        if not start_ns < s.time <= end_ns:
            continue
        if s.controller != controller:
            if s.active and s.epoch > epoch:
                new_active.add((s.controller, s.epoch))
            continue
        seen += 1
        if s.epoch != epoch:
            continue
        if s.leo is not None and max_leo is not None:
            max_leo = max(max_leo, s.leo)
        if s.hw is None:
            continue
        if high is None or s.hw > high:
            commits += 1
            high = s.hw
    return {"controller": controller, "epoch": epoch, "hw_at_cut": hw_at_cut,
            "max_hw_while_cut": high, "commits": commits,
            "appended_while_cut": None if leo_at_cut is None else max_leo - leo_at_cut,
            "samples": seen,
            "new_active": sorted(map(list, new_active))}
