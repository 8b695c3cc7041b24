"""`highwater controller`: run the (single, active) controller until SIGTERM/SIGINT.

Start-up: open `<data-dir>/__cluster_metadata-0/` (recovering a torn tail), replay it into the
image, take the next controller epoch, listen for Kafka requests on --port and for the admin
HTTP endpoint on --admin-port. Prints one line `controller <node-id> listening on HOST:PORT
admin PORT` on stdout once both accept connections. A corrupt metadata log is a start-up error
naming the offset (exit 1), never silently skipped.
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
                             "listeners): run a Raft quorum of controllers (issue 13); without "
                             "it this is the single controller")
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
    try:
        asyncio.run(serve(config, args))
    except OSError as e:
        log.error("cannot start controller: %s", e)
        return 1
    except ValueError as e:  # MetadataRecordError, storage errors naming the bad spot
        log.error("cannot load the metadata log in %s: %s", args.data_dir, e)
        return 1
    return 0


async def serve(config: ControllerConfig, args: argparse.Namespace) -> None:
    from broker_app.server.liveness import serve_until_signalled

    from .errors import ControllerError
    from .metadata_log import FileMetadataLog
    from .quorum_controller import QuorumController
    from .server import ControllerServer

    if args.controller_quorum_voters:
        from .quorum_main import serve_quorum

        return await serve_quorum(config, args)
    metadata_log = FileMetadataLog(args.data_dir)
    try:
        try:
            controller = QuorumController(config, metadata_log)
        except ControllerError as e:
            raise ValueError(str(e)) from e
        server = ControllerServer(
            controller, metadata_log, args.host, args.port, args.admin_port,
            args.advertised_host, args.tick_interval_ms,
            fetch_max_wait_cap_ms=args.fetch_max_wait_cap_ms,
        )  # fmt: skip
        await server.start()
        log.info(
            "controller %d epoch %d: metadata offset %d, %d brokers, %d topics",
            config.node_id, metadata_log.epoch, controller.image.offset,
            len(controller.image.brokers), len(controller.image.topics),
        )  # fmt: skip
        print(
            f"controller {config.node_id} listening on {args.host}:{server.port} "
            f"admin {server.admin_port}",
            flush=True,
        )
        async def shutdown() -> None:
            log.info("controller %d shutting down", config.node_id)
            await server.stop()

        # As the broker's: a SIGTERM is obeyed even if the loop is hogged, and a shutdown that
        # hangs ends hard after liveness.HARD_EXIT_S (broker_app/server/liveness.py).
        await serve_until_signalled(shutdown)
    finally:
        metadata_log.close()


if __name__ == "__main__":
    from harness.cli import main

    sys.exit(main(["controller", *sys.argv[1:]]))
