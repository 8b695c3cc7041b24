"""`highwater clean`: remove containers, networks and volumes that dead runs left behind.

A run is dead when the process that owns it is gone (see lifecycle.py). Detached clusters
(`highwater cluster up`) are kept unless --all; runs made by other tools without an owner label
are removed once older than --min-age seconds. Prints the runs it removed; exit 0, or 1 when
docker cannot be reached.
"""

from __future__ import annotations

import argparse
import sys

from harness.cluster.lifecycle import UNOWNED_MIN_AGE_S


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--all", action="store_true",
                        help="also remove detached clusters started by `highwater cluster up`")
    parser.add_argument("--min-age", type=float, default=UNOWNED_MIN_AGE_S, metavar="SECONDS",
                        help="age after which a run without an owner label counts as dead")
    parser.add_argument("--run-id", default=None, help="remove this run, whatever its state")
    parser.add_argument("-v", "--verbose", action="store_true")


def run(args: argparse.Namespace) -> int:
    from harness.cluster.cluster import ClusterError, _docker
    from harness.cluster.lifecycle import clean

    try:
        client = _docker().client
    except ClusterError as exc:
        print(f"highwater clean: error: {exc}", file=sys.stderr)
        return 1
    removed = clean(client, include_detached=args.all, min_age_s=args.min_age,
                    only_run=args.run_id, log=print if args.verbose else lambda _m: None)
    for run_id in removed:
        print(f"removed run {run_id}")
    if not removed:
        print("nothing to clean")
    return 0
