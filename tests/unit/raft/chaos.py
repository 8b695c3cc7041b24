"""Randomized fault schedules for the Raft property test, and a command for long runs:

    PYTHONPATH=$PWD python -m tests.unit.raft.chaos 0 5000          # fixed (vote log check on)
    PYTHONPATH=$PWD python -m tests.unit.raft.chaos 0 500 --legacy  # raft_vote_log_check=False
    PYTHONPATH=$PWD python -m tests.unit.raft.chaos 0 200 --file    # FileReplicatedLog voters
    PYTHONPATH=$PWD python -m tests.unit.raft.chaos 0 5000 --no-pre-vote  # Kafka 3.x elections

Each seed draws a quorum size, a drop rate and a schedule of appends, crashes/restarts,
partitions/heals and snapshots; the network's checker raises SafetyViolation on the first
broken Raft property. At the end every fault is healed and the quorum must converge.
"""

from __future__ import annotations

import random
import sys
import tempfile
import time
from pathlib import Path

from .net import SafetyViolation, SimNetwork


def chaos(seed: int, voters: int | None = None, steps: int = 60,
          **config: object) -> tuple[SimNetwork, bool]:
    r = random.Random(seed)
    voters = voters or r.choice([1, 3, 5])
    observers = r.choice([0, 0, 1, 2])
    net = SimNetwork(voters, seed=seed, drop_rate=r.choice([0.0, 0.05]), observers=observers,
                     **config)
    appended = 0
    for _ in range(steps):
        op = r.random()
        if op < 0.45:
            if net.leader() is not None:
                appended += 1
                net.append(f"v{appended}".encode())
        elif op < 0.55:
            down = [i for i, n in net.nodes.items() if not n.alive]
            if down:
                net.restart(r.choice(down))
            elif len(net.nodes) > 1:
                net.crash(r.choice(sorted(net.nodes)))
        elif op < 0.65 and len(net.nodes) > 1:
            ids = sorted(net.nodes)
            r.shuffle(ids)
            k = r.randint(1, len(ids) - 1)
            net.partition(set(ids[:k]), set(ids[k:]))
        elif op < 0.72:
            net.heal()
        elif op < 0.78:
            node = net.nodes[r.choice(sorted(net.nodes))]
            if node.alive and node.client.high_watermark:
                net.snapshot(node.node_id)
        net.run_for(r.choice([5, 50, 300, 2000]))
    net.heal()
    for i, node in net.nodes.items():
        if not node.alive:
            net.restart(i)

    def converged() -> bool:
        leader = net.leader()
        return leader is not None and all(
            n.client.high_watermark == leader.log.end_offset for n in net.nodes.values())

    return net, net.run_until(converged, 60_000)


def file_storage(root: Path):
    from broker_app.raft.file_log import FileQuorumStateStore, FileReplicatedLog

    def open_storage(node_id: int):
        d = root / f"controller-{node_id}"
        return FileReplicatedLog(d), FileQuorumStateStore(d)
    return open_storage


def main(argv: list[str]) -> int:
    lo, hi = int(argv[0]), int(argv[1])
    legacy, on_files = "--legacy" in argv, "--file" in argv
    pre_vote = "--no-pre-vote" not in argv
    started, violations, stuck = time.monotonic(), 0, 0
    for seed in range(lo, hi):
        try:
            with tempfile.TemporaryDirectory() as tmp:
                extra = {"open_storage": file_storage(Path(tmp))} if on_files else {}
                net, ok = chaos(seed, raft_vote_log_check=not legacy, pre_vote=pre_vote,
                                **extra)
                for node in net.nodes.values():
                    if on_files:
                        node.log.close()
            if not ok:
                stuck += 1
                print(f"seed {seed}: did not converge within 60 s after healing")
        except (SafetyViolation, RuntimeError) as e:
            violations += 1
            if violations <= 5:
                print(f"seed {seed}: {type(e).__name__}: {e}")
    print(f"seeds {lo}..{hi - 1} legacy={legacy} files={on_files} pre_vote={pre_vote}: "
          f"{violations} safety "
          f"violations, {stuck} did not converge, {time.monotonic() - started:.1f}s")
    return 1 if (violations or stuck) and not legacy else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
