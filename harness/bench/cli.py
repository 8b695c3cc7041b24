"""Dispatch `highwater bench <target>` to harness.bench.<module>."""

from __future__ import annotations

import argparse
import importlib

# target -> (module path, help)
TARGETS: dict[str, tuple[str, str]] = {
    "broker": ("harness.bench.broker", "producer throughput/latency: real broker vs null broker"),
    "cluster": ("harness.bench.cluster", "3 brokers RF=3, acks=all/1 vs single node"),
    "checker": ("harness.bench.checker", "checker throughput and memory on synthetic histories"),
    "proxy": ("harness.bench.proxy", "cluster cold start; produce through Toxiproxy vs direct"),
    "crash": ("harness.bench.crash", "issue 18 crash probe: kill leader/controller, re-led time, "
              "idle CPU, SIGTERM, acks=all lost"),
    "controller-failover": ("harness.bench.controller_failover", "issue 13: kill the active "
                            "KRaft controller N times under acks=all load: failover ms, lost, "
                            "metadata divergence"),
    "fuzz": ("harness.bench.fuzz", "protocol fuzzer: mutated requests beside a good producer"),
    "validator": ("harness.bench.validator", "native record walk vs the Python reference: "
                  "differences over N generated batches, µs per record"),
    "startup": ("harness.bench.startup", "broker start-up on 10,000 partitions, low fd ulimit"),
    "snapshot": ("harness.bench.snapshot", "KIP-630 metadata snapshot size, write and load "
                 "time vs replaying the log (issue 13)"),
    "sim": ("harness.bench.sim", "simulated schedules per minute (3 brokers, random nemesis)"),
    "rdkafka-suite": ("harness.bench.rdkafka_suite", "issue 29: librdkafka's own integration "
                      "tests (Debian's source package) against 1 controller + 3 brokers"),
    "sweep": ("harness.bench.sweep", "issue 24: fresh-seed sim sweep of the default mode over "
              "the random plans (0 violations expected) and of each legacy behaviour (found)"),
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="bench_target", metavar="TARGET", required=True)
    for name, (module_path, help_text) in TARGETS.items():
        p = sub.add_parser(name, help=help_text)
        p.set_defaults(_bench_module=module_path)
        importlib.import_module(module_path).add_arguments(p)


def run(args: argparse.Namespace) -> int:
    return int(importlib.import_module(args._bench_module).run(args) or 0)
