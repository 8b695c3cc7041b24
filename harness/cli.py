"""The `highwater` command line.

Each subcommand lives in its own module, which exposes
`add_arguments(parser: argparse.ArgumentParser) -> None` and `run(args) -> int`.
Only the chosen subcommand's module is imported, so `highwater broker` never
pays for importing Spark. To add a subcommand, add one row to COMMANDS.
"""

from __future__ import annotations

import argparse
import importlib
import sys

# name -> (module path, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "broker": ("broker_app.server.main", "run one broker"),
    "dump-log": ("broker_app.storage.dump", "print the batches of a segment, like kafka-dump-log"),
    "demo": ("harness.demo", "start one broker, produce and consume with a real client"),
    "bench": ("harness.bench.cli", "benchmarks: broker, cluster, proxy, checker, fuzz"),
    "plan": ("harness.plan.cli", "validate fault plans, show their steps or random schedule"),
    "toxiproxy-server": ("harness.toxiproxy_server.main", "run the Toxiproxy-compatible server"),
    "check": ("harness.checker.cli", "check run histories, write results.json"),
    "report": ("harness.report.cli", "regenerate a run's report.html"),
    "images": ("harness.images", "build the container images (no registry needed)"),
    "controller": ("broker_app.controller.main", "run the cluster controller (metadata log)"),
    "cluster": ("harness.cluster.cli", "start/inspect/remove a cluster by hand: up, status, down"),
    "clean": ("harness.cluster.clean", "remove containers and networks of dead runs"),
    "topics": ("harness.topics", "describe topics: leader, replicas, ISR per partition"),
    "run": ("harness.run.main", "run a fault plan: cluster, workload, faults, check, report"),
    "scenario": ("harness.scenario.cli", "the documented loss scenarios per mode; min-isr matrix"),
    "nightly": ("harness.nightly.cli", "run the nightly suite in a budget: summary, trends, JUnit"),
    "sim": ("harness.sim.cli", "run a plan on the deterministic simulator; `sim explore` searches"),
}


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser; only `command`'s module is imported, so one command's missing
    dependency never breaks the others (and `highwater broker` never imports Spark)."""
    parser = argparse.ArgumentParser(prog="highwater", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, (module_path, help_text) in COMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        p.set_defaults(_module=module_path)
        if name == command:
            importlib.import_module(module_path).add_arguments(p)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    command = next((a for a in argv if not a.startswith("-")), None)
    args = build_parser(command if command in COMMANDS else None).parse_args(argv)
    module = importlib.import_module(args._module)
    try:
        return int(module.run(args) or 0)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
