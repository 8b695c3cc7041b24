"""`highwater check RUN_DIR [RUN_DIR ...]`: check histories, write results.json, print verdicts.

Exit status: 0 when every run is as-expected, 1 when any is unexpected, 2 when any input could
not be checked (missing or malformed history, bad expectations). pyspark loads only in run().
"""

from __future__ import annotations

import argparse
import json
import sys

from harness.checker.history import ANOMALIES, INFORMATIONAL


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "run_dirs", nargs="+", metavar="RUN_DIR", help="run dirs with history.jsonl"
    )
    parser.add_argument(
        "--spark-master", default="local[*]", help="Spark master URL (default: local[*])"
    )
    parser.add_argument(
        "--expected",
        default=None,
        help='expectations as JSON, e.g. \'{"lost-write": "> 0"}\' (default: each plan.yaml)',
    )


def _summary(results: dict) -> str:
    found = [
        f"{name}={a['count']}"
        for name in ANOMALIES
        if (a := results["anomalies"][name])["count"] and name not in INFORMATIONAL
    ]
    info = results["anomalies"]["unseen-info"]["count"]
    if info:
        found.append(f"(unseen-info={info})")
    metadata = results.get("metadata-divergence")  # from run.json: harness.checker.metadata_check
    if metadata and metadata.get("count"):
        found.append(f"metadata-divergence={metadata['count']}")
    return ", ".join(found) or "no anomalies"


def run(args: argparse.Namespace) -> int:
    expected = None
    if args.expected is not None:
        try:
            expected = json.loads(args.expected)
        except json.JSONDecodeError as e:
            print(f"--expected: not valid JSON: {e.msg} at column {e.colno}", file=sys.stderr)
            return 2
    from harness.checker.check import check_runs
    from harness.checker.expectations import ExpectationError, parse_expected

    try:
        parse_expected(expected, "--expected")
    except ExpectationError as e:
        print(e, file=sys.stderr)
        return 2
    results = check_runs(args.run_dirs, spark_master=args.spark_master, expected=expected)
    width = max(len(str(r.run_dir)) for r in results)
    code = 0
    for r in results:
        if r.results is None:
            print(f"{str(r.run_dir):<{width}}  error        {r.error}")
            code = 2
            continue
        valid = "valid" if r.results["valid"] else "invalid"
        print(f"{str(r.run_dir):<{width}}  {r.verdict:<11}  {valid:<7}  {_summary(r.results)}")
        if r.verdict != "as-expected" and code == 0:
            code = 1
    return code
