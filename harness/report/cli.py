"""`highwater report RUN_DIR [--output FILE]`: regenerate a run's report.html.

Exit 0 with the report's path on stdout; 2 when RUN_DIR is not a directory or the report
cannot be written (the reason on stderr). Problems in the run's files are not errors: the
report lists them in its Warnings section.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", type=Path, metavar="RUN_DIR",
                        help="a run directory (store/<plan>/<timestamp> or store/latest)")
    parser.add_argument("--output", type=Path, default=None,
                        help="where to write (default RUN_DIR/report.html)")


def run(args: argparse.Namespace) -> int:
    from harness.report import write_report

    try:
        path = write_report(args.run_dir, args.output)
    except (FileNotFoundError, NotADirectoryError, PermissionError, OSError) as e:
        print(f"highwater report: {e}", file=sys.stderr)
        return 2
    print(path)
    return 0
