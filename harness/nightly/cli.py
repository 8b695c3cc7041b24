"""`highwater nightly`: run the suite within a budget, then one PySpark summary of the night.

Contract: `highwater nightly [--suite chaos_plans/nightly.yaml] [--budget 30m] [--store store]`
- loads the suite (a bad one: one file:line error, exit 2, nothing run);
- carries out its runs in order (harness.nightly.schedule: a run that would start after the
  budget is skipped), each a `highwater run` / `highwater scenario` subprocess into the
  store (harness.nightly.launcher);
- one Spark session summarizes every run dir of the night (harness.nightly.summary), compares
  with previous nights in <store>/nightly/<date>/summary.json, and writes
  <store>/nightly/<date>/{summary.json, summary.html, junit.xml} (date: UTC, of the start;
  a second night on the same date replaces that date's outputs);
- prints one line per run, the replay command of every failed run, and the outputs;
- exit 0: every run as-expected or skipped; 1: a run unexpected or errored; 2: the nightly
  itself could not be carried out (suite, summary job).
"""

from __future__ import annotations

import argparse
import socket
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

DEFAULT_SUITE = "chaos_plans/nightly.yaml"
DEFAULT_BUDGET = "30m"
EXIT_FAILED, EXIT_NIGHTLY_ERROR = 1, 2


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--suite", default=DEFAULT_SUITE, help=f"default: {DEFAULT_SUITE}")
    parser.add_argument("--budget", default=None,
                        help=f"time budget, e.g. 30m, 1h30m, 900s (default: the suite's "
                             f"`budget`, else {DEFAULT_BUDGET})")
    parser.add_argument("--store", default="store", help="store root (default: ./store)")
    parser.add_argument("--date", default=None,
                        help="the night's date YYYY-MM-DD (default: today, UTC)")
    parser.add_argument("--overrun", default="15m",
                        help="how long past the budget a started run may go on before it is "
                             "stopped (default 15m)")
    parser.add_argument("--spark-master", default="local[*]")
    parser.add_argument("--keep-nights", type=int, default=30,
                        help="previous nights in the trend (default 30)")
    parser.add_argument("--run-id-prefix", default=None,
                        help="docker run id of run N is PREFIX<N> (tests track their clusters)")


def run(args: argparse.Namespace) -> int:
    from harness.nightly.launcher import Launcher
    from harness.nightly.schedule import carry_out, expand
    from harness.nightly.suite import load_suite, parse_budget
    from harness.plan.errors import PlanError

    started = datetime.now(UTC)
    try:
        suite = load_suite(args.suite)
        budget_s = (parse_budget(args.budget) if args.budget is not None
                    else suite.budget_s or parse_budget(DEFAULT_BUDGET))
        overrun_s = parse_budget(args.overrun, "--overrun")
        date = args.date or started.strftime("%Y-%m-%d")
        datetime.strptime(date, "%Y-%m-%d")
    except (PlanError, ValueError) as exc:
        print(f"highwater nightly: {exc}", file=sys.stderr)
        return EXIT_NIGHTLY_ERROR
    store = Path(args.store).resolve()
    out_dir = store / "nightly" / date
    out_dir.mkdir(parents=True, exist_ok=True)
    planned = expand(suite)
    print(f"highwater nightly: suite {suite.name} ({len(planned)} runs), budget {budget_s:g}s, "
          f"outputs in {out_dir}")
    launcher = Launcher(store, out_dir / "logs", overrun_s=overrun_s,
                        run_id_prefix=args.run_id_prefix)
    t0 = time.monotonic()
    records = carry_out(planned, budget_s, launcher, on_record=_print_record)
    elapsed = time.monotonic() - t0
    facts = {"suite": str(Path(args.suite).resolve()), "budget_s": budget_s,
             "started": started.strftime("%Y-%m-%dT%H:%M:%SZ"), "elapsed_s": round(elapsed, 1),
             "store": str(store), "hostname": socket.gethostname()}
    try:
        return _summarize(records, date, out_dir, store, facts, args)
    except Exception as exc:  # the runs are stored; say why the summary is missing
        print(f"highwater nightly: the summary could not be built: {type(exc).__name__}: {exc}",
              file=sys.stderr)
        return EXIT_NIGHTLY_ERROR


def _print_record(rec) -> None:
    where = f" {rec.run_dir}" if rec.run_dir else ""
    why = f" ({rec.reason})" if rec.reason and rec.exit_code != 0 else ""
    code = f"exit {rec.exit_code}" if rec.exit_code is not None else rec.status
    print(f"highwater nightly: [{rec.index}] {rec.label} seed {rec.seed}: {code}{where}{why}",
          flush=True)


def _summarize(records, date: str, out_dir: Path, store: Path, facts: dict, args) -> int:
    from harness.nightly.junit import junit_xml
    from harness.nightly.night import (
        JUNIT_XML,
        SUMMARY_HTML,
        SUMMARY_JSON,
        build_summary,
        load_previous,
        write_json,
    )
    from harness.nightly.page import summary_html

    # Scenario and min-isr run dirs too: the one Spark job sees every run of the night.
    runs = [(d, r.label) for r in records for d in (r.run_dirs or [r.run_dir]) if d]
    metrics: dict = {"runs": {}, "plans": {}}
    if runs:
        from harness.checker.check import spark_session
        from harness.nightly.summary import summarize

        print(f"highwater nightly: summarizing {len(runs)} run(s) (PySpark)", flush=True)
        spark = spark_session(args.spark_master)
        try:
            metrics = summarize(spark, runs)
        finally:
            spark.stop()
    previous, warnings = load_previous(store / "nightly", date, args.keep_nights)
    summary = build_summary(date, records, metrics, previous, **facts, warnings=warnings)
    write_json(out_dir / SUMMARY_JSON, summary)
    (out_dir / JUNIT_XML).write_bytes(junit_xml(summary))
    (out_dir / SUMMARY_HTML).write_text(summary_html(summary, out_dir), encoding="utf-8")
    for w in warnings:
        print(f"highwater nightly: warning: {w}", file=sys.stderr)
    for row in summary["runs"]:
        if row["verdict"] in ("unexpected", "error"):
            how = (f"replay with: {row['replay']}" if row.get("replay")
                   else f"no run dir; console log {row.get('log')}")
            print(f"highwater nightly: FAILED {row['label']} seed {row['seed']} "
                  f"({row['verdict']}): {how}")
    for name in (SUMMARY_HTML, SUMMARY_JSON, JUNIT_XML):
        print(f"highwater nightly: {out_dir / name}")
    verdicts = ", ".join(f"{k} {p['verdict']}" for k, p in summary["plans"].items())
    print(f"highwater nightly: {verdicts}")
    return EXIT_FAILED if summary["exit_code"] else 0
