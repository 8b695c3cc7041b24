"""`highwater bench controller-failover`: kill the active KRaft controller N times under acks=all
load, in containers (issue 13), and report each failover.

One container cluster (harness.run.observed.ObservedCluster: --controllers voters
`controller-1..C`, 3 brokers, every link through Toxiproxy, admin /state published directly),
topic `failover` (--partitions, RF=3, min.insync.replicas=2), --producers acks=all producers of
the harness (history.jsonl) running the whole time. Then --kills times:

1. wait until every controller answers and all name the same leader (the active controller);
2. SIGKILL (--signal TERM: SIGTERM) that controller's container; poll the surviving
   controllers' /state every POLL_S: `failover ms` is the time from the kill until one of
   them reports itself active (quorum.active) at a higher Raft epoch; `acked during` counts
   the acks=all sends acknowledged between the kill and that moment (the partition leaders
   kept serving);
3. --down-s later start it again (it rejoins as a follower), then wait (bounded) until every
   broker's and controller's metadata image agrees (harness.checker.metadata_check): `metadata
   divergence` is the number of nodes still differing after METADATA_WAIT_S.

With --fault partition step 2 cuts the active controller from the other voters instead (both
directions of every controller<->controller proxy, Toxiproxy timeout toxics; its links with the
brokers stay up) for --down-s: a survivor must become active at a higher epoch, and the old
leader's Raft high watermark, sampled every POLL_S while it is cut, must not move (it cannot
commit without a majority); then the links heal and it rejoins.

At the end the producers stop, the cluster settles and everything is read back with the
harness's drain; with --out the controllers' collected metadata logs are compared record by
record below the committed offset (harness.checker.metadata_log_check); `lost` = values acknowledged
that no final read returned, attributed to the
kill whose window (from its kill to the next one) they were sent in. Figures are printed and
written with --json, never asserted. The failover figure is compared with the quorum's timers:
a follower notices a dead leader after controller.quorum.fetch.timeout.ms without a successful
Fetch, then needs a pre-vote and a vote round trip (and, when votes split, a randomized
election timeout), so fetch timeout + election timeout is printed as the reference bound.

Which timer bounds a failover (Kafka's KafkaRaftClient, which ours follows):
- SIGKILL (a crash): nobody tells the followers. Each notices only when it has had no
  successful Fetch for controller.quorum.fetch.timeout.ms (Kafka's default 2000; a Fetch that
  fails on the dead connection is retried, it starts nothing), then a pre-vote and a vote round
  trip elect a new leader, active once its LeaderChange record is committed (one more Fetch
  round trip). So kill -> new active controller is at most fetch timeout + those round trips
  (+ a randomized election timeout when pre-votes or votes split), and at least fetch timeout
  - fetch_max_wait (the last Fetch answer came back up to 500 ms before the kill). The issue's
  "election timeout plus one round trip" holds for a crash only with --fetch-timeout-ms equal
  to the election timeout (controller.quorum.fetch.timeout.ms is a real Kafka config).
- SIGTERM (graceful, --signal TERM): the active controller resigns with EndQuorumEpoch naming
  its most caught-up follower, which stands at once (Kafka's strict exponential backoff for the
  others); no timer is waited on, so the new active controller comes within a few round trips.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from harness.cluster.topology import controller_index, controller_name
from harness.store.history import HISTORY_FILE, read_ops

TOPIC = "failover"
POLL_S = 0.05
STATE_TIMEOUT_S = 0.5
METADATA_WAIT_S = 30.0
FETCH_TIMEOUT_MS = 2000  # the controllers' defaults (broker_app/controller/main.py), Kafka's
ELECTION_TIMEOUT_MS = 1000


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--kills", type=int, default=10, help="active-controller faults")
    parser.add_argument("--fault", choices=("kill", "partition"), default="kill",
                        help="kill: SIGKILL the active controller; partition: cut it from the "
                             "other voters only (the brokers still reach it)")
    parser.add_argument("--signal", choices=("KILL", "TERM"), default="KILL",
                        help="--fault kill: SIGKILL (a crash, noticed by the fetch timeout) or "
                             "SIGTERM (graceful: the active controller resigns, EndQuorumEpoch)")
    parser.add_argument("--fetch-timeout-ms", type=int, default=FETCH_TIMEOUT_MS,
                        help="the controllers' controller.quorum.fetch.timeout.ms (Kafka's "
                             f"default {FETCH_TIMEOUT_MS})")
    parser.add_argument("--election-timeout-ms", type=int, default=ELECTION_TIMEOUT_MS,
                        help="the controllers' controller.quorum.election.timeout.ms (Kafka's "
                             f"default {ELECTION_TIMEOUT_MS})")
    parser.add_argument("--controllers", type=int, default=3, help="quorum size (voters)")
    parser.add_argument("--partitions", type=int, default=2)
    parser.add_argument("--producers", type=int, default=2, help="acks=all producer processes")
    parser.add_argument("--rate", type=float, default=50.0, help="sends/s per producer")
    parser.add_argument("--down-s", type=float, default=3.0,
                        help="how long the killed controller stays down (partition: cut)")
    parser.add_argument("--timeout-s", type=float, default=60.0,
                        help="bound on each wait (stable quorum, new active controller)")
    parser.add_argument("--out", type=Path, default=None,
                        help="keep history.jsonl, container logs and data dirs here")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")


@dataclass
class Kill:
    n: int
    victim: str
    old_epoch: int
    at_ns: int  # history time of the kill
    new_active: str | None = None
    new_epoch: int | None = None
    failover_ms: float | None = None  # None: no new active controller within the timeout
    acked_during: int = 0
    metadata_divergence: int | None = None
    metadata_examples: list[Any] = field(default_factory=list)
    lost: int = 0
    # --fault partition: the cut-off old leader's Raft high watermark when cut and the highest
    # it reported while cut (equal: it committed nothing), and whether it still said "active"
    # at the end of the cut (check quorum makes it resign after 1.5 x fetch timeout).
    old_hw_at_cut: int | None = None
    old_hw_max_cut: int | None = None
    old_active_at_heal: bool | None = None


@dataclass
class Result:
    run_id: str
    controllers: int
    fault: str = "kill"
    signal: str = "KILL"
    fetch_timeout_ms: int = FETCH_TIMEOUT_MS
    election_timeout_ms: int = ELECTION_TIMEOUT_MS
    kills: list[Kill] = field(default_factory=list)
    acked: int = 0
    read: int = 0
    lost: list[int] = field(default_factory=list)
    lost_before_first_kill: int = 0
    drained: bool = False
    drain_failed: dict[str, str] = field(default_factory=dict)
    final_metadata_divergence: int | None = None
    committed_log: dict[str, Any] | None = None  # with --out: harness.checker.metadata_log_check
    error: str | None = None


# ------------------------------------------------------------------ the quorum, from /state


def quorum_answers(cluster: Any, names: list[str]) -> dict[str, dict[str, Any]]:
    """controller name -> its /state "quorum", for the controllers that answered."""
    from harness.state_poller import fetch_state

    endpoints = cluster.admin_endpoints(refresh=True)
    out = {}
    for n in names:
        if n in endpoints:
            st = fetch_state(endpoints[n], STATE_TIMEOUT_S)
            if st is not None and isinstance(st.get("quorum"), dict):
                out[n] = st["quorum"]
    return out


def stable_leader(answers: dict[str, dict[str, Any]], names: list[str]) -> tuple[str, int] | None:
    """(active controller, epoch) when every controller answered, all name the same leader at
    the same epoch, and that leader says it is active."""
    if set(answers) != set(names):
        return None
    views = {(q.get("leader_id"), q.get("epoch")) for q in answers.values()}
    if len(views) != 1:
        return None
    leader, epoch = next(iter(views))
    c = controller_index(leader) if isinstance(leader, int) else None
    name = controller_name(c) if c is not None else ""
    if name not in answers or not answers[name].get("active"):
        return None
    return name, int(epoch)


def new_active(answers: dict[str, dict[str, Any]], old_epoch: int) -> tuple[str, int] | None:
    for n, q in sorted(answers.items()):
        if q.get("active") and int(q.get("epoch", -1)) > old_epoch:
            return n, int(q["epoch"])
    return None


def _wait(fn: Any, timeout_s: float, interval_s: float = POLL_S) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        v = fn()
        if v is not None:
            return v
        time.sleep(interval_s)
    return None


# ------------------------------------------------------------------ one kill


def _kill_once(cluster: Any, history: Any, args: argparse.Namespace, n: int) -> Kill:
    names = cluster.topology.controller_names
    leader = _wait(lambda: stable_leader(quorum_answers(cluster, names), names), args.timeout_s,
                   0.2)
    if leader is None:
        raise RuntimeError(f"kill {n}: no stable quorum within {args.timeout_s:g}s: "
                           f"{quorum_answers(cluster, names)}")
    victim, epoch = leader
    survivors = [c for c in names if c != victim]
    if args.fault == "partition":
        return _partition_once(cluster, history, args, n, victim, epoch, survivors)
    k = Kill(n, victim, epoch, time.monotonic_ns() - history.start_ns)
    t0 = time.monotonic()
    cluster.container(victim).kill(signal=f"SIG{args.signal}")
    found = _wait(lambda: new_active(quorum_answers(cluster, survivors), epoch), args.timeout_s)
    if found is not None:
        k.failover_ms = round((time.monotonic() - t0) * 1000)
        k.new_active, k.new_epoch = found
    cluster.container(victim).wait(timeout=30)
    time.sleep(max(0.0, args.down_s - (time.monotonic() - t0)))
    cluster.start(victim)
    _agree(cluster, k)
    return k


def _agree(cluster: Any, k: Kill) -> None:
    from harness.checker.metadata_check import wait_for_agreement

    metadata = wait_for_agreement(lambda: cluster.admin_endpoints(refresh=True), METADATA_WAIT_S)
    k.metadata_divergence = metadata["count"]
    k.metadata_examples = metadata["examples"]


def _partition_once(cluster: Any, history: Any, args: argparse.Namespace, n: int, victim: str,
                    epoch: int, survivors: list[str]) -> Kill:
    """Cut the active controller from the other voters (both directions, Toxiproxy timeout
    toxics), the brokers' links to it left alone; a survivor must become active, and the old
    leader's high watermark must not move while it is cut (it cannot commit)."""
    k = Kill(n, victim, epoch, time.monotonic_ns() - history.start_ns)
    before = quorum_answers(cluster, [victim]).get(victim) or {}
    k.old_hw_at_cut = before.get("high_watermark")
    t0 = time.monotonic()
    for other in survivors:
        cluster.net.partition(victim, other)
    hws: list[int] = []

    def look() -> tuple[str, int] | None:
        q = quorum_answers(cluster, [victim, *survivors])
        old = q.get(victim) or {}
        if isinstance(old.get("high_watermark"), int):
            hws.append(old["high_watermark"])
        return new_active({n: v for n, v in q.items() if n != victim}, epoch)

    found = _wait(look, args.timeout_s)
    if found is not None:
        k.failover_ms = round((time.monotonic() - t0) * 1000)
        k.new_active, k.new_epoch = found
    while time.monotonic() - t0 < args.down_s:
        look()
        time.sleep(POLL_S)
    k.old_hw_max_cut = max(hws, default=None)
    k.old_active_at_heal = bool((quorum_answers(cluster, [victim]).get(victim) or {})
                                .get("active"))
    for other in survivors:
        cluster.net.heal(victim, other)
    _agree(cluster, k)
    return k


# ------------------------------------------------------------------ reading the history


def attribute(history_path: Path, kills: list[Kill]) -> tuple[int, int, list[int], int]:
    """(acked, read back, lost values, lost before the first kill); fills each kill's `lost`
    (sent in its window) and `acked_during` (acknowledged between its kill and the new
    active controller)."""
    sent_at: dict[int, int] = {}
    acked: set[int] = set()
    read: set[int] = set()
    for op in read_ops(history_path):
        if op.get("f") == "send":
            if op.get("type") == "invoke":
                sent_at[op["value"]] = op["time"]
            elif op.get("type") == "ok":
                acked.add(op["value"])
                for k in kills:
                    end = k.at_ns + int((k.failover_ms or 0) * 1e6)
                    if k.failover_ms is not None and k.at_ns <= op["time"] <= end:
                        k.acked_during += 1
        elif op.get("f") == "poll" and op.get("type") == "ok" and op.get("final"):
            read.update(r["value"] for r in op.get("records") or ())
    lost = sorted(acked - read)
    before = 0
    for v in lost:
        t = sent_at.get(v, -1)
        window = [k for k in kills if k.at_ns <= t]
        if window:
            window[-1].lost += 1
        else:
            before += 1
    return len(acked), len(read), lost, before


# ------------------------------------------------------------------ the run


def _run(args: argparse.Namespace, out_dir: Path) -> Result:
    from harness.checker.metadata_check import wait_for_agreement
    from harness.checker.metadata_log_check import check_collected, wait_for_caught_up
    from harness.client import ProcessIds, drain
    from harness.cluster.cluster import new_run_id
    from harness.plan.model import ClusterSpec, TopicSpec
    from harness.run.containers import create_topics
    from harness.run.observed import ObservedCluster
    from harness.state_poller import StatePoller, settled
    from harness.store.history import HistoryWriter
    from harness.workload import ProducerJob, Values, Workload, all_partitions

    spec = ClusterSpec(brokers=3, controllers=args.controllers,
                       topics=(TopicSpec(TOPIC, args.partitions, 3, 2),))
    result = Result(new_run_id("hw-ctlfail"), args.controllers, args.fault, args.signal,
                    args.fetch_timeout_ms, args.election_timeout_ms)
    history = HistoryWriter(out_dir / HISTORY_FILE)
    ids, values = ProcessIds(), Values()
    parts = tuple(all_partitions(spec))
    poller = None
    try:
        keep = out_dir if args.out is not None else None
        with ObservedCluster(result.run_id, brokers=3, controllers=args.controllers,
                             store_dir=keep, controller_args=controller_args(args)) as cluster:
            poller = StatePoller(lambda: cluster.admin_endpoints(refresh=True), spec).start()
            create_topics(cluster.bootstrap, spec.topics)
            if poller.wait_for(settled, args.timeout_s) is None:
                raise RuntimeError("topic not led with a full ISR after creation")
            jobs = [ProducerJob(slot=i, acks="all", rate=args.rate, partitions=parts,
                                duration_s=24 * 3600) for i in range(args.producers)]
            wl = Workload(cluster.bootstrap, history, jobs, new_process=ids, values=values)
            wl.start()
            try:
                time.sleep(2.0)  # acknowledged traffic before the first kill
                for n in range(1, args.kills + 1):
                    k = _kill_once(cluster, history, args, n)
                    result.kills.append(k)
                    print(_row(k), flush=True)
            except Exception as exc:  # say so, still read everything back
                result.error = f"{type(exc).__name__}: {exc}"
                print(f"ERROR: {result.error}", flush=True)
            finally:
                wl.stop(timeout_s=60)
            poller.wait_for(settled, args.timeout_s)
            drained = drain(cluster.bootstrap, history, parts, ids, timeout_s=120)
            result.drain_failed = drained.failed
            result.drained = True
            final = wait_for_agreement(lambda: cluster.admin_endpoints(refresh=True),
                                       METADATA_WAIT_S)
            result.final_metadata_divergence = final["count"]
            names = cluster.topology.controller_names
            committed = wait_for_caught_up(
                {n: a for n, a in cluster.admin_endpoints(refresh=True).items() if n in names},
                METADATA_WAIT_S)
        if keep is not None:  # the data dirs were collected: compare the committed logs
            result.committed_log = check_collected(keep / "data", names, committed)
    except Exception as exc:
        result.error = result.error or f"{type(exc).__name__}: {exc}"
        print(f"ERROR: {result.error}", flush=True)
    finally:
        if poller is not None:
            poller.stop()
        history.close()
    (result.acked, result.read, result.lost,
     result.lost_before_first_kill) = attribute(out_dir / HISTORY_FILE, result.kills)
    return result


HEADER = (f"{'kill':>4} {'victim':<13} {'epoch':>5} {'new active':<13} {'epoch':>5} "
          f"{'failover ms':>11} {'metadata divergence':>19}")
FINAL_HEADER = HEADER + f" {'acked during':>12} {'lost':>4}"


def _row(k: Kill, final: bool = False) -> str:
    """One kill; `final` adds what only the read-back tells (acked during, lost)."""
    fo = "timeout" if k.failover_ms is None else f"{k.failover_ms:g}"
    row = (f"{k.n:>4} {k.victim:<13} {k.old_epoch:>5} {k.new_active or '-':<13} "
           f"{k.new_epoch if k.new_epoch is not None else '-':>5} {fo:>11} "
           f"{k.metadata_divergence!s:>19}")
    return row + (f" {k.acked_during:>12} {k.lost:>4}" if final else "")


def controller_args(args: argparse.Namespace) -> list[str]:
    """The quorum timers for every controller (Kafka's config names, broker_app/controller)."""
    return ["--controller-quorum-fetch-timeout-ms", str(args.fetch_timeout_ms),
            "--controller-quorum-election-timeout-ms", str(args.election_timeout_ms)]


def reference_bound_ms(r: Result) -> tuple[int, str]:
    """What a failover should stay under, and why (module docstring): a crash is noticed after
    the fetch timeout, a graceful resign at once; then an election (a randomized election
    timeout if it splits)."""
    if r.fault == "kill" and r.signal == "TERM":
        return r.election_timeout_ms, "election timeout (graceful: EndQuorumEpoch, no detection)"
    return (r.fetch_timeout_ms + r.election_timeout_ms,
            "fetch timeout (detection) + election timeout")


def summary(r: Result) -> list[str]:
    done = [k.failover_ms for k in r.kills if k.failover_ms is not None]
    bound, why = reference_bound_ms(r)
    what = "partition" if r.fault == "partition" else f"SIG{r.signal}"
    lines = [
        f"run {r.run_id}: {r.controllers} controllers, {len(r.kills)} x {what} of the active "
        f"controller, fetch timeout {r.fetch_timeout_ms} ms, election timeout "
        f"{r.election_timeout_ms} ms" + (f", ERROR {r.error}" if r.error else ""),
        "failover (fault -> a survivor active at a higher epoch): "
        + (f"min {min(done):g} ms, median {statistics.median(done):g} ms, max {max(done):g} ms"
           if done else "none")
        + f"; per fault: {[k.failover_ms for k in r.kills]}; not within the timeout: "
        f"{sum(k.failover_ms is None for k in r.kills)}; over {why} "
        f"({bound} ms): {sum(k.failover_ms is None or k.failover_ms > bound for k in r.kills)}",
        f"per kill, lost (acknowledged, sent in its window, never read back): "
        f"{[k.lost for k in r.kills]}",
        f"acknowledged {r.acked}, read back {r.read}, acknowledged lost "
        + (f"{len(r.lost)}" if r.drained else "unknown (no read-back)")
        + (f" e.g. {r.lost[:10]}" if r.lost else "")
        + (f", drain failed {r.drain_failed}" if r.drain_failed else ""),
        f"metadata divergence after each kill: {[k.metadata_divergence for k in r.kills]}; "
        f"at the end: {r.final_metadata_divergence}; committed metadata logs: "
        + (f"{r.committed_log['count']} record(s) missing or different below offset "
           f"{r.committed_log['committed']}, unreadable {r.committed_log['unreadable'] or 'none'}"
           if r.committed_log is not None else "not compared (needs --out)"),
    ]
    cut = [k for k in r.kills if k.old_hw_at_cut is not None]
    if cut:
        lines.append(
            "partition: the cut-off old leader's high watermark at the cut -> highest while "
            f"cut: {[(k.old_hw_at_cut, k.old_hw_max_cut) for k in cut]}; it committed "
            f"something while cut in {sum((k.old_hw_max_cut or 0) > k.old_hw_at_cut for k in cut)}"
            f" of {len(cut)}; still claiming active at the heal: "
            f"{sum(bool(k.old_active_at_heal) for k in cut)}")
    return lines


def run(args: argparse.Namespace) -> int:
    if not 1 <= args.controllers <= 9:
        print("highwater bench controller-failover: --controllers must be 1..9")
        return 2
    if args.fetch_timeout_ms <= 0 or args.election_timeout_ms <= 0:
        print("highwater bench controller-failover: --fetch-timeout-ms and "
              "--election-timeout-ms must be > 0")
        return 2
    if args.signal == "TERM" and args.fault != "kill":
        print("highwater bench controller-failover: --signal applies to --fault kill only")
        return 2
    with tempfile.TemporaryDirectory(prefix="hw-bench-ctlfail-") as tmp:
        out_dir = args.out or Path(tmp)
        out_dir.mkdir(parents=True, exist_ok=True)
        what = f"SIG{args.signal}" if args.fault == "kill" else args.fault
        print(f"highwater bench controller-failover: {args.kills} x {what} of the active "
              f"controller (fetch timeout {args.fetch_timeout_ms} ms, election timeout "
              f"{args.election_timeout_ms} ms) "
              f"of {args.controllers}, {args.producers} acks=all producers at {args.rate:g}/s, "
              f"history in {out_dir}", flush=True)
        print(HEADER, flush=True)
        result = _run(args, out_dir)
    print()
    print(FINAL_HEADER)
    for k in result.kills:
        print(_row(k, final=True))
    for line in summary(result):
        print(line)
    if args.json:
        args.json.write_text(json.dumps(asdict(result), indent=1))
    return 0
