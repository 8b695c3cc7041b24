"""`highwater bench sim`: simulated schedules per minute (issue 11's speed figure).

Runs --schedules seeds of a plan (default chaos_plans/random.yaml: 3 brokers, RF=3, the
random nemesis) cut to --duration simulated seconds of workload, one after another in this
process, and prints schedules/minute, simulated seconds per wall second, events and ops per
schedule. Figures, never assertions. Issue 11's target is >= 10^4 schedules/min on 2 cores.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--plan", default=str(REPO / "chaos_plans/random.yaml"))
    parser.add_argument("--schedules", type=int, default=20)
    parser.add_argument("--duration", type=float, default=30.0,
                        help="simulated seconds of workload per schedule")
    parser.add_argument("--seed", type=int, default=1, help="first seed")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--jobs", type=int, default=1, help="worker processes (one per core)")


def _one(job: tuple[str, dict[str, str], int, float]
         ) -> tuple[float, int, int, float, str, float] | None:
    """(wall s, events, client ops, simulated s, verdict, CPU s) of one seed; None if it
    aborted."""
    from harness.plan.loader import load_plan
    from harness.plan.timing import steps_for
    from harness.run.simulated import SimAborted, simulate

    path, overrides, seed, duration = job
    plan = load_plan(path, overrides)
    with tempfile.TemporaryDirectory(prefix="hw-bench-sim-") as tmp:
        t, cpu = time.perf_counter(), time.process_time()
        try:
            r = simulate(plan, steps_for(plan, seed, duration), seed, Path(tmp))
        except SimAborted:
            return None
        s = r.results["stats"]
        return (time.perf_counter() - t, r.events, s["sends"] + s["polls"], r.virtual_ms / 1000,
                r.verdict, time.process_time() - cpu)  # fmt: skip


def run(args: argparse.Namespace) -> int:
    from multiprocessing import get_context

    from harness.plan.loader import load_plan, parse_overrides
    from harness.run.simulated import tune_gc

    overrides = {"workload.producers.duration_s": str(args.duration),
                 **parse_overrides(args.set)}  # fmt: skip
    plan = load_plan(args.plan, overrides)
    jobs = [(args.plan, overrides, args.seed + i, args.duration) for i in range(args.schedules)]
    tune_gc()  # as `highwater sim` and its explore workers do
    t0 = time.perf_counter()
    if args.jobs > 1:
        with get_context("fork").Pool(args.jobs) as pool:
            out = pool.map(_one, jobs, chunksize=1)
    else:
        out = [_one(j) for j in jobs]
    total = time.perf_counter() - t0
    done = [o for o in out if o is not None]
    walls = [o[0] for o in done]
    events = [o[1] for o in done]
    ops = [o[2] for o in done]
    virtual = [o[3] for o in done]
    unexpected = sum(o[4] != "as-expected" for o in done)
    print(f"plan {plan.name}: {args.schedules} schedules of {args.duration:g} s workload, "
          f"{args.jobs} process(es) ({len(out) - len(done)} could not run, {unexpected} "
          f"unexpected)")  # fmt: skip
    if done:
        print(f"  {60 * args.schedules / total:.1f} schedules/min "
              f"(mean {statistics.mean(walls):.2f} s, max {max(walls):.2f} s per schedule)")
        cpu = [o[5] for o in done]
        print(f"  {60 / statistics.mean(cpu):.1f} schedules per CPU-minute of one process "
              f"(mean {statistics.mean(cpu):.2f} CPU s per schedule; the wall figures above "
              f"depend on what else the machine runs)")  # fmt: skip
        print(f"  {sum(virtual) / sum(walls):.1f} simulated s per wall s per process "
              f"({statistics.mean(virtual):.1f} simulated s per schedule incl. start, settle, "
              f"drain)")  # fmt: skip
        print(f"  {statistics.mean(events):.0f} events, {statistics.mean(ops):.0f} client ops per "
              f"schedule; {sum(events) / sum(walls):.0f} events/s per process")  # fmt: skip
    print("  target (issue 11): >= 10000 schedules/min on 2 cores")
    return 0
