"""`highwater broker`: run one broker process until SIGTERM/SIGINT.

Start-up: load topics, group offsets and the producer-id block from the data dir, open every
log (LogManager recovers after an unclean stop), host each partition as leader, listen.
Every 5 s the high watermarks are checkpointed (replica.high.watermark.checkpoint.interval.ms).
SIGTERM/SIGINT: stop listening, close connections, LogManager.shutdown() (flush, checkpoints,
clean-shutdown marker), exit 0. Prints one "listening" line on stdout once it accepts connections.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import signal
import sys
from pathlib import Path

from broker_app.config import BrokerConfig
from broker_app.protocol.framing import DEFAULT_MAX_FRAME_BYTES

log = logging.getLogger("broker_app.server")

HW_CHECKPOINT_INTERVAL_S = 5.0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--node-id", type=int, required=True)
    parser.add_argument("--port", type=int, required=True, help="0 picks a free port")
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on")
    parser.add_argument("--advertised-host", default=None)
    parser.add_argument("--advertised-port", type=int, default=None)
    parser.add_argument("--max-frame-bytes", type=int, default=DEFAULT_MAX_FRAME_BYTES)
    parser.add_argument("--min-insync-replicas", type=int, default=1)
    parser.add_argument("--num-partitions", type=int, default=1)
    parser.add_argument("--no-auto-create-topics", action="store_true")
    parser.add_argument("--segment-bytes", type=int, default=16 * 1024 * 1024)
    parser.add_argument("--flush-every-batch", action="store_true", help="fsync after every append")
    parser.add_argument("--log-level", default="INFO")


def config_from_args(args: argparse.Namespace) -> BrokerConfig:
    return BrokerConfig(
        node_id=args.node_id,
        data_dir=args.data_dir,
        port=args.port,
        host=args.host,
        advertised_host=args.advertised_host,
        advertised_port=args.advertised_port,
        max_frame_bytes=args.max_frame_bytes,
        auto_create_topics=not args.no_auto_create_topics,
        num_partitions=args.num_partitions,
        min_insync_replicas=args.min_insync_replicas,
        segment_bytes=args.segment_bytes,
        flush_every_batch=args.flush_every_batch,
    )


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(
        level=getattr(logging, str(args.log_level).upper(), logging.INFO),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    config = config_from_args(args)
    try:
        asyncio.run(serve(config))
    except OSError as e:
        log.error("cannot start broker: %s", e)
        return 1
    return 0


def build_broker(config: BrokerConfig):  # -> (KafkaApis, LogManager)
    from broker_app.coordinator.group_coordinator import GroupCoordinator
    from broker_app.coordinator.producer_ids import ProducerIdManager
    from broker_app.replication.replica_manager import ReplicaManager
    from broker_app.server.kafka_apis import KafkaApis
    from broker_app.server.topic_store import TopicStore
    from broker_app.storage.log import LogConfig
    from broker_app.storage.log_manager import LogManager

    config.data_dir.mkdir(parents=True, exist_ok=True)
    log_manager = LogManager(
        config.data_dir,
        LogConfig(
            segment_bytes=config.segment_bytes,
            max_batch_bytes=config.max_message_bytes,
            flush_every_batch=config.flush_every_batch,
        ),
    )
    replica_manager = ReplicaManager(config.node_id, log_manager)
    apis = KafkaApis(
        config,
        replica_manager,
        TopicStore(config.data_dir),
        GroupCoordinator(config.data_dir),
        ProducerIdManager(config.data_dir),
    )
    return apis, log_manager


async def serve(config: BrokerConfig) -> None:
    from broker_app.server.network import SocketServer

    apis, log_manager = build_broker(config)
    server = SocketServer(apis, config.host, config.port, config.max_frame_bytes)
    await server.start()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    print(
        f"highwater broker {config.node_id} listening on {config.host}:{server.port}",
        flush=True,
    )
    log.info("broker %d started, data dir %s", config.node_id, config.data_dir)

    async def checkpoint_loop() -> None:
        while True:
            await asyncio.sleep(HW_CHECKPOINT_INTERVAL_S)
            try:
                log_manager.checkpoint_high_watermarks()
            except Exception:
                log.exception("high watermark checkpoint failed")

    checkpointer = asyncio.create_task(checkpoint_loop())
    try:
        await stop.wait()
        log.info("shutting down")
    finally:
        checkpointer.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await checkpointer
        await server.stop()
        log_manager.shutdown()
        log.info("clean shutdown complete")


if __name__ == "__main__":
    # `python -m broker_app.server.main ...` == `highwater broker ...`, without importing the
    # other subcommands (tests use this so a broken sibling command cannot stop the broker).
    _parser = argparse.ArgumentParser(prog="highwater broker")
    add_arguments(_parser)
    sys.exit(run(_parser.parse_args()))
