"""`highwater controller`: run one KRaft controller until SIGTERM/SIGINT.

A controller is always a voter of a Raft quorum (quorum_main.py), as in Kafka: with
--controller-quorum-voters, of the quorum it names; without, of a one-voter quorum of its own
(it elects itself at once and commits what it has flushed). Prints one line
`controller <node-id> listening on HOST:PORT admin PORT` on stdout once both listeners accept
connections. A metadata log that does not decode is a start-up error naming the spot (exit 1),
never silently skipped.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from pathlib import Path

from broker_app import settings
from broker_app.kafka_versions import (
    DEFAULT_VERSION,
    add_switch_arguments,
    bool_text,
    kafka_version_arg,
    switch_fields,
)

from .config import ControllerConfig

log = logging.getLogger("broker_app.controller")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The settings table's controller flags (broker_app/settings.py), then the process's own
    (listener, admin port, Raft timings) and the version switches."""
    settings.add_arguments(parser, "controller")
    parser.add_argument("--port", type=int, required=True, help="Kafka listener; 0 = free port")
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on")
    parser.add_argument("--advertised-host", default=None)
    parser.add_argument("--admin-port", type=int, default=None, help="HTTP GET /state")
    parser.add_argument("--fetch-max-wait-cap-ms", type=int, default=None,
                        help="bound on a parked metadata Fetch's max_wait (the fuzzer lowers it)")
    parser.add_argument("--kafka-version", type=kafka_version_arg, default=None,
                        help="behaviour preset of this Kafka release (docs/kafka-versions.md; "
                             f"default {DEFAULT_VERSION}); the switches below override one field")
    add_switch_arguments(parser, "controller")
    parser.add_argument("--raft-vote-log-check", choices=("strict", "none"), default="strict",
                        help="strict: Raft's vote rule (grant only to an up-to-date log); "
                             "none: hypothetical bug switch, grant without the log check")
    parser.add_argument("--controller-activation", choices=("caught-up", "on-election"),
                        default="caught-up",
                        help="caught-up: a Raft leader acts as the active controller once it "
                             "has applied the committed log up to its epoch start (Kafka); "
                             "on-election: hypothetical bug switch, at once on its image")
    parser.add_argument("--tick-interval-ms", type=int, default=100)
    parser.add_argument("--log-level", default="INFO")
    parser.add_argument("--controller-quorum-voters", default=None,
                        help="controller.quorum.voters, `id@host:port,...` (the voters' Kafka "
                             "listeners): a voter of that Raft quorum; without it a one-voter "
                             "quorum of this controller alone")
    parser.add_argument("--controller-quorum-election-timeout-ms", type=int, default=1000)
    parser.add_argument("--controller-quorum-fetch-timeout-ms", type=int, default=2000)


def config_from_args(args: argparse.Namespace) -> ControllerConfig:
    """The ControllerConfig of these arguments (the simulator builds its controller with it);
    ValueError (KafkaVersionError) for a refused switch combination."""
    return ControllerConfig(
        **settings.values(args, "controller"),
        **switch_fields(args, "controller"),  # type: ignore[arg-type]
        raft_vote_log_check=args.raft_vote_log_check == "strict",
        activate_caught_up=args.controller_activation == "caught-up",
    )


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(
        level=getattr(logging, str(args.log_level).upper(), logging.INFO),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    for flag, name in (("--session-timeout-ms", "session_timeout_ms"),
                       ("--tick-interval-ms", "tick_interval_ms"),
                       ("--leader-imbalance-check-interval-ms",
                        "leader_imbalance_check_interval_ms"),
                       ("--metadata-log-max-record-bytes-between-snapshots",
                        "snapshot_max_new_record_bytes")):  # fmt: skip
        if getattr(args, name) <= 0:
            log.error("%s must be > 0, got %d", flag, getattr(args, name))
            return 2
    try:
        config = config_from_args(args)
    except ValueError as e:
        log.error("bad controller configuration: %s", e)
        return 2
    log.info("emulating Kafka %s: unclean election %s, eligible leader replicas %s",
             args.kafka_version or DEFAULT_VERSION, bool_text(config.unclean_leader_election),
             bool_text(config.eligible_leader_replicas))  # fmt: skip
    from .quorum_main import serve_quorum

    try:
        asyncio.run(serve_quorum(config, args))
    except OSError as e:
        log.error("cannot start controller: %s", e)
        return 1
    except ValueError as e:  # MetadataRecordError, storage errors naming the bad spot
        log.error("cannot load the metadata log in %s: %s", args.data_dir, e)
        return 1
    return 0


if __name__ == "__main__":
    from harness.cli import main

    sys.exit(main(["controller", *sys.argv[1:]]))
