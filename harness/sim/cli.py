"""`highwater sim [explore] PLAN`: run plans on the deterministic simulator (issue 11).

- `highwater sim PLAN [--seed N] [--mode M] [--set k=v]`: one simulated schedule; writes
  store/sim/<plan>/<timestamp>/ (history.jsonl, results.json, run.json) and prints the verdict.
  Exit 0 as expected, 1 unexpected, 2 could not run (like `highwater run`).
- `highwater sim explore PLAN --schedules N [--mode M]`: seeds from --seed (default 1) until a
  schedule violates `expected`; then shrinks its faults and prints the minimal timeline and,
  with --export FILE, writes it as a fault plan for `highwater run`.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("words", nargs="+", metavar="[explore] PLAN",
                        help="a plan file, or `explore` and a plan file")
    parser.add_argument("--seed", type=int, default=None,
                        help="schedule seed (explore: the first seed; default 1)")
    parser.add_argument("--mode", default=None, help="a mode of the plan (legacy, fixed, ...)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="override a plan value (as `highwater run --set`)")
    parser.add_argument("--store", default="store", help="store root (default: ./store)")
    parser.add_argument("--schedules", type=int, default=1000, help="explore: how many seeds")
    parser.add_argument("--no-shrink", action="store_true", help="explore: do not shrink")
    parser.add_argument("--jobs", type=int, default=1, help="explore: worker processes")
    parser.add_argument("--overlap", type=int, default=1,
                        help="explore: superimpose this many random schedules (overlapping "
                             "faults); > 1 replaces the plan's nemesis.overlap")
    parser.add_argument("--shrink-budget", type=int, default=200,
                        help="explore: at most this many runs while shrinking")
    parser.add_argument("--contrast", action="append", default=[], metavar="KEY=VALUE",
                        help="explore: a schedule counts only if the plan with these "
                             "overrides too (the behaviour under test switched back) does "
                             "not violate it; searching and shrinking keep what this "
                             "behaviour alone loses")
    parser.add_argument("--export", type=Path, default=None,
                        help="explore: write the minimal schedule as a fault plan here")


def _load(args: argparse.Namespace, path: str):  # -> Plan
    from harness.plan.loader import load_plan, mode_overrides, parse_overrides

    overrides = parse_overrides(args.set)
    plan = load_plan(path, overrides)
    if args.mode:
        plan = load_plan(path, {**mode_overrides(plan, args.mode), **overrides})
    return plan


def run(args: argparse.Namespace) -> int:
    from harness.nemesis import NemesisError
    from harness.plan.errors import PlanError
    from harness.run.simulated import check_simulable

    explore = args.words[0] == "explore"
    words = args.words[1:] if explore else args.words
    if len(words) != 1:
        print("highwater sim: give one PLAN (or `explore PLAN`)", file=sys.stderr)
        return 2
    try:
        plan = _load(args, words[0])
        if plan.nemesis.mode == "random":
            from harness.plan.random_nemesis import generate

            check_simulable(plan, generate(plan, seed=1))
        else:
            check_simulable(plan, plan.faults)
    except (PlanError, NemesisError, ValueError) as e:
        print(f"highwater sim: {e}", file=sys.stderr)
        return 2
    from harness.run.simulated import tune_gc

    tune_gc()
    if explore:
        return _explore(args, plan, Path(words[0]))
    return _run_one(args, plan)


def _run_one(args: argparse.Namespace, plan) -> int:
    from harness.checker.expectations import UNCONVERGED_REPLICAS, run_check_counts
    from harness.plan.timing import steps_for
    from harness.run.simulated import AS_EXPECTED, SimAborted, simulate
    from harness.sim.explore import timeline
    from harness.store import Store

    seed = args.seed if args.seed is not None else (plan.nemesis.seed or 1)
    steps = steps_for(plan, seed)
    run_dir = Store(Path(args.store) / "sim").create_run(plan.name)
    t0 = time.monotonic()
    try:
        r = simulate(plan, steps, seed, run_dir.path)
    except SimAborted as e:
        print(f"highwater sim: could not be carried out: {e}", file=sys.stderr)
        return 2
    wall = time.monotonic() - t0
    meta = {"plan_source": plan.source, "overrides": plan.overrides, "seed": seed,
            "mode": args.mode, "simulated": True, "virtual_ms": r.virtual_ms,
            "events": r.events, "wall_s": round(wall, 3),
            "diverged_offsets": {p: len(o) for p, o in r.diverged.items()}}  # fmt: skip
    (run_dir.path / "run.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    res = r.results
    found = {k: v["count"] for k, v in res["anomalies"].items() if v["count"]}
    print("faults:")
    for line in timeline([f.step for f in r.fired if not f.skipped]):
        print("  " + line)
    judged = r.judgement
    print(f"{judged.verdict}: valid={res['valid']} anomalies={found or 'none'} "
          f"stats={res['stats']} expected={res['expected']}")  # fmt: skip
    print("run checks: " + ", ".join(f"{k} {v}" for k, v in run_check_counts(res).items()))
    if r.diverged:
        print("replicas diverged: " + ", ".join(
            f"{p}: {len(offs)} offset(s) from {min(offs)}" for p, offs in r.diverged.items()))
    for line in res.get(UNCONVERGED_REPLICAS, {}).get("examples", []):
        print(f"unconverged: {line}")
    for miss in judged.misses:
        print(f"not as expected: {miss}")
    print(f"seed {seed}: {r.virtual_ms / 1000:.1f} simulated s in {wall:.2f} s; {run_dir.path}")
    return 0 if judged.verdict == AS_EXPECTED else 1


def _explore(args: argparse.Namespace, plan, source: Path) -> int:
    from harness.sim.explore import search, shrink, timeline, to_fault_plan, violation_counts

    start = args.seed if args.seed is not None else 1

    def progress(n: int, elapsed: float) -> None:
        print(f"\r{n}/{args.schedules} schedules, {n / max(elapsed, 1e-9):.2f}/s",
              end="", file=sys.stderr, flush=True)  # fmt: skip

    from harness.plan.errors import PlanError

    contrast = None
    if args.contrast:
        try:
            contrast = _load(argparse.Namespace(**{**vars(args),
                                                   "set": args.set + args.contrast}),
                             str(source))  # fmt: skip
        except (PlanError, ValueError) as e:
            print(f"highwater sim: --contrast: {e}", file=sys.stderr)
            return 2
        print(f"contrast: {', '.join(args.contrast)} (a schedule counts only if this passes)")
    t0 = time.monotonic()
    found = search(plan, args.schedules, start, progress, args.jobs, args.overlap, contrast)
    print(file=sys.stderr)
    if found is None:
        print(f"no violation of {plan.expected_text() or 'validity'} in {args.schedules} "
              f"schedules (seeds {start}..{start + args.schedules - 1}), "
              f"{time.monotonic() - t0:.1f} s")  # fmt: skip
        return 0
    res = found.result.results
    counts = violation_counts(res)
    print(f"seed {found.seed} violates expected {res['expected']} after {found.schedules} "
          f"schedule(s): {counts}; " + "; ".join(found.result.judgement.misses))  # fmt: skip
    print("schedule:")
    for line in timeline(found.steps):
        print("  " + line)
    if args.no_shrink:
        return 1
    shrink(plan, found, args.shrink_budget, contrast)
    print(f"minimal schedule ({found.shrink_runs} shrink runs):")
    for line in timeline(found.shrunk):
        print("  " + line)
    if args.export is not None:
        pairs = dict(kv.split("=", 1) for kv in args.contrast)
        args.export.write_text(to_fault_plan(plan, found.shrunk, found.seed,
                                             source.read_text(encoding="utf-8"),
                                             found.resolved, found.shrunk_counts or counts,
                                             pairs))  # fmt: skip
        print(f"fault plan written to {args.export}")
    return 1
