"""`highwater broker`: run one broker process until SIGTERM/SIGINT.

Start-up: with --controller HOST:PORT (or --controller-quorum-bootstrap-servers) the broker
joins that cluster; without, it first starts a one-voter controller of its own in this process
and joins it (combined mode, server/combined.py: Kafka's process.roles=broker,controller). Then
it opens every log (LogManager recovers after an unclean stop), loads group offsets and the
producer-id block, listens, and answers clients once the controller first unfenced it, as
Kafka's KRaft brokers do. The broker's parts and timers are server/broker_server.py's
BrokerServer, which the simulator builds too: ClusterLink registers/heartbeats/applies the
metadata log (which hosts each partition), ReplicaFetcherManager runs the replica fetchers, a
100 ms timer runs ReplicaManager.tick (ISR shrink, acks=all expiry).
Every 5 s the high watermarks are checkpointed (replica.high.watermark.checkpoint.interval.ms).
Background fsyncs (HW checkpoint, interval flush, rolled segments) run in LogFlusher's worker
thread, so a stalled disk slows them but not heartbeats or fetches (server/log_flusher.py).
--admin-port serves GET /state (broker_app/admin). --flush interval fsyncs every
--flush-interval-ms.
SIGTERM/SIGINT: first a controlled shutdown (the controller moves our leaderships while we
serve, at most 3 s; broker_lifecycle.py), then stop listening, close connections,
LogManager.shutdown() (flush, checkpoints, clean-shutdown marker), then a combined node's
controller, exit 0; obeyed even when the event loop is hogged, and a shutdown that overruns
liveness.HARD_EXIT_S ends the process hard (exit 3). Event-loop lag is measured every 100 ms
and served in /state as event_loop_lag_ms (liveness.LoopLag).
Prints one "listening" line on stdout once it accepts connections.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys

from broker_app import settings
from broker_app.aio import cancel_and_wait
from broker_app.config import FLUSH_POLICIES, BrokerConfig
from broker_app.kafka_versions import (
    DEFAULT_VERSION,
    add_switch_arguments,
    kafka_version_arg,
    switch_fields,
)
from broker_app.replication.behaviour import (
    CONSUMER_VISIBILITY_MODES,
    ReplicationBehaviour,
)
from broker_app.server.liveness import LoopLag, ShutdownGuard, run_lag_monitor

log = logging.getLogger("broker_app.server")

# tasks, connections, fetchers; then the logs are flushed regardless. With the controlled
# shutdown's wait (broker_lifecycle.CONTROLLED_SHUTDOWN_MS) within liveness.HARD_EXIT_S.
CLEAN_STOP_S = 4.0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The settings table's flags (broker_app/settings.py), then the ones that are not one
    BrokerConfig field each."""
    groups = settings.add_arguments(parser)
    parser.add_argument("--no-auto-create-topics", action="store_true",
                        help="auto.create.topics.enable=false")
    parser.add_argument("--flush-every-batch", action="store_true", help="= --flush every-batch")
    parser.add_argument("--flush", choices=FLUSH_POLICIES, default=None,
                        help="fsync every batch (L3 fix), on a timer, or never (default)")
    parser.add_argument("--log-level", default="INFO")
    cluster = groups[settings.CLUSTER]
    cluster.add_argument("--controller", type=_host_port, default=None, metavar="HOST:PORT",
                         help="join the cluster of this controller (omit: combined mode, a "
                              "controller of its own in this process)")
    cluster.add_argument("--controller-quorum-bootstrap-servers", type=_host_ports, default=(),
                         metavar="HOST:PORT,...",
                         help="a quorum of controllers (KIP-853's controller.quorum.bootstrap."
                              "servers): the broker uses the next one when one is unreachable "
                              "or answers NOT_CONTROLLER")
    cluster.add_argument("--peer-address", type=_peer, action="append", default=[],
                         metavar="ID=HOST:PORT",
                         help="connect to broker ID here for replica fetches (repeatable)")
    cluster.add_argument("--kafka-version", type=kafka_version_arg, default=None,
                         help="behaviour preset of this Kafka release (docs/kafka-versions.md; "
                              f"default {DEFAULT_VERSION}); the switches below override one field")
    add_switch_arguments(cluster, "broker")
    cluster.add_argument("--consumer-visibility", choices=CONSUMER_VISIBILITY_MODES,
                         default="high-watermark",
                         help="log-end: a hypothetical legacy switch serving consumers past "
                              "the HW (L5), in no Kafka release")


def _host_port(value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise argparse.ArgumentTypeError(f"{value!r} is not HOST:PORT")
    return host, int(port)


def _host_ports(value: str) -> tuple[tuple[str, int], ...]:
    return tuple(_host_port(v.strip()) for v in value.split(",") if v.strip())


def _peer(value: str) -> tuple[int, tuple[str, int]]:
    node, sep, addr = value.partition("=")
    if not sep or not node.lstrip("-").isdigit():
        raise argparse.ArgumentTypeError(f"{value!r} is not ID=HOST:PORT")
    return int(node), _host_port(addr)


def config_from_args(args: argparse.Namespace) -> BrokerConfig:
    flush = args.flush or ("every-batch" if args.flush_every_batch else "never")
    return BrokerConfig(
        **{**settings.values(args), "broker_rack": args.broker_rack or None},
        flush=flush,
        flush_every_batch=flush == "every-batch",
        auto_create_topics=not args.no_auto_create_topics,
        controller=args.controller or (args.controller_quorum_bootstrap_servers or (None,))[0],
        controller_bootstrap=args.controller_quorum_bootstrap_servers,
        peer_addresses=dict(args.peer_address),
        behaviour=ReplicationBehaviour(
            **switch_fields(args, "broker"),  # type: ignore[arg-type]
            consumer_visibility=args.consumer_visibility,
        ),
    )


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(
        level=getattr(logging, str(args.log_level).upper(), logging.INFO),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    try:
        config = config_from_args(args)
    except ValueError as e:
        log.error("bad broker configuration: %s", e)
        return 2
    log.info("emulating Kafka %s: %s", args.kafka_version or DEFAULT_VERSION, config.behaviour)
    try:
        return asyncio.run(serve(config))
    except OSError as e:
        log.error("cannot start broker: %s", e)
        return 1


def build_broker(config: BrokerConfig):  # -> (KafkaApis, LogManager)
    """The broker's parts over its data dir, joined to `config.controller` (combined mode
    sets it to this process's own controller: server/combined.py), not started."""
    from broker_app.server.broker_server import BrokerServer

    broker = BrokerServer(config)
    return broker.apis, broker.log_manager


async def serve(config: BrokerConfig) -> int:
    """Serve until SIGTERM/SIGINT (or a replica fetcher's fatal stop); the exit code. Without
    a controller, this process runs its own first (combined mode, server/combined.py) and
    stops it last."""
    combined = None
    if not config.clustered:
        from broker_app.server.combined import CombinedController, controller_dir

        combined = CombinedController(config)
        try:
            config = await asyncio.to_thread(combined.start)
        except (ValueError, TimeoutError) as e:  # a metadata log that does not load, named
            log.error("cannot start this node's controller in %s: %s",
                      controller_dir(config.data_dir), e)  # fmt: skip
            return 1
    try:
        return await _serve_broker(config)
    finally:
        if combined is not None:
            # This node's controller last, as Kafka's combined node stops its broker first
            # (bounded: it resigns, then its thread is joined).
            await combined.stop()


async def _serve_broker(config: BrokerConfig) -> int:
    from broker_app.server.broker_server import BrokerServer
    from broker_app.server.limits import ConnectionLimits, default_max_connections
    from broker_app.server.network import SocketServer

    stop = asyncio.Event()
    fatal: list[int] = []  # a replica fetcher asked to stop the broker (exit code 1)
    # Kafka <= 2.0 exits when log truncation is not allowed (KAFKA-3410): the same clean
    # shutdown as SIGTERM, with exit code 1.
    broker = BrokerServer(config, on_fatal=lambda _reason: (fatal.append(1), stop.set()))
    apis, log_manager, link, flusher = broker.apis, broker.log_manager, broker.link, broker.flusher
    limits = ConnectionLimits(
        max_connections=config.max_connections or default_max_connections(),
        max_connections_per_ip=config.max_connections_per_ip,
        connections_max_idle_ms=config.connections_max_idle_ms,
    )
    server = SocketServer(apis, config.host, config.port, config.max_frame_bytes, limits)
    # Kafka opens the client listener once the broker is unfenced (BrokerServer.startup):
    # until then connections are accepted and wait (ClusterLink sets `serving`).
    server.serving = link.serving
    await server.start()
    # signal.signal handlers (not loop.add_signal_handler) run even if the loop is hogged; a
    # watchdog exits hard if the clean shutdown overruns (broker_app/server/liveness.py).
    guard = ShutdownGuard(asyncio.get_running_loop(), stop)
    guard.install()
    print(
        f"highwater broker {config.node_id} listening on {config.host}:{server.port}",
        flush=True,
    )
    log.info("broker %d started, data dir %s", config.node_id, config.data_dir)
    rm = broker.replica_manager
    lag = LoopLag()
    tasks = [asyncio.create_task(run_lag_monitor(lag))]
    broker.start()  # the replica fetchers, the cluster link, the broker's timers
    tasks += broker.tasks
    admin = None
    if config.admin_port is not None:
        from broker_app.admin.server import AdminServer, broker_state

        clock = broker.clock
        admin = AdminServer(
            config.host, config.admin_port,
            lambda: broker_state(config.node_id, rm, link, lag, clock), clock,
        )  # fmt: skip
        await admin.start()
        print(f"highwater broker {config.node_id} admin on {config.host}:{admin.port}", flush=True)
    fetchers = broker.fetchers
    assert fetchers is not None

    async def stop_everything() -> None:
        await cancel_and_wait(tasks)
        if admin is not None:
            await admin.stop()
        await link.stop()
        await fetchers.stop()
        await server.stop()

    try:
        await stop.wait()
        log.info("shutting down")
        # Kafka's controlled shutdown: leaderships move while we still serve, so clients
        # learn the new leader from us instead of timing out against a dead one.
        await link.controlled_shutdown()
    finally:
        try:
            await asyncio.wait_for(stop_everything(), CLEAN_STOP_S)
        except TimeoutError:
            log.warning("stopping tasks and connections took over %gs; flushing logs anyway",
                        CLEAN_STOP_S)  # fmt: skip
        flusher.close()
        # The marker carries our broker epoch: the next process registers with it, which
        # tells the controller this stop was clean (KIP-966).
        log_manager.shutdown(link.broker_epoch)
        guard.done()
        guard.uninstall()
        log.info("clean shutdown complete")
    return 1 if fatal else 0


if __name__ == "__main__":
    # `python -m broker_app.server.main ...` == `highwater broker ...`, without importing the
    # other subcommands (tests use this so a broken sibling command cannot stop the broker).
    _parser = argparse.ArgumentParser(prog="highwater broker")
    add_arguments(_parser)
    sys.exit(run(_parser.parse_args()))
