"""`highwater bench crash`: issue 18's crash probe, on containers, as a documented command.

Per run: a container cluster (harness.run.observed.ObservedCluster: controller, 3 brokers,
Toxiproxy, admin /state), topic `crash` with --partitions partitions, RF=3,
min.insync.replicas=2, and the harness's own acks=all producers (harness.workload.Workload over
harness.client.ProducerClient, recording history.jsonl). Then --cycles cycles, the victim
rotating leader / controller / leader+controller (the leader of partition 0 as the controller
sees it):

1. with the producers running, SIGKILL the victim(s), wait --down-s, start them again;
2. `re-led s`: from the restart until every partition has a live leader that itself reports
   leading at the committed epoch (the StatePoller's view; 0.2 s polls, so +-0.2 s);
   `settled s`: until every ISR is full again;
3. `SIGTERM s`: `docker stop` (30 s grace) of a broker leading nothing, still under load,
   with its exit code (0 clean, 3 the broker's own hard exit, 137 SIGKILLed by docker); it is
   started again and the cluster settles;
4. the producers stop; `idle CPU %`: each broker's cgroup CPU time over --idle-s with no
   client traffic (the worst broker shown), and each broker's event-loop lag (max since its
   start, from /state).

At the end of a run everything is read back with the harness's drain (real consumers, from the
beginning to the high watermark) and compared with the acknowledged sends: `lost` = values
acknowledged (acks=all) that no final read returned. No checker, no Spark. Figures are printed
(and written with --json), never asserted; a cycle that does not recover within
--recover-timeout-s is shown as a timeout and the run goes on.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from harness.store.history import HISTORY_FILE, read_ops

KINDS = ("leader", "controller", "leader+controller")
TOPIC = "crash"
CPU_USAGE = (  # the container's cumulative CPU time in ns (cgroup v1, else v2)
    "cat /sys/fs/cgroup/cpuacct/cpuacct.usage 2>/dev/null"
    " || awk '/^usage_usec/ {print $2 * 1000}' /sys/fs/cgroup/cpu.stat"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--cycles", type=int, default=12, help="kill/restart cycles per run")
    parser.add_argument("--partitions", type=int, default=2)
    parser.add_argument("--producers", type=int, default=2, help="acks=all producer processes")
    parser.add_argument("--rate", type=float, default=100.0, help="sends/s per producer")
    parser.add_argument("--down-s", type=float, default=2.0, help="time a victim stays dead")
    parser.add_argument("--idle-s", type=float, default=5.0, help="idle CPU window per cycle")
    parser.add_argument("--recover-timeout-s", type=float, default=60.0)
    parser.add_argument("--out", type=Path, default=None,
                        help="keep each run's history.jsonl, container logs and data dirs "
                             "here (default: a temp dir, histories only)")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")


@dataclass
class Cycle:
    run: int
    cycle: int
    kind: str
    victims: list[str]
    releader_s: float | None = None  # None: not re-led within the timeout
    settled_s: float | None = None
    sigterm_node: str = ""
    sigterm_s: float | None = None
    sigterm_exit: int | None = None
    idle_cpu_pct: dict[str, float] = field(default_factory=dict)
    max_loop_lag_ms: dict[str, int] = field(default_factory=dict)


@dataclass
class RunResult:
    run: int
    run_id: str
    acked: int = 0
    read: int = 0
    lost: list[int] = field(default_factory=list)
    drain_failed: dict[str, str] = field(default_factory=dict)
    drained: bool = False  # False: nothing was read back, `lost` means nothing
    sends: dict[str, int] = field(default_factory=dict)
    cycles: list[Cycle] = field(default_factory=list)
    error: str | None = None


# ------------------------------------------------------------------ predicates on ClusterState


def all_led(state: Any) -> bool:
    """The controller answers, and every partition's leader is alive and says it leads at the
    committed epoch (not just named in metadata)."""
    if state.controller is None:
        return False
    for p in state.partitions.values():
        mine = p.replica_states.get(p.leader) if p.leader is not None else None
        if p.leader not in state.alive or mine is None:
            return False
        if mine.role != "leader" or mine.leader_epoch != p.leader_epoch:
            return False
    return True


# ------------------------------------------------------------------ the probe


def _cpu_ns(container: Any) -> int | None:
    try:
        code, out = container.exec_run(["sh", "-c", CPU_USAGE])
        return int(out.decode().split()[0]) if code == 0 else None
    except Exception:  # a container that is gone has no figure, it does not stop the bench
        return None


def _idle_cpu(cluster: Any, brokers: list[str], seconds: float) -> dict[str, float]:
    with ThreadPoolExecutor(len(brokers)) as pool:
        before = dict(zip(brokers, pool.map(lambda b: _cpu_ns(cluster.container(b)), brokers),
                          strict=True))
        t0 = time.monotonic()
        time.sleep(seconds)
        after = dict(zip(brokers, pool.map(lambda b: _cpu_ns(cluster.container(b)), brokers),
                         strict=True))
        wall = time.monotonic() - t0
    return {b: round((after[b] - before[b]) / 1e9 / wall * 100, 1)
            for b in brokers if before[b] is not None and after[b] is not None}


def _loop_lags(cluster: Any) -> dict[str, int]:
    from harness.state_poller import fetch_state

    out = {}
    for node, addr in cluster.admin_endpoints(refresh=True).items():
        st = fetch_state(addr, 2.0) if node.startswith("broker-") else None
        lag = (st or {}).get("event_loop_lag_ms") or {}
        if isinstance(lag.get("max"), int):
            out[node] = lag["max"]
    return out


def _timed_wait(poller: Any, pred: Any, timeout_s: float) -> float | None:
    t0 = time.monotonic()
    return None if poller.wait_for(pred, timeout_s) is None else round(time.monotonic() - t0, 1)


def _cycle(cluster: Any, poller: Any, args: argparse.Namespace, run: int, n: int,
           start_workload: Any) -> Cycle:
    from harness.cluster.topology import broker_name, controller_name
    from harness.state_poller import settled

    kind = KINDS[n % len(KINDS)]
    wl = start_workload()
    try:
        state = poller.wait_for(all_led, args.recover_timeout_s)
        if state is None:
            raise RuntimeError(f"cycle {n}: no partition leadership to start from")
        leader = state.partitions[f"{TOPIC}-0"].leader
        victims = ([controller_name(state.controller or 1)] if "controller" in kind else []) + (
            [broker_name(leader)] if "leader" in kind else [])
        c = Cycle(run, n, kind, victims)
        time.sleep(1.0)  # some acknowledged traffic before the crash
        for v in victims:
            cluster.kill(v)
        time.sleep(args.down_s)
        for v in victims:  # controller first: brokers register with it as they come back
            cluster.start(v)
        c.releader_s = _timed_wait(poller, all_led, args.recover_timeout_s)
        c.settled_s = _timed_wait(poller, settled, args.recover_timeout_s)
        # SIGTERM, under load, to a broker that leads nothing (a follower otherwise).
        led = {p.leader for p in (poller.latest() or state).partitions.values()}
        calm = [b for b in cluster.topology.broker_ids if b not in led] or [
            b for b in cluster.topology.broker_ids if b != leader]
        c.sigterm_node = broker_name(calm[0])
        t0 = time.monotonic()
        cluster.stop(c.sigterm_node, timeout_s=30)
        c.sigterm_s = round(time.monotonic() - t0, 1)
        container = cluster.container(c.sigterm_node)
        container.reload()
        c.sigterm_exit = container.attrs["State"].get("ExitCode")
        cluster.start(c.sigterm_node)
        poller.wait_for(settled, args.recover_timeout_s)
    finally:
        wl.stop(timeout_s=60)
    c.idle_cpu_pct = _idle_cpu(cluster, cluster.topology.broker_names, args.idle_s)
    c.max_loop_lag_ms = _loop_lags(cluster)
    return c


def _lost(history_path: Path) -> tuple[int, int, list[int], dict[str, int]]:
    """(acked, distinct values read, acked values never read, send completions by type)."""
    acked: set[int] = set()
    read: set[int] = set()
    sends: dict[str, int] = {}
    for op in read_ops(history_path):
        if op.get("f") == "send" and op.get("type") in ("ok", "fail", "info"):
            sends[op["type"]] = sends.get(op["type"], 0) + 1
            if op["type"] == "ok":
                acked.add(op["value"])
        elif op.get("f") == "poll" and op.get("type") == "ok" and op.get("final"):
            read.update(r["value"] for r in op.get("records") or ())
    return len(acked), len(read), sorted(acked - read), sends


def _one_run(args: argparse.Namespace, run: int, out_dir: Path) -> RunResult:
    from harness.client import ProcessIds, drain
    from harness.cluster.cluster import new_run_id
    from harness.plan.model import ClusterSpec, TopicSpec
    from harness.run.containers import create_topics
    from harness.run.observed import ObservedCluster
    from harness.state_poller import StatePoller, settled
    from harness.store.history import HistoryWriter
    from harness.workload import ProducerJob, Values, Workload, all_partitions

    spec = ClusterSpec(brokers=3, topics=(TopicSpec(TOPIC, args.partitions, 3, 2),))
    result = RunResult(run, new_run_id("hw-crash"))
    run_dir = out_dir / f"run-{run}"
    run_dir.mkdir(parents=True, exist_ok=True)
    history = HistoryWriter(run_dir / HISTORY_FILE)
    ids, values = ProcessIds(), Values()
    parts = tuple(all_partitions(spec))
    poller = None
    try:
        # With --out, the containers' logs and data dirs are kept next to the history.
        keep = run_dir if args.out is not None else None
        with ObservedCluster(result.run_id, brokers=3, controller=True,
                             store_dir=keep) as cluster:
            poller = StatePoller(lambda: cluster.admin_endpoints(refresh=True), spec).start()
            create_topics(cluster.bootstrap, spec.topics)
            if poller.wait_for(settled, args.recover_timeout_s) is None:
                raise RuntimeError("topic not led with a full ISR after creation")

            def start_workload() -> Any:
                jobs = [ProducerJob(slot=i, acks="all", rate=args.rate, partitions=parts,
                                    duration_s=3600) for i in range(args.producers)]
                wl = Workload(cluster.bootstrap, history, jobs, new_process=ids, values=values)
                wl.start()
                return wl

            try:
                for n in range(args.cycles):
                    c = _cycle(cluster, poller, args, run, n, start_workload)
                    result.cycles.append(c)
                    print(_row(c), flush=True)
            except Exception as exc:  # a cycle that broke: say so, still read everything back
                result.error = f"cycle {len(result.cycles)}: {type(exc).__name__}: {exc}"
                print(f"run {run}: {result.error}", flush=True)
            poller.wait_for(settled, args.recover_timeout_s)
            drained = drain(cluster.bootstrap, history, parts, ids, timeout_s=120)
            result.drain_failed = drained.failed
            result.drained = True
    except Exception as exc:  # one broken run is reported; the next run still goes
        result.error = f"{type(exc).__name__}: {exc}"
        print(f"run {run}: {result.error}", flush=True)
    finally:
        if poller is not None:
            poller.stop()
        history.close()
    result.acked, result.read, result.lost, result.sends = _lost(run_dir / HISTORY_FILE)
    return result


HEADER = (f"{'run':>3} {'cyc':>3} {'killed':<22} {'re-led s':>8} {'settled s':>9} "
          f"{'SIGTERM s':>9} {'exit':>4} {'idle CPU % (max b)':>18} {'max lag ms':>10}")


def _fmt(v: float | None, timeout: str = "timeout") -> str:
    return timeout if v is None else f"{v:g}"


def _row(c: Cycle) -> str:
    cpu = max(c.idle_cpu_pct.items(), key=lambda kv: kv[1], default=("-", 0.0))
    lag = max(c.max_loop_lag_ms.values(), default=-1)
    return (f"{c.run:>3} {c.cycle:>3} {'+'.join(c.victims):<22} {_fmt(c.releader_s):>8} "
            f"{_fmt(c.settled_s):>9} {_fmt(c.sigterm_s):>9} {c.sigterm_exit!s:>4} "
            f"{f'{cpu[1]:.1f} ({cpu[0]})':>18} {lag:>10}")


def summary(results: list[RunResult]) -> list[str]:
    cycles = [c for r in results for c in r.cycles]
    releds = [c.releader_s for c in cycles]
    done = [v for v in releds if v is not None]
    cpu = [v for c in cycles for v in c.idle_cpu_pct.values()]
    terms = [c.sigterm_s for c in cycles if c.sigterm_s is not None]
    lines = [f"run {r.run} ({r.run_id}): sends {r.sends}, acked {r.acked}, read back {r.read}, "
             f"acknowledged lost {len(r.lost) if r.drained else 'unknown (no read-back)'}"
             + (f" e.g. {r.lost[:10]}" if r.lost else "")
             + (f", drain failed {r.drain_failed}" if r.drain_failed else "")
             + (f", ERROR {r.error}" if r.error else "") for r in results]
    lines += [
        f"cycles: {len(cycles)}; acknowledged lost in total: "
        f"{sum(len(r.lost) for r in results if r.drained)}"
        f" (runs read back: {sum(r.drained for r in results)} of {len(results)})",
        f"re-led after restart: max {_fmt(max(done, default=None), '-')} s, median "
        f"{_fmt(statistics.median(done) if done else None, '-')} s, "
        f"not within timeout {sum(v is None for v in releds)}, "
        f"over 15 s {sum(v is None or v > 15 for v in releds)}",
        f"idle broker CPU: max {max(cpu, default=0):.1f} %, median "
        f"{statistics.median(cpu) if cpu else 0:.1f} % (each over the idle window)",
        f"SIGTERM (docker stop, under load): max {max(terms, default=0):g} s, "
        f"exit codes {sorted({c.sigterm_exit for c in cycles}, key=str)}",
    ]
    return lines


def run(args: argparse.Namespace) -> int:
    results: list[RunResult] = []
    with tempfile.TemporaryDirectory(prefix="hw-bench-crash-") as tmp:
        out_dir = args.out or Path(tmp)
        print(f"highwater bench crash: {args.runs} run(s) x {args.cycles} cycles, "
              f"{args.producers} acks=all producers at {args.rate:g}/s, histories in {out_dir}",
              flush=True)
        print(HEADER, flush=True)
        for r in range(1, args.runs + 1):
            results.append(_one_run(args, r, out_dir))
    print()
    for line in summary(results):
        print(line)
    if args.json:
        args.json.write_text(json.dumps([asdict(r) for r in results], indent=1))
    return 0
