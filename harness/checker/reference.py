"""A plain, single-threaded reference implementation of HISTORY.md's anomalies (no Spark).

Written from the definitions in HISTORY.md, independently of the Spark pipeline, so that
`highwater bench checker` can put the Spark checker next to the obvious for-loop, and the
differential test can compare the two on the same histories.

Contract: `reference_check(path)` reads one well-formed history.jsonl once, line by line, and
returns `{"anomalies": ..., "stats": ...}` shaped like those keys of results.json: every anomaly
with its count, by_partition (sorted) and up to 10 examples. It does NOT validate the history
(that is `harness.checker.history.validate_history`): a malformed line raises.

Examples, as the project's checker lists them: each counted unit has a sort key (the index
that identifies it: the send's invoke, the first read, the first final read...) and the
indexes involved; the 10 with the smallest (key, indexes) are kept.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from harness.checker.history import ANOMALIES, partition_name
from harness.store.history import read_ops

EXAMPLES = 10


def reference_check(path: str | Path) -> dict[str, Any]:
    # Everything below is keyed by p = (topic, partition).
    final: dict[tuple, dict[int, dict[int, int]]] = defaultdict(dict)  # p -> off -> val -> 1st idx
    observed: dict[tuple, dict[int, dict[int, int]]] = defaultdict(dict)  # every ok read + ok send
    nonfinal: dict[tuple, dict[tuple[int, int], int]] = defaultdict(dict)  # (off, val) -> 1st idx
    sends: list[tuple] = []  # completed sends: (p, type, value, acks, invoke index, index)
    sent_parts: dict[tuple, int] = {}  # p -> first send invoke index
    in_flight: dict[Any, int] = {}  # process -> index of its invoke
    last_read: dict[tuple, tuple[int, int]] = {}  # (process, final, p) -> (offset, index)
    seq_events: list[tuple] = []  # (p, kind, prev_offset, offset, prev_index, index)
    # (process, p, generation, rebalance) -> its non-final reads in order: (offset, value, index)
    sequences: dict[tuple, list[tuple[int, int, int]]] = defaultdict(list)
    stats = dict.fromkeys(("sends", "acked", "failed", "info", "polls"), 0)
    groups = _GroupReads()

    def see(table: dict, p: tuple, offset: int, value: int, index: int) -> None:
        vals = table[p].setdefault(offset, {})
        if value not in vals:
            vals[value] = index

    for op in read_ops(path):
        process = op["process"]
        if process == "nemesis":
            continue
        index, typ, f = op["index"], op["type"], op["f"]
        if f == "commit":
            groups.commit(op)
        if typ == "invoke":
            in_flight[process] = index
            if f == "commit":
                continue
            if f == "send":
                stats["sends"] += 1
                sent_parts.setdefault((op["topic"], op["partition"]), index)
            else:
                stats["polls"] += 1
            continue
        invoke = in_flight.pop(process)
        if f == "commit":
            continue
        if f == "send":
            p = (op["topic"], op["partition"])
            stats[{"ok": "acked", "fail": "failed", "info": "info"}[typ]] += 1
            sends.append((p, typ, op["value"], op["acks"], invoke, index))
            if typ == "ok" and op.get("offset") is not None:
                see(observed, p, op["offset"], op["value"], index)
            continue
        if typ != "ok":
            continue
        is_final = op["final"]
        for r in op["records"]:
            p, offset, value = (r["topic"], r["partition"]), r["offset"], r["value"]
            see(observed, p, offset, value, index)
            if is_final:
                see(final, p, offset, value, index)
            elif (offset, value) not in nonfinal[p]:
                nonfinal[p][(offset, value)] = index
            if not is_final:
                groups.read(op, r)
                sequences[(process, p, r.get("generation"), r.get("rebalance"))].append(
                    (offset, value, index))
            key = (process, is_final, p, r.get("generation"), r.get("rebalance"))
            prev = last_read.get(key)
            if prev is not None:
                seq_events.append((p, prev[0], offset, prev[1], index))
            last_read[key] = (offset, index)

    found: dict[str, list[tuple[tuple, int, list[int], str | None]]] = {a: [] for a in ANOMALIES}

    def add(name: str, p: tuple, key: int, ex: list[int], acks: str | None = None) -> None:
        found[name].append((p, key, ex, acks))

    # F[p] by value: value -> {offset: first final index}
    final_by_value: dict[tuple, dict[int, dict[int, int]]] = {}
    for p, offsets in final.items():
        by_value: dict[int, dict[int, int]] = defaultdict(dict)
        for offset, vals in offsets.items():
            for value, idx in vals.items():
                by_value[value][offset] = idx
        final_by_value[p] = by_value

    for p, typ, value, acks, invoke, index in sends:
        if p not in final:
            continue
        held = final_by_value[p].get(value)
        if typ == "ok" and held is None:
            add("lost-write", p, invoke, [invoke, index], acks)
        elif typ in ("fail", "info") and held is not None:
            name = "lost-failure" if typ == "fail" else "unseen-info"
            add(name, p, invoke, [invoke, index, min(held.values())])

    for p, offsets in observed.items():
        for vals in offsets.values():
            if len(vals) > 1:
                ex = sorted(vals.values())
                add("inconsistent-offset", p, ex[0], ex[:EXAMPLES])

    for p, reads in nonfinal.items():
        if p not in final:
            continue
        for (offset, value), idx in reads.items():
            if value not in final[p].get(offset, {}):
                add("uncommitted-read", p, idx, [idx])

    for p, by_value in final_by_value.items():
        for held in by_value.values():
            if len(held) > 1:
                ex = sorted(held.values())
                add("duplicate", p, ex[0], ex[:EXAMPLES])

    final_offsets = {p: sorted(offsets) for p, offsets in final.items()}
    for p, prev_offset, offset, prev_index, index in seq_events:
        if offset <= prev_offset:
            add("nonmonotonic-poll", p, index, [prev_index, index])
        elif offset > prev_offset + 1 and _held_between(final_offsets.get(p), prev_offset, offset):
            add("poll-skip", p, index, [prev_index, index])

    for (_process, p, _g, _r), reads in sequences.items():
        for key, ex in _truncation_skips(reads, final.get(p)):
            add("truncation-skip", p, key, ex)

    for p, first in sent_parts.items():
        if p not in final:
            add("no-final-read", p, first, [first])

    groups.anomalies(add, final_offsets)

    return {"anomalies": _tables(found), "stats": _stats(stats, found["lost-write"])}


class _GroupReads:
    """docs/history-groups.md's anomalies: member reads (tenures) and commits, per group."""

    def __init__(self) -> None:
        # (group, p, process, generation, rebalance) -> (index of the first read, its offset,
        # the offset this process read of p just before, or None)
        self.first: dict[tuple, tuple[int, int, int | None]] = {}
        self.last: dict[tuple, int] = {}  # (group, p, process) -> last offset read
        self.invoked: dict[tuple, list[tuple[int, int]]] = defaultdict(list)  # (g, p) -> [(i, o)]
        self.acked: dict[tuple, list[tuple[int, int]]] = defaultdict(list)

    def commit(self, op: dict) -> None:
        table = {"invoke": self.invoked, "ok": self.acked}.get(op["type"])
        if table is None:
            return
        for o in op["offsets"]:
            table[(op["group"], (o["topic"], o["partition"]))].append((op["index"], o["offset"]))

    def read(self, op: dict, r: dict) -> None:
        group, gen = op.get("group"), r.get("generation")
        if group is None or gen is None:
            return
        p = (r["topic"], r["partition"])
        mine = (group, p, op["process"])
        tenure = (*mine, gen, r.get("rebalance"))
        self.first.setdefault(tenure, (op["index"], r["offset"], self.last.get(mine)))
        self.last[mine] = r["offset"]

    def anomalies(self, add, final_offsets: dict[tuple, list[int]]) -> None:
        owners: dict[tuple, dict[Any, int]] = defaultdict(dict)
        tenures: dict[tuple, list[int]] = defaultdict(list)
        for (group, p, process, gen, _), (index, offset, prev) in self.first.items():
            mine = owners[(group, p, gen)]
            mine[process] = min(index, mine.get(process, index))
            tenures[(group, p, process, gen)].append(index)
            acked = [(o, i) for i, o in self.acked[(group, p)] if i < index]
            if acked and offset < max(acked)[0]:
                add("commit-regression", p, index, [max(acked)[1], index])
            committed = [o for i, o in self.invoked[(group, p)] if i < index]
            bounds = committed + ([prev + 1] if prev is not None else [])
            start = max(bounds) if bounds else -1
            held = final_offsets.get(p)
            if offset > start and held and _held_between(held, start - 1, offset):
                add("rebalance-skip", p, index, [index])
        for (_, p, _), readers in owners.items():
            if len(readers) > 1:
                ex = sorted(readers.values())
                add("double-assignment", p, ex[0], ex[:EXAMPLES])
        for (_, p, _, _), firsts in tenures.items():
            if len(firsts) > 1:
                ex = sorted(firsts)
                add("generation-reuse", p, ex[0], ex[:EXAMPLES])


def _truncation_skips(reads: list[tuple[int, int, int]], final: dict[int, dict[int, int]] | None
                      ) -> list[tuple[int, list[int]]]:  # fmt: skip
    """docs/history-truncation-skip.md: in one process's sequence of reads of p, each offset o
    it read with a value F[p] replaced, that it later read past (a read of an offset > o
    holding F[p]'s value) and never re-read with F[p]'s value. One unit per offset: the
    first such read's index and the index of the highest-offset final read after it."""
    if not final:
        return []
    later_max = (-1, -1)  # (offset, index) of the highest-offset good read after this one
    good_later: set[int] = set()  # offsets read after this one with F[p]'s value
    first: dict[int, tuple[int, int]] = {}  # offset -> (index, later_max index), earliest wins
    for offset, value, index in reversed(reads):
        held = final.get(offset)
        good = held is not None and value in held
        if good:
            good_later.add(offset)
            if offset > later_max[0]:
                later_max = (offset, index)
        elif held is not None and later_max[0] > offset and offset not in good_later:
            first[offset] = (index, later_max[1])
    return sorted((i, [i, j]) for i, j in first.values())


def _held_between(offsets: list[int] | None, lo: int, hi: int) -> bool:
    """Does the sorted list hold an offset o with lo < o < hi?"""
    if not offsets:
        return False
    from bisect import bisect_right

    i = bisect_right(offsets, lo)
    return i < len(offsets) and offsets[i] < hi


def _tables(found: dict[str, list]) -> dict[str, dict[str, Any]]:
    out = {}
    for name in ANOMALIES:
        units = found[name]
        by_partition: dict[str, int] = defaultdict(int)
        for p, *_ in units:
            by_partition[partition_name(*p)] += 1
        examples = [ex for _, ex in sorted((key, ex) for _, key, ex, _ in units)[:EXAMPLES]]
        out[name] = {
            "count": len(units),
            "by_partition": dict(sorted(by_partition.items())),
            "examples": examples,
        }
    return out


def _stats(stats: dict[str, int], lost: list) -> dict[str, Any]:
    lost_by_acks = dict.fromkeys(("all", "1", "0"), 0)
    for *_, acks in lost:
        if acks in lost_by_acks:
            lost_by_acks[acks] += 1
    return {**stats, "lost_by_acks": lost_by_acks}


if __name__ == "__main__":
    import sys

    print(json.dumps(reference_check(sys.argv[1]), indent=2))
