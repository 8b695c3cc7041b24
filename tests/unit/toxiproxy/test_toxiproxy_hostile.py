"""The Toxiproxy server's request decoders under hostile input (issue 15): random and mutated
JSON bodies through ApiServer never produce a 5xx and every 4xx carries a JSON message; at the
HTTP layer, garbage request lines, lying Content-Lengths and oversized bodies get 400/413/431
or a closed connection, and the server keeps serving."""

from __future__ import annotations

import asyncio
import json
import random

from harness.toxiproxy_server.api import ApiServer
from harness.toxiproxy_server.http import MAX_BODY_BYTES, serve_http

_VALUES = [None, True, 0, -1, 2**70, 1.5, "x", "", [], {}, [1], {"a": 1}, "127.0.0.1:1",
           "latency", "upstream", "downstream", float("inf")]  # fmt: skip
_KEYS = ["name", "listen", "upstream", "enabled", "type", "stream", "toxicity", "attributes",
         "latency", "jitter", "rate", "timeout", "bytes", "delay", "size_variation"]  # fmt: skip
_ROUTES = [("POST", "/proxies"), ("POST", "/populate"), ("POST", "/proxies/p"),
           ("POST", "/proxies/p/toxics"), ("POST", "/proxies/p/toxics/t"), ("POST", "/reset"),
           ("GET", "/proxies/%ff"), ("DELETE", "/proxies/p/toxics/x")]  # fmt: skip
_PROXY = json.dumps({"name": "p", "listen": "127.0.0.1:0", "upstream": "127.0.0.1:9"}).encode()


def _obj(rng: random.Random, depth: int = 0) -> dict:
    return {rng.choice(_KEYS): _obj(rng, depth + 1) if depth < 2 and rng.random() < 0.2
            else rng.choice(_VALUES) for _ in range(rng.randint(0, 6))}  # fmt: skip


def _body(rng: random.Random) -> bytes:
    k = rng.random()
    if k < 0.4:
        return json.dumps(_obj(rng)).encode()
    if k < 0.5:
        return json.dumps([_obj(rng) for _ in range(rng.randint(0, 3))]).encode()
    if k < 0.7:
        return bytes(rng.getrandbits(8) for _ in range(rng.randint(0, 30)))
    b = bytearray(json.dumps(_obj(rng)).encode())
    if b:
        b[rng.randrange(len(b))] = rng.getrandbits(8)
    return bytes(b)


def test_api_answers_fuzzed_bodies_with_4xx_json_never_5xx() -> None:
    async def main() -> list[tuple[int, bytes]]:
        rng = random.Random(15)
        api = ApiServer(seed=1)
        assert (await api.handle("POST", "/proxies", _PROXY)).status == 201
        seen: list[tuple[int, bytes]] = []
        try:
            for _ in range(3000):
                method, path = rng.choice(_ROUTES)
                r = await api.handle(method, path, _body(rng))
                seen.append((r.status, r.body))
                if "p" not in api.proxies:
                    await api.handle("POST", "/proxies", _PROXY)
        finally:
            await api.shutdown()
        return seen

    seen = asyncio.run(main())
    assert not [s for s, _ in seen if s >= 500]
    errors = [(s, b) for s, b in seen if 400 <= s < 500 and s not in (404, 405)]
    assert len(errors) > 1000  # most fuzzed bodies are wrong, and said so
    for _status, body in errors:
        assert json.loads(body)["error"]  # a message naming what is wrong


async def _exchange(port: int, data: bytes) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(data)
        await writer.drain()
        return await asyncio.wait_for(reader.read(65536), 10)
    finally:
        writer.close()


def test_http_layer_refuses_garbage_and_keeps_serving() -> None:
    async def main() -> dict[str, bytes]:
        api = ApiServer(seed=1)
        server = await serve_http(api, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        out = {}
        try:
            cases = {
                "garbage": b"\x00\xff\xfe garbage\r\n\r\n",
                "bad-length": b"POST /proxies HTTP/1.1\r\nContent-Length: -5\r\n\r\n",
                "huge-length": b"POST /proxies HTTP/1.1\r\nContent-Length: %d\r\n\r\n"
                % (MAX_BODY_BYTES + 1),
                "bad-chunk": b"POST /proxies HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
                b"zz\r\n",
                "bad-json": b"POST /proxies HTTP/1.1\r\nContent-Length: 5\r\n\r\n{nope",
                "huge-header": b"GET /version HTTP/1.1\r\nX: " + b"a" * 70_000 + b"\r\n\r\n",
            }
            for name, data in cases.items():
                out[name] = await _exchange(port, data)
            out["after"] = await _exchange(port, b"GET /version HTTP/1.1\r\n\r\n")
        finally:
            server.close()
            await server.wait_closed()
            await api.shutdown()
        return out

    out = asyncio.run(main())
    assert out["garbage"].startswith(b"HTTP/1.1 400")
    assert out["bad-length"].startswith(b"HTTP/1.1 400") and b"Content-Length" in out["bad-length"]
    assert out["huge-length"].startswith(b"HTTP/1.1 413")
    assert out["bad-chunk"].startswith(b"HTTP/1.1 400") and b"chunk" in out["bad-chunk"]
    assert out["bad-json"].startswith(b"HTTP/1.1 400") and b"error" in out["bad-json"]
    assert out["huge-header"].startswith(b"HTTP/1.1 431")
    assert out["after"].startswith(b"HTTP/1.1 200")
