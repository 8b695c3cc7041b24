"""A small HTTP/1.1 server on asyncio streams, enough for Toxiproxy clients (no framework needed).

Contract: `serve_http(api, host, port)` returns a started `asyncio.Server` that parses each request
(request line, headers, a Content-Length or chunked body, `Expect: 100-continue`), hands it to
`api.handle(...)` and writes the response with Content-Length. Connections are kept alive unless
the client asks otherwise. Malformed requests get a 400 naming what was wrong and the connection
is closed; oversized ones 413/431. Slow or idle clients are dropped after a timeout.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from http import HTTPStatus

from harness.toxiproxy_server.api import ApiServer, Response

log = logging.getLogger("toxiproxy.http")

MAX_HEADER_BYTES = 64 * 1024
MAX_BODY_BYTES = 8 * 1024 * 1024
IDLE_TIMEOUT = 60.0  # as Toxiproxy's IdleTimeout
READ_TIMEOUT = 15.0  # as Toxiproxy's ReadTimeout


class BadRequest(Exception):
    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


def _encode(response: Response, keep_alive: bool) -> bytes:
    reason = HTTPStatus(response.status).phrase
    headers = [f"HTTP/1.1 {response.status} {reason}"]
    if response.status != 204:
        headers.append(f"Content-Type: {response.content_type}")
        headers.append(f"Content-Length: {len(response.body)}")
    headers.append("Connection: keep-alive" if keep_alive else "Connection: close")
    body = b"" if response.status == 204 else response.body
    return ("\r\n".join(headers) + "\r\n\r\n").encode("latin-1") + body


async def _read_chunked(reader: asyncio.StreamReader) -> bytes:
    body = bytearray()
    while True:
        line = await reader.readuntil(b"\r\n")
        size_text = line.split(b";", 1)[0].strip()
        try:
            size = int(size_text, 16)
        except ValueError:
            raise BadRequest(f"bad chunk size {size_text[:20]!r} in chunked body") from None
        if size == 0:
            while (await reader.readuntil(b"\r\n")) != b"\r\n":  # trailers
                pass
            return bytes(body)
        if len(body) + size > MAX_BODY_BYTES:
            raise BadRequest("request body too large", 413)
        body += await reader.readexactly(size)
        if await reader.readexactly(2) != b"\r\n":
            raise BadRequest("chunk not terminated by CRLF")


async def _read_request(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> tuple[str, str, dict[str, str], bytes, str]:
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), IDLE_TIMEOUT)
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        raise BadRequest(f"malformed request line {lines[0][:100]!r}")
    method, target, version = parts
    headers: dict[str, str] = {}
    for line in lines[1:]:
        if not line:
            continue
        name, sep, value = line.partition(":")
        if not sep or not name.strip():
            raise BadRequest(f"malformed header line {line[:100]!r}")
        headers[name.strip().lower()] = value.strip()
    if headers.get("expect", "").lower() == "100-continue":
        writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
    if "chunked" in headers.get("transfer-encoding", "").lower():
        body = await asyncio.wait_for(_read_chunked(reader), READ_TIMEOUT)
    else:
        length_text = headers.get("content-length", "0")
        if not length_text.isdigit():
            raise BadRequest(f"bad Content-Length {length_text[:20]!r}")
        length = int(length_text)
        if length > MAX_BODY_BYTES:
            raise BadRequest("request body too large", 413)
        body = await asyncio.wait_for(reader.readexactly(length), READ_TIMEOUT)
    return method, target, headers, body, version


async def _serve_connection(
    api: ApiServer, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> None:
    try:
        while True:
            try:
                method, target, headers, body, version = await _read_request(reader, writer)
            except BadRequest as exc:
                payload = f"{exc}\n".encode()
                writer.write(_encode(Response(exc.status, payload, "text/plain"), False))
                await writer.drain()
                return
            except asyncio.LimitOverrunError:
                writer.write(
                    _encode(Response(431, b"request headers too large\n", "text/plain"), False)
                )
                await writer.drain()
                return
            except (asyncio.IncompleteReadError, TimeoutError, ConnectionError):
                return
            connection = headers.get("connection", "").lower()
            keep_alive = connection != "close" and (
                version != "HTTP/1.0" or connection == "keep-alive"
            )
            response = await api.handle(method, target, body, headers.get("user-agent", ""))
            log.debug("%s %s -> %d", method, target, response.status)
            writer.write(_encode(response, keep_alive))
            await writer.drain()
            if not keep_alive:
                return
    except (ConnectionError, OSError):
        pass
    except asyncio.CancelledError:
        pass  # server shutting down; a top-level handler ending quietly is the point
    finally:
        with contextlib.suppress(Exception):
            writer.close()


async def serve_http(api: ApiServer, host: str, port: int) -> asyncio.Server:
    return await asyncio.start_server(
        lambda r, w: _serve_connection(api, r, w), host, port, limit=MAX_HEADER_BYTES
    )
