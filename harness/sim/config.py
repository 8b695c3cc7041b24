"""A plan's cluster as the simulator's process configurations, through production's own flag
parsing: the broker and controller flags `highwater run` would pass (harness/plan/flags.py's
process_flags) are parsed by `highwater broker` / `highwater controller`'s argparse, so a
switch means in the simulator exactly what it means in a container."""

from __future__ import annotations

import argparse
from pathlib import Path

from broker_app.config import BrokerConfig
from broker_app.controller.config import ControllerConfig
from harness.plan.flags import process_flags
from harness.plan.model import ClusterSpec

SIM_DATA_DIR = Path("/nonexistent/highwater-sim")  # never opened: logs live in memory


def broker_configs(cluster: ClusterSpec) -> list[BrokerConfig]:
    from broker_app.server.main import add_arguments, config_from_args

    flags, _ = process_flags(cluster)
    out = []
    for i in cluster.broker_ids():
        parser = argparse.ArgumentParser()
        add_arguments(parser)
        args = parser.parse_args([
            "--node-id", str(i), "--port", "9092", "--data-dir", str(SIM_DATA_DIR),
            "--advertised-host", f"broker-{i}", "--controller", "controller-1:9093",
            "--no-auto-create-topics", "--broker-rack", f"rack-{i}", *flags,
        ])  # fmt: skip
        out.append(config_from_args(args))
    return out


def controller_config(cluster: ClusterSpec) -> tuple[ControllerConfig, int]:
    """(ControllerConfig, tick interval ms) as `highwater controller` builds them."""
    from broker_app.controller.main import add_arguments, config_from_args

    _, flags = process_flags(cluster)
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args(["--port", "9093", "--data-dir", str(SIM_DATA_DIR), *flags])
    return config_from_args(args), args.tick_interval_ms
