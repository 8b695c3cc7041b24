"""`highwater scenario`: the documented loss scenarios and the min.insync.replicas matrix.

    highwater scenario list                       id, title, loss-catalog entries, modes
    highwater scenario run L1 --mode legacy [--repeat N] [--store DIR] [--set k=v ...] [--run-id ID]
    highwater scenario run path/to/my-plan.yaml --mode fixed     (a plan of yours with modes:)
    highwater scenario run L1 --mode legacy --sim    (on the simulator: seconds, no containers)
    highwater scenario min-isr [--store DIR] [--run-id ID]

`run` loads the scenario's plan with the mode's overrides (recorded as the run's --set values,
so `highwater run --replay` repeats the mode), runs it N times through `highwater run`'s Runner,
prints each run's story (fault timeline, lost / divergent messages with offsets; also written
to the run dir as story.txt, beside report.html) and the rate:
the fraction of runs that showed what the mode expects (legacy: the loss or divergence; fixed:
nothing lost). It writes <store>/scenarios/<id>-<mode>-<ts>.json with every run's outcome.
With --sim each run goes through the same pipeline on the simulator (harness/run/pipeline.py,
harness/run/simulated.py), its run dir under <store>/sim/ (history, results.json, story.txt; no
report.html), judged the same way; a step the simulator cannot carry out is refused first.
Exit 0 when every run reproduced its mode, 1 when some did not, 2 on a bad scenario or mode.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="scenario_command", metavar="ACTION", required=True)
    sub.add_parser("list", help="the scenarios: id, title, loss-catalog entries, modes")
    r = sub.add_parser("run", help="run one scenario in one mode, N times; print the rate")
    r.add_argument("id", help="scenario id, e.g. L1, or the path of your own plan with modes:")
    r.add_argument("--mode", required=True, help="legacy, fixed (or another mode of the plan)")
    r.add_argument("--repeat", type=int, default=1, help="how many runs (default 1)")
    r.add_argument("--store", default="store", help="store root (default: ./store)")
    r.add_argument("--seed", type=int, default=None, help="seed of the first run (+i after)")
    r.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="extra plan override after the mode's")
    r.add_argument("--quiet", action="store_true", help="no per-run story")
    r.add_argument("--run-id", default=None,
                   help="docker run id of the cluster (ID-<n> for run n when --repeat > 1)")
    r.add_argument("--sim", action="store_true",
                   help="on the deterministic simulator instead of containers (the same run "
                        "pipeline; runs under <store>/sim/)")
    m = sub.add_parser("min-isr", help="RF=3 min.insync.replicas x acks matrix, table + HTML")
    m.add_argument("--store", default="store", help="store root (default: ./store)")
    m.add_argument("--min-isr", type=int, action="append", default=None, choices=(1, 2, 3),
                   help="only these min.insync.replicas values (default 1, 2, 3)")
    m.add_argument("--run-id", default=None,
                   help="docker run id: the cluster for min.insync=M is ID-m<M> (Kafka 4.1) or "
                        "ID-m<M>-k<V> (ID for one cell)")
    m.add_argument("--kafka-version", action="append", default=None, metavar="V",
                   help="emulated Kafka versions, repeatable (default 3.9 and 4.1)")


def run(args: argparse.Namespace) -> int:
    from harness.scenario.catalog import ScenarioError

    try:
        if args.scenario_command == "list":
            return _list()
        if args.scenario_command == "run":
            return _run(args)
        from broker_app.kafka_versions import KNOWN_VERSIONS
        from harness.scenario.min_isr import DEFAULT_VERSIONS, run_matrix, run_suffix

        values = args.min_isr or [1, 2, 3]
        versions = list(dict.fromkeys(args.kafka_version or DEFAULT_VERSIONS))
        bad = [v for v in versions if v not in KNOWN_VERSIONS]
        if bad:
            raise ScenarioError(f"--kafka-version: unknown Kafka version {bad[0]!r} "
                                f"(known: {', '.join(KNOWN_VERSIONS)})")
        suffixes = [run_suffix(m, v) for v in versions for m in values]
        return run_matrix(Path(args.store), values, run_ids(args.run_id, suffixes), versions)
    except ScenarioError as e:
        print(f"highwater scenario: {e}", file=sys.stderr)
        return 2


def _simulate(plan: Any, steps: Any, seed: int, store: Path) -> tuple[int, Any]:
    """One run of the scenario on the simulator, under <store>/sim/<plan>/<timestamp>/:
    (exit code as `highwater run` gives it, the run dir)."""
    from harness.plan.serialize import plan_to_data
    from harness.run.main import EXIT_NOT_CARRIED_OUT, EXIT_OK
    from harness.run.simulated import SimAborted, simulate
    from harness.store import Store

    run_dir = Store(store / "sim").create_run(plan.name, plan_to_data(plan))
    run_dir.write_meta(seed=seed, simulated=True, kafka_version=plan.cluster.emulated_version())
    try:
        r = simulate(plan, steps, seed, run_dir.path)
    except SimAborted as e:
        print(f"could not be carried out: {e}", file=sys.stderr)
        run_dir.write_meta(exit_code=EXIT_NOT_CARRIED_OUT, reason=str(e))
        return EXIT_NOT_CARRIED_OUT, run_dir
    code = EXIT_OK if r.verdict == "as-expected" else 1
    run_dir.write_meta(exit_code=code, verdict=r.verdict, virtual_ms=r.virtual_ms)
    return code, run_dir


def run_ids(given: str | None, suffixes: list[str]) -> list[str | None]:
    """One docker run id per run (None: the runner picks a fresh one). A single run takes the
    given id as it is; several take ID-<suffix>, so a caller tracking ID finds them all."""
    from harness.cluster.topology import TopologyError, check_run_id
    from harness.scenario.catalog import ScenarioError

    if given is None:
        return [None] * len(suffixes)
    ids = [given] if len(suffixes) == 1 else [f"{given}-{s}" for s in suffixes]
    try:
        return [check_run_id(i) for i in ids]
    except TopologyError as e:
        raise ScenarioError(f"--run-id: {e}") from e


def _list() -> int:
    from harness.scenario.catalog import scenarios

    for s in scenarios():
        modes = ", ".join(f"{m} (Kafka {s.load(m).cluster.emulated_version()})" for m in s.modes)
        catalog = f"  [catalog {', '.join(map(str, s.plan.catalog))}]" if s.plan.catalog else ""
        print(f"{s.id:<4} {s.title}{catalog}  [modes: {modes}]")
    print("min-isr  RF=3 min.insync.replicas {1,2,3} x acks {0,1,all} matrix  "
          "[highwater scenario min-isr]")
    return 0


def _run(args: argparse.Namespace) -> int:
    import random
    import time

    from harness.nemesis import NemesisError, check_supported
    from harness.plan.errors import PlanError
    from harness.plan.loader import parse_overrides
    from harness.plan.timing import steps_for
    from harness.run.main import EXIT_NOT_CARRIED_OUT, Runner
    from harness.scenario.catalog import ScenarioError, find
    from harness.scenario.outcome import judge, story
    from harness.store import RunDir, timestamp

    if args.repeat < 1:
        raise ScenarioError(f"--repeat must be >= 1, got {args.repeat}")
    sc = find(args.id)
    if args.mode not in sc.modes:
        raise ScenarioError(f"{sc.id} has no mode {args.mode!r} (modes: {', '.join(sc.modes)})")
    try:
        overrides = {**sc.overrides(args.mode), **parse_overrides(args.set)}
        plan = sc.load(args.mode, parse_overrides(args.set))
    except PlanError as e:
        raise ScenarioError(str(e)) from e
    mode = plan.modes[args.mode]
    store = Path(args.store)
    print(f"scenario {sc.id} ({sc.title}), mode {args.mode}: {mode.description}")
    version = plan.cluster.emulated_version()
    print(f"emulating Kafka {version}: " + ", ".join(
        f"{k} {v}" for k, v in plan.cluster.version_switches().items()))
    for note in plan.notes:
        print(f"note: {note}")
    outcomes = []
    first_seed = args.seed if args.seed is not None else random.randrange(2**31)
    ids = run_ids(args.run_id, [str(i + 1) for i in range(args.repeat)])
    for i in range(args.repeat):
        seed = first_seed + i
        try:
            steps = steps_for(plan, seed=seed, duration_s=None)
            if args.sim:
                from harness.run.simulated import check_simulable

                check_simulable(plan, steps)
            else:
                check_supported(steps)
        except (PlanError, NemesisError, ValueError) as e:
            raise ScenarioError(str(e)) from e
        where = "simulated" if args.sim else "containers"
        print(f"--- {sc.id} {args.mode} run {i + 1}/{args.repeat} (seed {seed}, {where})")
        if args.sim:
            code, run_dir = _simulate(plan, steps, seed, store)
        else:
            runner = Runner(plan, steps, seed, None, str(sc.path), overrides, store,
                            run_id=ids[i])
            code = runner.execute()
            run_dir = RunDir(runner.run_dir.path)
        results = run_dir.results() if code != EXIT_NOT_CARRIED_OUT else None
        out = judge(mode, results, run_dir.path)
        outcomes.append({"run": str(run_dir.path), "seed": seed, "exit_code": code,
                         "reproduced": out.reproduced, "carried_out": out.carried_out,
                         "anomalies": out.counts, "lost_by_acks": out.lost_by_acks,
                         "why": out.why, "simulated": bool(args.sim)})
        text = story(run_dir.path)
        if run_dir.path.is_dir():  # beside report.html: the same story, kept with the run
            (run_dir.path / "story.txt").write_text(text + "\n", encoding="utf-8")
        if not args.quiet:
            print(text)
        kept = run_dir.path if args.sim else run_dir.path / "report.html"
        print(f"run {i + 1}: {'REPRODUCED' if out.reproduced else 'NOT reproduced'}: {out.why}; "
              f"anomalies {out.counts or 'none'}, lost by acks {out.lost_by_acks}; "
              f"{'run dir' if args.sim else 'report'} {kept}")
    n_ok = sum(o["reproduced"] for o in outcomes)
    n_done = sum(o["carried_out"] for o in outcomes)
    wants = [f"{k} {v}" for k, v in plan.expected_text().items()]
    wants += [f"lost acks={k} {v}" for k, v in mode.lost_by_acks.items()]
    if mode.diverged_offsets is not None:
        wants.append(f"diverged offsets on disk {mode.diverged_offsets}")
    print(f"{sc.id} {args.mode} (Kafka {version}): {n_ok}/{args.repeat} runs as the mode expects "
          f"({', '.join(wants)}) "
          f"(reproduction rate {n_ok / args.repeat:.0%}; {args.repeat - n_done} not carried out)")
    out_dir = store / "scenarios"
    out_dir.mkdir(parents=True, exist_ok=True)
    summary = out_dir / f"{sc.id}-{args.mode}-{timestamp()}.json"
    summary.write_text(json.dumps({
        "scenario": sc.id, "title": sc.title, "mode": args.mode, "repeat": args.repeat,
        "kafka_version": version,
        "reproduced": n_ok, "carried_out": n_done, "rate": n_ok / args.repeat,
        "finished": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "runs": outcomes}, indent=2) + "\n")
    print(f"summary {summary}")
    return 0 if n_ok == args.repeat else 1
