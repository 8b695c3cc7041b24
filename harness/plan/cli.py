"""`highwater plan`: check plan files before anything starts, and show what they will do.

    highwater plan validate PLAN.yaml [PLAN.yaml ...] [--set key=value ...]
        prints "OK <file>: ..." per plan, or the one-line error; exit 0 if all are valid, 2 if not.
    highwater plan show PLAN.yaml [--set key=value ...] [--seed N] [--duration S]
        prints the plan's steps; for a random nemesis, the schedule drawn from the seed.
"""

from __future__ import annotations

import argparse
import sys

from harness.plan.errors import PlanError
from harness.plan.loader import load_plan, parse_overrides


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="plan_command", metavar="ACTION", required=True)
    v = sub.add_parser("validate", help="check plan files; exit 0 when all are valid, else 2")
    v.add_argument("plans", nargs="+", metavar="PLAN.yaml")
    v.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a value by dotted path, e.g. workload.producers.acks=1")
    s = sub.add_parser("show", help="print a plan's steps or its random schedule")
    s.add_argument("plan", metavar="PLAN.yaml")
    s.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE")
    s.add_argument("--seed", type=int, default=None, help="seed for a random nemesis")
    s.add_argument("--duration", type=float, default=None, help="schedule horizon, seconds")


def run(args: argparse.Namespace) -> int:
    try:
        overrides = parse_overrides(args.overrides)
    except PlanError as e:
        print(e, file=sys.stderr)
        return 2
    if args.plan_command == "validate":
        return _validate(args.plans, overrides)
    return _show(args, overrides)


def _validate(paths: list[str], overrides: dict[str, str]) -> int:
    status = 0
    for path in paths:
        try:
            plan = load_plan(path, overrides)
        except PlanError as e:
            print(e)
            status = 2
            continue
        faults = (f"random nemesis ({', '.join(plan.nemesis.kinds)})"
                  if plan.nemesis.mode == "random" else f"{len(plan.faults)} step(s)")
        print(f"OK {path}: {plan.name}, {plan.cluster.brokers} broker(s), {faults}, "
              f"Kafka {plan.cluster.emulated_version()}")
        for note in plan.notes:
            print(f"note: {note}")
    return status


def _show(args: argparse.Namespace, overrides: dict[str, str]) -> int:
    from harness.plan.random_nemesis import generate

    try:
        plan = load_plan(args.plan, overrides)
    except PlanError as e:
        print(e)
        return 2
    print(f"{plan.name}: {plan.description}")
    steps = plan.faults
    if plan.nemesis.mode == "random":
        seed = args.seed if args.seed is not None else plan.nemesis.seed
        if seed is None:
            print("random nemesis without a seed: pass --seed N", file=sys.stderr)
            return 2
        steps = generate(plan, seed=seed, duration_s=args.duration)
        print(f"random schedule, seed {seed}:")
    for s in steps:
        if s.when is not None:
            when = f"when {s.when} (timeout {s.timeout:g}s, {s.on_timeout})"
        elif s.after is not None:
            when = f"+{s.after:g}s"
        else:
            when = f"at {s.at:g}s"
        print(f"  {s.name:<24} {when:<20} {s.describe()}")
    if plan.expected:
        print("expected: " + ", ".join(f"{k} {v}" for k, v in plan.expected.items()))
    return 0
