"""The liveness run check `unconverged-replicas` (issue 24; DESIGN.md "Verdicts").

After the final heal a run waits at most `settle.timeout_s` for the cluster to converge; this
module says what converged means, and what the run check counts when the window ends. Both
runtimes feed it the same `ClusterState`s (the container run's StatePoller, the simulator's
`cluster_state`), so the check means the same in both.

Definition, per workload partition `p` of a ClusterState (the controller's leader, replicas and
ISR, and each reachable replica's own LEO and HW):
- `p` has no leader, or its leader is not alive: 1 (the partition) — plus each replica below;
- each replica `r` of `p` that is not in the ISR counts 1;
- each replica `r` in the ISR whose log end offset is below the leader's (it has not fetched
  everything the leader holds), or whose state could not be read (its broker did not answer),
  counts 1; a pair counts once;
- a leader whose high watermark is below its own log end while every replica has caught up
  counts 1 (it has not yet learned that they did: one fetch round away).
After the heal nothing writes to the workload's topics, so a live follower reaches the leader's
log end within a fetch round; one that does not is wedged even while it is still in the ISR
(the ISR shrinks only after replica.lag.time.max.ms). Hence the leader's log end, not only its
high watermark: a follower killed and restarted before it left the ISR comes back at the high
watermark, below the leader's log end, and has not converged until it fetched the rest.
`converged(state)` is "the count is 0"; `unconverged(state)` is the result that results.json
carries under `unconverged-replicas`, in the anomalies' shape (HISTORY.md "Extending the
format"): {"count", "by_partition", "examples": ["t-0: broker 2 not in the ISR [1, 3]", ...]
(at most 10)}, plus `recovery_s`: per partition, the seconds from the heal to the moment since
which it stayed converged (null: not converged when the window ended), and `window_s`.

`ConvergenceWatch` follows a settle window: `observe(state, since_heal_s)` for each fresh state
(it returns `converged(state)`, the wait's predicate), then `result()` judges the last state
seen. A run with no state at all (no broker answered) counts every replica of every partition
the plan names and each partition once.

Judged like every run check (harness.checker.expectations): `== 0` unless the plan's `expected`
names `unconverged-replicas`. A history judged on its own (no run check stored) keeps the
verdict HISTORY.md gives it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from harness.checker.expectations import UNCONVERGED_REPLICAS
from harness.plan.state import ClusterState, PartitionState

__all__ = ["UNCONVERGED_REPLICAS", "ConvergenceWatch", "converged", "unconverged"]
MAX_EXAMPLES = 10


def _problems(p: PartitionState, alive: frozenset[int]) -> list[str]:
    """One phrase per unconverged (partition, replica) pair, and one for a missing leader."""
    out: list[str] = []
    leader_state = p.replica_states.get(p.leader) if p.leader is not None else None
    if p.leader is None or p.leader not in alive:
        out.append(f"{p.name}: no live leader (leader {p.leader}, epoch {p.leader_epoch})")
    for r in p.replicas:
        if r not in p.isr:
            out.append(f"{p.name}: broker {r} not in the ISR {list(p.isr)}")
            continue
        st = p.replica_states.get(r)
        if st is None:
            out.append(f"{p.name}: broker {r} in the ISR but its state could not be read")
        elif leader_state is not None and st.leo < leader_state.leo:
            out.append(f"{p.name}: broker {r} log end {st.leo} below the leader's "
                       f"{leader_state.leo}")
    if not out and leader_state is not None and leader_state.hw < leader_state.leo:
        out.append(f"{p.name}: leader {p.leader} high watermark {leader_state.hw} below its "
                   f"log end {leader_state.leo}")
    return out


def converged(state: ClusterState) -> bool:
    """Every partition led by a live broker, every replica in the ISR and caught up."""
    return all(not _problems(p, state.alive) for p in state.partitions.values())


def unconverged(state: ClusterState | None, partitions: Iterable[tuple[str, int]] = (),
                ) -> dict[str, Any]:  # fmt: skip
    """The check's counts on `state`; `partitions` ((name, replication factor)) are counted
    as wholly unconverged when there is no state at all."""
    by_partition: dict[str, int] = {}
    examples: list[str] = []
    if state is None:
        for name, rf in partitions:
            by_partition[name] = rf + 1
            examples.append(f"{name}: no broker state seen")
    else:
        for name, p in sorted(state.partitions.items()):
            found = _problems(p, state.alive)
            if found:
                by_partition[name] = len(found)
                examples += found
    return {"count": sum(by_partition.values()), "by_partition": by_partition,
            "examples": examples[:MAX_EXAMPLES]}  # fmt: skip


class ConvergenceWatch:
    """One settle window: the states seen since the heal, and when each partition converged."""

    def __init__(self, partitions: Iterable[tuple[str, int]] = ()) -> None:
        self.partitions = tuple(partitions)  # (name, replication factor): the plan's
        self.last: ClusterState | None = None
        self.last_s = 0.0
        # partition -> seconds after the heal since which it has been converged (None: not now)
        self._since: dict[str, float | None] = {n: None for n, _ in self.partitions}

    def observe(self, state: ClusterState, since_heal_s: float) -> bool:
        self.last, self.last_s = state, since_heal_s
        ok = True
        for name, p in state.partitions.items():
            if _problems(p, state.alive):
                self._since[name] = None
                ok = False
            elif self._since.get(name) is None:
                self._since[name] = round(since_heal_s, 3)
        return ok

    def result(self, window_s: float) -> dict[str, Any]:
        out = unconverged(self.last, self.partitions)
        out["recovery_s"] = dict(sorted(self._since.items()))
        out["window_s"] = window_s
        return out
