"""ControllerServer: the asyncio edge of the controller (Kafka TCP listener, admin HTTP, timer).

- Kafka listener: per connection, frames -> decode_controller_request -> ControllerApis ->
  response, one request at a time, in order. Malformed frames, unknown APIs and undecodable
  bodies close that connection with one log line; a failing handler too. Nothing escapes a
  connection task, so one bad peer never stops the controller.
- The controller is a voter of a Raft quorum (one voter when it runs alone): Vote,
  BeginQuorumEpoch, EndQuorumEpoch, FetchSnapshot and Fetch v18 go to the RaftManager; any
  other request goes to ControllerApis (RaftQuorumController's operations), and its answer is held
  until the Raft high watermark passes what it depends on, becoming NOT_CONTROLLER if this
  controller lost leadership first.
- A Fetch of `__cluster_metadata-0` at the high watermark is parked (controller/respond.py,
  shared with the simulator) until the high watermark
  moves (RaftManager's on_commit calls `wake_parked_fetches`) or its max_wait expires, so
  brokers learn metadata changes promptly with long polls, as in KRaft.
- Timer: RaftQuorumController.tick(now_ms) every `tick_interval_ms` (on the active controller:
  session expiry, leaderless partitions, automatic rebalance). now_ms is
  environment.monotonic_ms(): sessions are durations.
- Admin HTTP on --admin-port: `GET /state` returns {"node_id", "metadata_offset",
  "metadata_digest" (MetadataImage.digest), "controller_epoch" (the Raft epoch),
  "session_timeout_ms", "ms_since_heartbeat": {broker: ms}, "image": MetadataImage.to_json()
  (the committed image), "quorum": RaftQuorumController.quorum_state()};
  `GET /health` returns {"ok": true}. Anything else is 404; a malformed request gets 400.
- Snapshots: RaftQuorumController takes them (KIP-630); brokers below the log start
  FetchSnapshot them.
"""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from broker_app.aio import cancel_and_wait
from broker_app.env import AsyncioEnv
from broker_app.environment import monotonic_ms
from broker_app.protocol.codec import encode_response
from broker_app.protocol.errors import ProtocolError
from broker_app.protocol.framing import DEFAULT_MAX_FRAME_BYTES, FrameDecoder
from broker_app.reject_log import RejectLog

from .apis import decode_controller_request
from .controller_apis import ControllerApis
from .respond import TIMED_OUT, ParkedMetadataFetches, answer_request

if TYPE_CHECKING:
    from .raft_controller import RaftQuorumController
    from .raft_manager import RaftManager

log = logging.getLogger(__name__)


@dataclass
class QuorumEdge:
    controller: RaftQuorumController
    manager: RaftManager
    apis: dict[int, Any]  # the decode table: CONTROLLER_APIS plus the Raft APIs

READ_CHUNK = 256 * 1024
MAX_HTTP_HEADER = 16 * 1024


class ControllerServer:
    def __init__(
        self,
        quorum: QuorumEdge,
        host: str,
        port: int,
        admin_port: int | None = None,
        advertised_host: str | None = None,
        tick_interval_ms: int = 100,
        max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
        fetch_max_wait_cap_ms: int | None = None,
    ) -> None:
        self.quorum = quorum
        self.controller = quorum.controller
        self.metadata_log = quorum.controller.metadata_log
        self.host = host
        self.port = port
        self.admin_port = admin_port
        self.advertised_host = advertised_host or host
        self.tick_interval_ms = tick_interval_ms
        self.max_frame_bytes = max_frame_bytes
        # Lower than the handler's own cap only when asked (the fuzzer): bounds parked fetches.
        self.fetch_max_wait_cap_ms = fetch_max_wait_cap_ms
        self.rejects = RejectLog(log)
        self.apis: ControllerApis | None = None
        self._servers: list[asyncio.base_events.Server] = []
        self._tasks: set[asyncio.Task[Any]] = set()
        self.env = AsyncioEnv()
        self.parked = ParkedMetadataFetches(self.env, fetch_max_wait_cap_ms)

    # --- lifecycle ------------------------------------------------------------------------

    async def start(self) -> None:
        server = await asyncio.start_server(self._on_kafka, self.host, self.port, limit=READ_CHUNK)
        self._servers.append(server)
        self.port = server.sockets[0].getsockname()[1]
        self.apis = ControllerApis(self.controller, (self.advertised_host, self.port))
        if self.admin_port is not None:
            admin = await asyncio.start_server(self._on_http, self.host, self.admin_port)
            self._servers.append(admin)
            self.admin_port = admin.sockets[0].getsockname()[1]
        ticker = asyncio.create_task(self._tick_loop())
        self._tasks.add(ticker)

    async def stop(self) -> None:
        for s in self._servers:
            s.close()
        for s in self._servers:
            await s.wait_closed()
        await cancel_and_wait(list(self._tasks))

    def _track(self) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _tick_loop(self) -> None:
        while True:
            try:
                self.controller.tick(monotonic_ms())
            except Exception:  # a bug in a timer must not silently stop all future timers
                log.exception("controller tick failed")
            await asyncio.sleep(self.tick_interval_ms / 1000)

    # --- Kafka listener --------------------------------------------------------------------

    async def _on_kafka(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._track()
        peer = writer.get_extra_info("peername")
        try:
            decoder = FrameDecoder(self.max_frame_bytes)
            while True:
                data = await reader.read(READ_CHUNK)
                if not data:
                    return
                try:
                    frames = decoder.feed(data)
                except ProtocolError as e:
                    self.rejects.warning("connection %s: %s; closing", peer, e)
                    return
                for frame in frames:
                    if not await self._process(frame, writer, peer):
                        return
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError) as e:
            log.debug("connection %s: %s", peer, e)
        except asyncio.CancelledError:
            pass
        except Exception:
            if self.rejects.warning("connection %s: unexpected error, closing", peer):
                log.exception("connection %s: traceback of the unexpected error", peer)
        finally:
            writer.close()

    async def _process(self, frame: bytes, writer: asyncio.StreamWriter, peer: Any) -> bool:
        try:
            request = decode_controller_request(frame, self.quorum.apis)
        except ProtocolError as e:
            self.rejects.warning("connection %s: %s; closing", peer, e)
            return False
        try:
            result = await self._process_request(request)
        except Exception:
            if self.rejects.warning("connection %s: handler for api_key=%d v%d failed; closing",
                                    peer, request.api_key, request.api_version):  # fmt: skip
                log.exception("handler traceback (api_key=%d)", request.api_key)
            return False
        writer.write(encode_response(request.correlation_id, request.api_key, result))
        return True

    async def _process_request(self, request: Any) -> Any:
        """Raft requests to Raft; an operation's answer waits for its commit, and becomes
        NOT_CONTROLLER if this controller lost leadership first."""
        from .raft_manager import FETCH, RAFT_FETCH_VERSION, is_raft_request

        assert self.apis is not None
        if is_raft_request(request):
            return await self.quorum.manager.handle_request(request)
        if request.api_key == FETCH and request.api_version > 12:
            raise ValueError(f"Fetch v{request.api_version}: only <= 12 and "
                             f"{RAFT_FETCH_VERSION} (Raft) here")
        answer = self.env.future()
        answer_request(self.env, self.apis, request, self.parked, answer.set_result)
        result = await answer
        if result is TIMED_OUT:
            raise TimeoutError("the answer waited for a commit that never came")
        return result

    def wake_parked_fetches(self) -> None:
        """The high watermark moved: parked metadata fetches look again."""
        self.parked.wake()

    # --- admin HTTP ---------------------------------------------------------------------------

    def state(self) -> dict[str, Any]:
        return {
            "node_id": self.controller.config.node_id,
            "metadata_offset": self.controller.image.offset,
            "metadata_digest": self.controller.image.digest(),
            "controller_epoch": self.metadata_log.epoch,
            "session_timeout_ms": self.controller.config.session_timeout_ms,
            "ms_since_heartbeat": {
                str(b): age for b, age in self.controller.session_ages_ms(monotonic_ms()).items()
            },
            "image": self.controller.image.to_json(),
            "quorum": self.controller.quorum_state(),
        }

    async def _on_http(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._track()
        try:
            try:
                head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
            except (asyncio.LimitOverrunError, asyncio.IncompleteReadError, TimeoutError):
                await self._http_reply(writer, 400, {"error": "malformed or truncated request"})
                return
            if len(head) > MAX_HTTP_HEADER:
                await self._http_reply(writer, 400, {"error": "request header too large"})
                return
            parts = head.split(b"\r\n", 1)[0].decode("latin-1").split()
            if len(parts) != 3 or not parts[2].startswith("HTTP/"):
                await self._http_reply(writer, 400, {"error": f"bad request line {parts!r}"})
                return
            method, path = parts[0], parts[1].split("?", 1)[0]
            if method != "GET":
                await self._http_reply(writer, 405, {"error": f"method {method} not allowed"})
            elif path == "/state":
                await self._http_reply(writer, 200, self.state())
            elif path == "/health":
                await self._http_reply(writer, 200, {"ok": True})
            else:
                await self._http_reply(writer, 404, {"error": f"no such path {path!r}"})
        except (ConnectionError, asyncio.CancelledError):
            pass
        except Exception:
            log.exception("admin http: unexpected error")
        finally:
            writer.close()

    @staticmethod
    async def _http_reply(writer: asyncio.StreamWriter, status: int, body: Any) -> None:
        reason = {200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed"}
        data = json.dumps(body, indent=1).encode()
        writer.write(
            f"HTTP/1.1 {status} {reason.get(status, '')}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(data)}\r\nConnection: close\r\n\r\n".encode()
            + data
        )
        await writer.drain()
