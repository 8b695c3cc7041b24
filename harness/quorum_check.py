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
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from harness.store.quorum import QuorumSample


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
