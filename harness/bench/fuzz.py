"""`highwater bench fuzz`: the protocol fuzzer (harness/fuzz/runner.py) for long runs.

Starts a real broker (or `--target controller`), sends --inputs mutated requests over
--connections connections beside an idempotent acks=all producer, and prints inputs/s,
answered/closed/hung inputs, process deaths, RSS growth, acknowledged messages lost or
duplicated, and undecodable batches found on disk afterwards. Exit 1 when any of the issue's
limits is broken (a death, a hang, RSS growth over 100 MB, a lost or duplicated message, an
undecodable batch), so a long run can gate a release; speed is reported, never judged.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from pathlib import Path

from harness.fuzz.runner import FuzzOptions, run_fuzz, summary


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--inputs", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--target", choices=("broker", "controller"), default="broker")
    parser.add_argument("--timeout-s", type=float, default=5.0,
                        help="hang detector: per-input bound on answer-or-close")
    parser.add_argument("--keep-dir", type=Path, default=None,
                        help="keep the target's data dir and log here (must exist)")
    parser.add_argument("--json", type=Path, default=None, help="also write results here")


def run(args: argparse.Namespace) -> int:
    report = run_fuzz(FuzzOptions(
        inputs=args.inputs, seed=args.seed, connections=args.connections,
        timeout_s=args.timeout_s, target=args.target, keep_dir=args.keep_dir))  # fmt: skip
    print(summary(report))
    print("by mutation:", json.dumps(report.by_mutation, sort_keys=True))
    for p in report.problems[:20]:
        print("problem:", p)
    if args.json:
        args.json.write_text(json.dumps(asdict(report), indent=1))
    return 0 if report.ok() else 1
