"""`highwater bench sweep`: random search on fresh seeds, the default mode and every legacy switch.

The default (fixed) mode must be clean: `--schedules N` seeds from `--seed` are split over
the random plans (chaos_plans/random-targeted.yaml, random-overlap.yaml and random.yaml, the
last with its 3-voter quorum), each schedule judged by the one verdict (history, run checks,
liveness, the simulator's invariants); every violating seed is listed with its replay command
(`highwater sim PLAN --seed S`), nothing stops the sweep. Then each of the six legacy
behaviours the found plans document (chaos_plans/found/targeted-*.yaml) is searched for on
random-targeted with `sim explore`'s own search (`--set` the switch, `--contrast` it back)
until found or `--legacy-budget` schedules: it must still be found. Figures, never
assertions: the table, and `--json FILE` for the note. Exit 1 when the fixed mode violated
anything or a legacy behaviour was not found.

Not part of `make test` (hours of CPU); run it in the background while working.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FIXED_PLANS = ("chaos_plans/random-targeted.yaml", "chaos_plans/random-overlap.yaml",
               "chaos_plans/random.yaml")  # fmt: skip
# name -> (--set overrides, --contrast overrides), as chaos_plans/found/targeted-*.yaml say.
LEGACY: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "high-watermark truncation": (("cluster.switches.truncation=high-watermark",),
                                  ("cluster.switches.truncation=kip-279",)),
    "kip-101 truncation": (("cluster.switches.truncation=kip-101",),
                           ("cluster.switches.truncation=kip-279",)),
    "eager ISR, min.insync=1": (("cluster.switches.isr-update=eager",
                                 "cluster.topics.0.min_insync_replicas=1"),
                                ("cluster.switches.isr-update=maximal",)),
    "reads to the log end": (("cluster.switches.consumer-visibility=log-end",),
                             ("cluster.switches.consumer-visibility=high-watermark",)),
    "no strict min ISR (3.3)": (("cluster.kafka_version=3.3",), ("cluster.kafka_version=3.7",)),
    "unclean election": (("cluster.switches.unclean-leader-election=true",),
                         ("cluster.switches.unclean-leader-election=false",)),
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--schedules", type=int, default=10_000,
                        help="fixed-mode schedules in all, split over the random plans")
    parser.add_argument("--seed", type=int, default=1_000_000,
                        help="first seed (pick one the project never used)")
    parser.add_argument("--plans", nargs="+", default=list(FIXED_PLANS),
                        help="plans of the fixed sweep; PATH=N runs N schedules of PATH, the "
                             "others share the rest of --schedules")
    parser.add_argument("--legacy-budget", type=int, default=2_000,
                        help="at most this many schedules per legacy behaviour")
    parser.add_argument("--only", choices=("fixed", "legacy"), default=None)
    parser.add_argument("--jobs", type=int, default=2, help="worker processes")
    parser.add_argument("--json", type=Path, default=None, help="write the figures here")


@dataclass
class FixedFigure:
    plan: str
    seeds: str
    schedules: int = 0
    violations: list[dict[str, object]] = field(default_factory=list)
    cpu_s: float = 0.0
    done_seeds: list[int] = field(default_factory=list, repr=False)


@dataclass
class LegacyFigure:
    behaviour: str
    found_seed: int | None
    schedules: int
    wall_s: float


def _one(job: tuple[str, int]) -> tuple[str, int, tuple[str, ...] | None, float]:
    """(plan, seed, misses or None, CPU s) of one fixed-mode schedule, in a worker; judged
    as `sim explore` judges (harness.sim.explore: an aborted schedule is no violation)."""
    import tempfile

    from harness.plan.loader import load_plan
    from harness.sim.explore import _violates, schedule_for

    path, seed = job
    cpu = time.process_time()
    plan = load_plan(REPO / path)
    with tempfile.TemporaryDirectory(prefix="hw-sweep-") as tmp:
        r = _violates(plan, schedule_for(plan, seed, plan.nemesis.overlap), seed, Path(tmp))
    return path, seed, None if r is None else r.judgement.misses, time.process_time() - cpu


def _split(plans: Sequence[str], schedules: int) -> dict[str, int]:
    """plan -> schedules: "PATH=N" gives PATH N of them, the others share what is left."""
    fixed = {p.split("=")[0]: int(p.split("=")[1]) for p in plans if "=" in p}
    rest = [p for p in plans if "=" not in p]
    left = max(0, schedules - sum(fixed.values()))
    return {**fixed, **{p: left // len(rest) for p in rest}} if rest else fixed


def fixed_sweep(plans: Sequence[str], schedules: int, start: int, jobs: int
                ) -> list[FixedFigure]:  # fmt: skip
    from multiprocessing import get_context

    from harness.run.simulated import tune_gc

    tune_gc()
    counts = _split(plans, schedules)
    figures = {p: FixedFigure(p, f"{start}..{start + n - 1}") for p, n in counts.items()}
    # Interleaved, so every plan progresses at once and a stopped sweep still covers each.
    work = [(p, start + i) for i in range(max(counts.values())) for p, n in counts.items()
            if i < n]  # fmt: skip
    t0, done = time.monotonic(), 0
    # SIGTERM stops the sweep with its figures (a background job ignores SIGINT); the
    # workers, forked with the default handler, just die.
    with get_context("fork").Pool(jobs) as pool:
        signal.signal(signal.SIGTERM, _stop)
        try:
            for path, seed, misses, cpu in pool.imap_unordered(_one, work, chunksize=4):
                done += 1
                _count(figures[path], path, seed, misses, cpu)
                if done % 50 == 0 or done == len(work):
                    rate = done / max(time.monotonic() - t0, 1e-9) * 60
                    bad = sum(len(x.violations) for x in figures.values())
                    print(f"\rfixed: {done}/{len(work)} schedules, {rate:.0f}/min, "
                          f"{bad} violation(s)", end="", file=sys.stderr, flush=True)
        except KeyboardInterrupt:
            # Stopped by hand (the machine is needed): the figures cover what was judged.
            pool.terminate()
            print(f"\nstopped after {done} schedules", file=sys.stderr)
        finally:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
    print(file=sys.stderr)
    for f in figures.values():
        f.seeds = f"{min(f.done_seeds)}..{max(f.done_seeds)}" if f.done_seeds else "-"
    return list(figures.values())


def _stop(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _count(f: FixedFigure, path: str, seed: int, misses: tuple[str, ...] | None,
           cpu: float) -> None:  # fmt: skip
    f.schedules += 1
    f.cpu_s += cpu
    f.done_seeds.append(seed)
    if misses is not None:
        f.violations.append({"seed": seed, "misses": list(misses),
                             "replay": f"highwater sim {path} --seed {seed}"})
        print(f"\nVIOLATION {path} seed {seed}: {'; '.join(misses)}", flush=True)


def legacy_sweep(budget: int, start: int, jobs: int) -> list[LegacyFigure]:
    from harness.plan.loader import load_plan, parse_overrides
    from harness.sim.explore import search

    path = REPO / "chaos_plans/random-targeted.yaml"
    out = []
    for name, (sets, contrast) in LEGACY.items():
        t0 = time.monotonic()
        plan = load_plan(path, parse_overrides(list(sets)))
        against = load_plan(path, parse_overrides([*sets, *contrast]))
        found = search(plan, budget, start, None, jobs, plan.nemesis.overlap, against)
        fig = LegacyFigure(name, found.seed if found else None,
                           found.schedules if found else budget, time.monotonic() - t0)
        print(f"legacy {name}: " + (f"found at seed {fig.found_seed} after {fig.schedules} "
              f"schedule(s)" if found else f"NOT found in {budget} schedules")
              + f", {fig.wall_s:.0f} s", flush=True)  # fmt: skip
        out.append(fig)
    return out


def run(args: argparse.Namespace) -> int:
    report: dict[str, object] = {"seed": args.seed, "jobs": args.jobs}
    bad = False
    if args.only in (None, "fixed"):
        t0 = time.monotonic()
        fixed = fixed_sweep(args.plans, args.schedules, args.seed, args.jobs)
        report["fixed"] = [{k: v for k, v in asdict(f).items() if k != "done_seeds"}
                           for f in fixed]
        report["fixed_wall_s"] = round(time.monotonic() - t0, 1)
        print(f"{'plan':<36} {'seeds':<22} {'schedules':>9} {'violations':>10} {'CPU s/each':>10}")
        for f in fixed:
            print(f"{f.plan:<36} {f.seeds:<22} {f.schedules:>9} {len(f.violations):>10} "
                  f"{f.cpu_s / max(f.schedules, 1):>10.2f}")
            for v in f.violations[:10]:
                print(f"  seed {v['seed']}: {v['replay']}")
        bad |= any(f.violations for f in fixed)
    if args.only in (None, "legacy"):
        legacy = legacy_sweep(args.legacy_budget, args.seed, args.jobs)
        report["legacy"] = [asdict(f) for f in legacy]
        bad |= any(f.found_seed is None for f in legacy)
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 1 if bad else 0
