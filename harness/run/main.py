"""`highwater run PLAN.yaml`: cluster up, workload + nemesis, heal, settle, drain, check, report.

Contract:
- `highwater run PLAN.yaml [--seed N] [--duration S] [--set key=value ...] [--store DIR]` or
  `highwater run --replay store/<plan>/<ts>/` (same plan file, overrides, seed and duration as
  recorded in that run's run.json).
- A plan that does not load fails with one `file:line: field: problem` line and exit 2 before
  anything is created (no run dir, no container). So does an action the cluster cannot do.
- Otherwise: store/<plan>/<timestamp>/ with plan.yaml (the plan as run) and run.json (seed,
  plan source, overrides, duration, argv, then outcome); an ObservedCluster (brokers, controller,
  Toxiproxy on every link; switches as broker flags; disk faults when a step needs them) and a
  StatePoller writing states.jsonl; then the run's phases, the same for the simulator
  (harness/run/pipeline.py, on harness/run/containers.py's runtime): topics created with RF,
  min.insync.replicas and configs; the plan's workload (real confluent-kafka clients through
  the proxies) and the Nemesis from workload start; when both are done: heal everything, wait
  (settle.timeout_s at most) for every partition to converge (a live leader, a full ISR, every
  replica caught up: harness.checker.convergence; run.json `unconverged_replicas`,
  results.json's run check `unconverged-replicas`), drain (final reads); then compare every
  node's metadata
  image (harness.checker.metadata_check, bounded wait for agreement; run.json
  `metadata_divergence`),
  Cluster down (which collects logs/ and data/), then check_runs (PySpark) -> results.json
  (plus the run checks: `metadata-divergence` and `unconverged-replicas` from run.json,
  `diverged-offsets` from the collected data dirs; each fails the run unless the plan's
  `expected` names it) and write_report -> report.html.
- Exit 0: verdict as-expected; 1: unexpected; 2: the run could not be carried out (plan error,
  docker/cluster error, a `when` step with on_timeout fail timed out, the checker failed); the
  reason is printed and stored in run.json `reason`. Ctrl-C: threads stop, the cluster is removed.
"""

from __future__ import annotations

import argparse
import logging
import random
import sys
import time
from pathlib import Path
from typing import Any

from harness.run.pipeline import RunAborted

EXIT_OK, EXIT_UNEXPECTED, EXIT_NOT_CARRIED_OUT = 0, 1, 2
CLIENTS_LOG = "logs/clients.log"  # librdkafka's log lines of the run's clients
# After the drain, how long the brokers' and controllers' metadata images may take to agree.
METADATA_AGREEMENT_TIMEOUT_S = 30.0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("plan", nargs="?", help="the fault plan (chaos_plans/*.yaml)")
    parser.add_argument("--seed", type=int, default=None,
                        help="seed for random targets and the random nemesis (default: the "
                             "plan's nemesis.seed, else drawn and reported)")
    parser.add_argument("--duration", type=float, default=None,
                        help="seconds of workload (overrides the producers' values/duration_s)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="override a plan value, e.g. workload.producers.acks=all")
    parser.add_argument("--store", default="store", help="store root (default: ./store)")
    parser.add_argument("--replay", default=None, metavar="RUN_DIR",
                        help="rerun a stored run: same plan file, overrides, seed, duration")
    parser.add_argument("--run-id", default=None,
                        help="docker label highwater.run of the cluster (default: generated)")
    parser.add_argument("--no-check", action="store_true",
                        help="skip the checker and report (debugging the cluster)")


def _resolve_inputs(args: argparse.Namespace) -> tuple[str, dict[str, str], int | None,
                                                         float | None]:
    """(plan path, overrides, seed, duration) from the arguments or the replayed run."""
    from harness.plan.loader import parse_overrides

    if args.replay:
        from harness.store import StoreError
        from harness.store.meta import META_FILE, read_meta

        meta_path = Path(args.replay) / META_FILE
        if not meta_path.is_file():
            raise RunAborted(f"--replay {args.replay}: cannot read {meta_path}: no such file")
        try:
            meta = read_meta(args.replay)
        except StoreError as exc:
            raise RunAborted(f"--replay {args.replay}: {exc}") from exc
        if "plan_source" not in meta:
            raise RunAborted(f"--replay: {meta_path} has no plan_source")
        seed = args.seed if args.seed is not None else meta.get("seed")
        duration = args.duration if args.duration is not None else meta.get("duration_s")
        overrides = {**meta.get("overrides", {}), **parse_overrides(args.set)}
        return meta["plan_source"], overrides, seed, duration
    if not args.plan:
        raise RunAborted("give a PLAN.yaml (or --replay RUN_DIR)")
    return args.plan, parse_overrides(args.set), args.seed, args.duration


def run(args: argparse.Namespace) -> int:
    from harness.nemesis import NemesisError, check_supported
    from harness.plan.errors import PlanError
    from harness.plan.loader import load_plan
    from harness.plan.timing import steps_for

    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:
        source, overrides, seed, duration = _resolve_inputs(args)
        plan = load_plan(source, overrides)
        if seed is None:
            seed = plan.nemesis.seed if plan.nemesis.seed is not None else random.randrange(2**31)
        steps = steps_for(plan, seed=seed, duration_s=duration)
        check_supported(steps)
        if args.run_id:
            from harness.cluster.topology import check_run_id

            check_run_id(args.run_id)
    except (PlanError, NemesisError, RunAborted, ValueError) as exc:
        print(f"highwater run: {exc}", file=sys.stderr)
        return EXIT_NOT_CARRIED_OUT
    return Runner(plan, steps, seed, duration, source, overrides, Path(args.store),
                  check=not args.no_check, run_id=args.run_id).execute()


class Runner:
    """One run of one plan; `execute()` returns the exit code."""

    def __init__(self, plan: Any, steps: Any, seed: int, duration: float | None, source: str,
                 overrides: dict[str, str], store_root: Path, check: bool = True,
                 run_id: str | None = None) -> None:
        self.plan = plan
        self.steps = steps
        self.seed = seed
        self.duration = duration
        self.source = source
        self.overrides = overrides
        self.store_root = store_root
        self.check = check
        self.given_run_id = run_id

    def execute(self) -> int:
        from harness.cluster.cluster import new_run_id
        from harness.plan.serialize import plan_to_data
        from harness.store import Store

        store = Store(self.store_root)
        self.run_dir = store.create_run(self.plan.name, plan_to_data(self.plan))
        self.run_id = self.given_run_id or new_run_id("hw")
        self.run_dir.write_meta(
            seed=self.seed, plan_source=str(Path(self.source).resolve()),
            overrides=self.overrides, duration_s=self.duration, argv=sys.argv,
            run_id=self.run_id, started=time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            steps=[s.name for s in self.steps],
            kafka_version=self.plan.cluster.emulated_version(),
            version_switches=self.plan.cluster.version_switches(),
        )
        print(f"highwater run: plan {self.plan.name}, seed {self.seed}, "
              f"run dir {self.run_dir.path}")
        for note in self.plan.notes:
            print(f"highwater run: note: {note}")
        sw = self.plan.cluster.version_switches()
        print(f"highwater run: emulating Kafka {self.plan.cluster.emulated_version()} ("
              + ", ".join(f"{k} {v}" for k, v in sw.items()) + ")")
        try:
            self._carry_out()
        except RunAborted as exc:
            return self._abort(str(exc))
        except KeyboardInterrupt:
            self._abort("interrupted (Ctrl-C)")
            raise
        except Exception as exc:  # docker, cluster, clients: the run could not be carried out
            logging.getLogger(__name__).debug("run failed", exc_info=True)
            return self._abort(f"{type(exc).__name__}: {exc}")
        if not self.check:
            self.run_dir.write_meta(exit_code=EXIT_OK, reason="checker skipped (--no-check)")
            return EXIT_OK
        return self._check_and_report()

    def _abort(self, reason: str) -> int:
        print(f"highwater run: could not be carried out: {reason}", file=sys.stderr)
        self.run_dir.write_meta(exit_code=EXIT_NOT_CARRIED_OUT, reason=reason)
        return EXIT_NOT_CARRIED_OUT

    # ------------------------------------------------------------------ the run proper

    def _needs_disk(self) -> bool:
        from harness.plan.actions import ACTIONS

        return any((s.action in ACTIONS and ACTIONS[s.action].kind == "disk")
                   or s.params.get("lose_unsynced") for s in self.steps)

    def _carry_out(self) -> None:
        from harness.checker.exits import exits_result
        from harness.checker.metadata_check import wait_for_agreement, with_log_check
        from harness.checker.metadata_log_check import check_collected, wait_for_caught_up
        from harness.client import LIBRDKAFKA_LOG
        from harness.plan.flags import process_flags
        from harness.run.containers import ContainerRuntime
        from harness.run.observed import ObservedCluster
        from harness.run.pipeline import carry_out
        from harness.state_poller import StatePoller
        from harness.store.quorum import QUORUM_FILE, QuorumWriter
        from harness.store.states import StatesWriter

        plan = self.plan
        history = self.run_dir.history_writer()
        # The clients' librdkafka log lines go to the run dir, not the console's progress.
        (self.run_dir.path / CLIENTS_LOG).parent.mkdir(parents=True, exist_ok=True)
        clients_log = logging.FileHandler(self.run_dir.path / CLIENTS_LOG, encoding="utf-8")
        clients_log.setFormatter(logging.Formatter("%(asctime)s %(message)s"))
        LIBRDKAFKA_LOG.addHandler(clients_log)
        # One clock for history.jsonl and states.jsonl (the report overlays them).
        states = StatesWriter(self.run_dir.states_path, start_ns=history.start_ns)
        quorum = QuorumWriter(self.run_dir.path / QUORUM_FILE, start_ns=history.start_ns)
        rt: ContainerRuntime | None = None
        try:
            broker_args, controller_args = process_flags(plan.cluster)
            cluster = ObservedCluster(
                self.run_id, brokers=plan.cluster.brokers, controllers=plan.cluster.controllers,
                store_dir=self.run_dir.path, broker_args=broker_args,
                disk_faults=self._needs_disk(), controller_args=controller_args,
            )
            print(f"highwater run: starting cluster {self.run_id} "
                  f"({plan.cluster.brokers} brokers, {plan.cluster.controllers} controller(s), "
                  "toxiproxy)")
            with cluster:
                rt = ContainerRuntime(plan, cluster, history, self.run_dir, self.duration)
                rt.poller = StatePoller(lambda: cluster.admin_endpoints(refresh=True),
                                        plan.cluster, states, elapsed=rt.elapsed, quorum=quorum)
                rt.poller.start()
                # The phases, as the simulator runs them (harness/run/pipeline.py).
                say = rt.say
                carried = carry_out(plan, self.steps, self.seed, rt, on_event=lambda ev: say(
                    f"fault {ev.kind}: {ev.step}: {ev.text}"))
                wl, nemesis, result = carried.workload, carried.nemesis, carried.drain
                # Issue 13: every node's metadata image must agree once the faults healed.
                metadata = wait_for_agreement(lambda: cluster.admin_endpoints(refresh=True),
                                              METADATA_AGREEMENT_TIMEOUT_S)
                if metadata["count"]:
                    print(f"highwater run: metadata images differ: {metadata['examples']}")
                controllers = cluster.topology.controller_names
                committed = wait_for_caught_up(
                    {n: a for n, a in cluster.admin_endpoints(refresh=True).items()
                     if n in controllers}, METADATA_AGREEMENT_TIMEOUT_S)
                self.run_dir.write_meta(
                    metadata_divergence=metadata, unconverged_replicas=carried.convergence,
                    unexpected_exits=exits_result(cluster.unexpected_exits),
                    settled=carried.settled, drained=result.drained,
                    drain_failed=result.failed, workload_errors=wl.errors,
                    workload_stats=dict(wl.stats), faults_started=nemesis.faults_started,
                    nemesis_events=[ev.__dict__ for ev in nemesis.events],
                    polls=rt.poller.polls,
                )
                print("highwater run: collecting logs and data, removing the cluster")
            # The controllers' committed logs, record by record, from the collected data dirs.
            logs = check_collected(self.run_dir.path / "data", controllers, committed)
            if logs["count"]:
                print(f"highwater run: committed metadata logs differ: {logs['examples']}")
            self.run_dir.write_meta(metadata_divergence=with_log_check(metadata, logs))
        finally:
            if rt is not None:
                rt.close()
            history.close()
            states.close()
            quorum.close()
            LIBRDKAFKA_LOG.removeHandler(clients_log)
            clients_log.close()

    # ------------------------------------------------------------------ check and report

    def _check_and_report(self) -> int:
        from harness.checker.check import check_runs
        from harness.report import write_report

        print("highwater run: checking the history (PySpark)")
        # The in-memory plan's expectations, as loaded (plan.yaml is the record, not the input).
        [res] = check_runs([self.run_dir.path], expectations=list(self.plan.expected.values()))
        if res.error is not None or res.results is None:
            return self._abort(f"checker: {res.error}")
        # check_runs carried run.json's metadata check into results.json and the verdict.
        metadata = res.results.get("metadata-divergence")
        if metadata is not None:
            print(f"highwater run: metadata-divergence {metadata['count']} "
                  f"(nodes not compared: {metadata.get('unknown') or 'none'})")
        report = write_report(self.run_dir.path)
        verdict = res.verdict  # the history's verdict and the metadata check
        counts = {k: v["count"] for k, v in res.results["anomalies"].items() if v["count"]}
        code = EXIT_OK if verdict == "as-expected" else EXIT_UNEXPECTED
        self.run_dir.write_meta(exit_code=code, verdict=verdict)
        s = res.results["stats"]
        print(f"highwater run: acked {s['acked']} failed {s['failed']} info {s['info']}, "
              f"anomalies {counts or 'none'}, lost by acks {s['lost_by_acks']}")
        print(f"highwater run: verdict {verdict} (valid={res.results['valid']})")
        print(f"highwater run: report {report}")
        return code
