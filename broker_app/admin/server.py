"""AdminServer: a tiny HTTP/1.0 endpoint on --admin-port; read-only but for the clock seam.

GET /state → JSON {"broker_id", "broker_epoch", "fenced", "metadata_offset", "metadata_digest"
(MetadataImage.digest of the broker's image), "controller",
"partitions": [...]}, one entry per hosted partition: Partition.snapshot() (topic, partition,
role, leader, leader_epoch, partition_epoch, replicas, isr, maximal_isr, epoch_cache,
remote_replicas...) plus the short names the harness plots: hw, leo, log_start, and
hw_checkpoint (the HW in the last replication-offset-checkpoint, -1 before the first),
follower_reads (consumer fetches with records it served as a follower, KIP-392);
"event_loop_lag_ms": {"current", "max", "samples"} (broker_app/server/liveness.py).
"clock": BrokerClock.describe() ({"offset_ms" now, "skew_ms", "strobe_period_ms"}) when the
node has the seam.
GET /health → "ok". POST /clock?offset_ms=N[&strobe_period_ms=P] skews the broker's clock
(broker_app/clock.py; the harness's `clock` nemesis) and answers the new describe(); 0 resets.
Anything else: 404; a malformed request: 400. The harness polls it to wait on exact conditions
(ISR size, HW = LEO everywhere) and to draw HW/LEO timelines.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import urllib.parse
from collections.abc import Callable
from typing import Any

from broker_app.clock import BrokerClock

log = logging.getLogger(__name__)

MAX_REQUEST_BYTES = 8192
MAX_SKEW_MS = 10 * 365 * 24 * 3600 * 1000  # ten years either way: beyond that is a typo


def broker_state(
    node_id: int, replica_manager: Any, link: Any = None, lag: Any = None,
    clock: BrokerClock | None = None,
) -> dict[str, Any]:
    parts = []
    checkpointed = replica_manager.log_manager.checkpointed_high_watermarks
    for snap in replica_manager.snapshot():
        snap["hw"] = snap["high_watermark"]
        snap["leo"] = snap["log_end_offset"]
        snap["log_start"] = snap["log_start_offset"]
        # The HW a crash would restart this replica from (replication-offset-checkpoint).
        snap["hw_checkpoint"] = checkpointed.get((snap["topic"], snap["partition"]), -1)
        # KIP-966: the partition's ELR as this broker's metadata image has it.
        reg = link.image.partition(snap["topic"], snap["partition"]) if link is not None else None
        snap["elr"] = list(reg.elr) if reg is not None else []
        snap["last_known_elr"] = list(reg.last_known_elr) if reg is not None else []
        # KIP-392: consumer fetches with records this replica served as a follower
        snap["follower_reads"] = replica_manager.follower_reads.get(
            (snap["topic"], snap["partition"]), 0)
        parts.append(snap)
    return {
        "broker_id": node_id,
        "broker_epoch": link.broker_epoch if link is not None else -1,
        "fenced": link.fenced if link is not None else False,
        "metadata_offset": link.image.offset if link is not None else -1,
        # MetadataImage.digest: equal on every node whose metadata image agrees
        "metadata_digest": link.image.digest() if link is not None else None,
        "controller": link is not None,
        "partitions": parts,
        # liveness.LoopLag: {"current", "max" since start, "samples"}, ms the loop was blocked
        "event_loop_lag_ms": lag.snapshot() if lag is not None else None,
        "clock": clock.describe() if clock is not None else None,
    }


class AdminServer:
    def __init__(self, host: str, port: int, state: Callable[[], dict[str, Any]],
                 clock: BrokerClock | None = None) -> None:  # fmt: skip
        self.host = host
        self.port = port
        self.state = state
        self.clock = clock
        self._server: asyncio.base_events.Server | None = None

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._on_connection, self.host, self.port)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await self._server.wait_closed()

    async def _on_connection(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
            line = head.split(b"\r\n", 1)[0].decode("latin-1").split()
            if len(line) >= 2 and line[0] == "POST" and line[1].split("?")[0] == "/clock":
                status, answer = self.set_clock(line[1])
                await self._reply(writer, status, answer)
            elif len(line) < 2 or line[0] != "GET":
                await self._reply(writer, 400, {"error": f"bad request line {line!r}"})
            elif line[1].split("?")[0] == "/state":
                await self._reply(writer, 200, self.state())
            elif line[1] == "/health":
                await self._reply(writer, 200, "ok")
            else:
                await self._reply(writer, 404, {"error": f"no such path {line[1]!r}"})
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError,
                ConnectionError):  # fmt: skip
            pass
        except Exception:
            log.exception("admin request failed")
            with contextlib.suppress(Exception):
                await self._reply(writer, 500, {"error": "internal error"})
        finally:
            writer.close()

    def set_clock(self, target: str) -> tuple[int, Any]:
        """POST /clock?offset_ms=N[&strobe_period_ms=P] -> (status, JSON answer)."""
        if self.clock is None:
            return 404, {"error": "this node has no clock seam"}
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(target).query)
        try:
            offset = int(query["offset_ms"][0])
            period = int(query.get("strobe_period_ms", ["0"])[0])
        except (KeyError, ValueError):
            return 400, {"error": f"POST /clock needs integer offset_ms (and strobe_period_ms), "
                                  f"got {target!r}"}  # fmt: skip
        if abs(offset) > MAX_SKEW_MS or not 0 <= period <= MAX_SKEW_MS:
            return 400, {"error": f"offset_ms {offset} or strobe_period_ms {period} out of range"}
        self.clock.skew(offset, period)
        log.warning("clock skewed by %d ms (strobe period %d ms)", offset, period)
        return 200, self.clock.describe()

    @staticmethod
    async def _reply(writer: asyncio.StreamWriter, status: int, data: Any) -> None:
        body = json.dumps(data).encode()
        reason = {200: "OK", 400: "Bad Request", 404: "Not Found"}.get(status, "Error")
        writer.write(
            f"HTTP/1.0 {status} {reason}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
            + body
        )
        await writer.drain()
