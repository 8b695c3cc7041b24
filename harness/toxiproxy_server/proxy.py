"""The I/O edge: a Proxy listens, dials its upstream per client, and pumps bytes through Links.

Contract: `Proxy.start()` binds `listen` (port 0 is resolved; `listen` then holds the real
address, so a disable/enable cycle comes back on the same port) and `stop()` closes the listener
and every open connection (new connects are refused). Each accepted client gets one upstream
connection and two Links: upstream (client -> server) and downstream (server -> client). Toxic
edits made through `add_toxic`/`update_toxic`/`remove_toxic` reach the links of open connections
immediately. With no toxic on a link the pump copies each read straight to the destination; the
only per-chunk work is the passthrough check.

Closing follows Toxiproxy: when a link's chain delivers EOF its destination socket is closed
(fully, not half-closed), which ends the other direction's source too, so the whole connection
goes away. RESET aborts both sockets with SO_LINGER 0.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import socket
import struct

from harness.toxiproxy_server.link import Link
from harness.toxiproxy_server.model import STREAMS, ApiError, ToxicSpec, split_host_port
from harness.toxiproxy_server.toxics import EOF, Chunk

log = logging.getLogger("toxiproxy.proxy")

READ_SIZE = 64 * 1024
# Toxiproxy's net.Dial has no timeout of its own (the kernel gives up after ~2 min); bound it.
UPSTREAM_CONNECT_TIMEOUT = 30.0


def format_address(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _close(writer: asyncio.StreamWriter) -> None:
    """Close gracefully, but never wait on a peer that stopped reading."""
    transport = writer.transport
    if transport.is_closing():
        return
    if transport.get_write_buffer_size() > 0:
        transport.abort()
    else:
        transport.close()


def _reset(writer: asyncio.StreamWriter) -> None:
    sock = writer.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


class Pump:
    """Moves one direction of a connection: source reader -> Link -> destination writer."""

    def __init__(
        self, conn: Connection, link: Link, src: asyncio.StreamReader, dst: asyncio.StreamWriter
    ) -> None:
        self.conn = conn
        self.link = link
        self.src = src
        self.dst = dst
        self._loop = asyncio.get_running_loop()
        self._timer: asyncio.TimerHandle | None = None
        self._space = asyncio.Event()

    async def run(self) -> None:
        loop = self._loop
        try:
            while not self.link.finished:
                try:
                    data = await self.src.read(READ_SIZE)
                except (ConnectionError, OSError):
                    data = b""
                if not data:
                    self.link.push_eof(loop.time())
                    self.flush()
                    return
                if self.dst.transport.is_closing():
                    return  # destination gone; the other direction closes our source
                if self.link.passthrough:
                    self.dst.write(data)
                else:
                    self.link.push(data, loop.time())
                    self.flush()
                try:
                    await self.dst.drain()
                except (ConnectionError, OSError):
                    _close(self.dst)  # destination died: the other direction's source ends too
                    return
                while self.link.backlogged() and not self.link.finished:
                    self._space.clear()
                    await self._space.wait()
        finally:
            if self.link.finished and self._timer is not None:
                self._timer.cancel()

    def flush(self) -> None:
        """Deliver whatever the link has ready now, and arm the timer for what comes next."""
        items = self.link.advance(self._loop.time())
        for item in items:
            if isinstance(item, Chunk):
                if not self.dst.transport.is_closing():
                    self.dst.write(item.data)
            elif item is EOF:
                _close(self.dst)
            else:
                self.conn.reset()
        deadline = None if self.link.finished else self.link.next_deadline()
        if self._timer is not None and (deadline is None or self._timer.when() != deadline):
            self._timer.cancel()
            self._timer = None
        if deadline is not None and self._timer is None:
            self._timer = self._loop.call_at(deadline, self._on_timer)
        if not self.link.backlogged() or self.link.finished:
            self._space.set()

    def _on_timer(self) -> None:
        self._timer = None
        self.flush()

    def cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._space.set()


class Connection:
    def __init__(
        self,
        proxy: Proxy,
        client: tuple[asyncio.StreamReader, asyncio.StreamWriter],
        upstream: tuple[asyncio.StreamReader, asyncio.StreamWriter],
    ) -> None:
        now = asyncio.get_running_loop().time()
        self.client_writer = client[1]
        self.upstream_writer = upstream[1]
        self.pumps = (
            Pump(self, Link(proxy.chains[0], now, proxy.rng), client[0], upstream[1]),
            Pump(self, Link(proxy.chains[1], now, proxy.rng), upstream[0], client[1]),
        )

    async def run(self) -> None:
        try:
            await asyncio.gather(*(p.run() for p in self.pumps))
        finally:
            self.close()

    def close(self) -> None:
        for pump in self.pumps:
            pump.cancel_timer()
        _close(self.client_writer)
        _close(self.upstream_writer)

    def reset(self) -> None:
        for pump in self.pumps:
            pump.cancel_timer()
        _reset(self.client_writer)
        _reset(self.upstream_writer)


class Proxy:
    def __init__(self, name: str, listen: str, upstream: str, rng: random.Random) -> None:
        self.name = name
        self.listen = listen
        self.upstream = upstream
        self.enabled = False
        self.rng = rng
        self.chains: tuple[list[ToxicSpec], list[ToxicSpec]] = ([], [])  # by STREAMS index
        self._server: asyncio.Server | None = None
        self._connections: dict[Connection, asyncio.Task[None]] = {}

    # -- JSON -------------------------------------------------------------------------------
    def toxics(self) -> list[ToxicSpec]:
        return [*self.chains[0], *self.chains[1]]

    def to_json(self) -> dict[str, object]:
        return {
            "name": self.name,
            "listen": self.listen,
            "upstream": self.upstream,
            "enabled": self.enabled,
            "toxics": [t.to_json() for t in self.toxics()],
        }

    # -- lifecycle --------------------------------------------------------------------------
    async def start(self) -> None:
        if self.enabled:
            return
        host, port = split_host_port(self.listen, "listen")
        loop = asyncio.get_running_loop()
        try:
            infos = await loop.getaddrinfo(
                host or "0.0.0.0", port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
            )
            # One socket only (port 0 must mean one port); prefer IPv4 as Go does for localhost.
            family, _, _, _, sockaddr = sorted(infos, key=lambda i: i[0] != socket.AF_INET)[0]
            sock = socket.socket(family, socket.SOCK_STREAM)
            try:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                sock.bind(sockaddr)
            except OSError:
                sock.close()
                raise
            self._server = await asyncio.start_server(self._on_client, sock=sock, backlog=1024)
        except OSError as exc:
            raise ApiError(f"listen tcp {self.listen}: {exc.strerror or exc}", 500) from None
        bound = sock.getsockname()
        self.listen = format_address(bound[0], bound[1])
        self.enabled = True
        log.info("started proxy %s on %s -> %s", self.name, self.listen, self.upstream)

    async def stop(self) -> None:
        if not self.enabled:
            return
        self.enabled = False
        if self._server is not None:
            self._server.close()
            self._server = None
        connections = list(self._connections.items())
        for conn, _task in connections:
            conn.close()
        for _conn, task in connections:
            task.cancel()
        if connections:
            await asyncio.gather(*(t for _, t in connections), return_exceptions=True)
        log.info("terminated proxy %s", self.name)

    async def _on_client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if not self.enabled:
            writer.transport.abort()
            return
        server = self._server
        try:
            host, port = split_host_port(self.upstream, "upstream")
            upstream = await asyncio.wait_for(
                asyncio.open_connection(host, port, limit=READ_SIZE), UPSTREAM_CONNECT_TIMEOUT
            )
        except asyncio.CancelledError:  # proxy or server stopping while we dialled
            writer.transport.abort()
            return
        except (OSError, TimeoutError, ApiError) as exc:
            log.warning(
                "proxy %s: unable to open connection to upstream %s: %s",
                self.name,
                self.upstream,
                exc,
            )
            writer.transport.abort()
            return
        if not self.enabled or self._server is not server:  # stopped while dialling
            writer.transport.abort()
            upstream[1].transport.abort()
            return
        conn = Connection(self, (reader, writer), upstream)
        task = asyncio.current_task()
        assert task is not None
        self._connections[conn] = task
        try:
            await conn.run()
        except asyncio.CancelledError:
            conn.close()
        finally:
            self._connections.pop(conn, None)

    # -- toxics -----------------------------------------------------------------------------
    def _each_pump(self, stream: str):
        direction = STREAMS.index(stream)
        return [conn.pumps[direction] for conn in self._connections]

    def add_toxic(self, spec: ToxicSpec) -> None:
        self.chains[STREAMS.index(spec.stream)].append(spec)
        now = asyncio.get_running_loop().time()
        for pump in self._each_pump(spec.stream):
            pump.link.add_toxic(spec, now)
            pump.flush()

    def update_toxic(self, spec: ToxicSpec) -> None:
        chain = self.chains[STREAMS.index(spec.stream)]
        chain[[t.name for t in chain].index(spec.name)] = spec
        now = asyncio.get_running_loop().time()
        for pump in self._each_pump(spec.stream):
            pump.link.update_toxic(spec, now)
            pump.flush()

    def remove_toxic(self, spec: ToxicSpec) -> None:
        chain = self.chains[STREAMS.index(spec.stream)]
        chain[:] = [t for t in chain if t.name != spec.name]
        now = asyncio.get_running_loop().time()
        for pump in self._each_pump(spec.stream):
            pump.link.remove_toxic(spec, now)
            pump.flush()

    def find_toxic(self, name: str) -> ToxicSpec | None:
        return next((t for t in self.toxics() if t.name == name), None)
