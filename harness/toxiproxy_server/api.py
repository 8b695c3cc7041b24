"""Toxiproxy 2.x HTTP API: routes, JSON shapes and status codes (api.go), over a proxy registry.

Contract: `ApiServer.handle(method, path, body, user_agent)` returns a `Response`; it never raises.
Routes and codes, as Toxiproxy:
  GET /proxies 200 {name: proxy}          POST /proxies 201 proxy (409 exists, 400 bad body)
  POST /populate 201 {"proxies": [...]}   GET /proxies/{p} 200     POST|PATCH /proxies/{p} 200
  DELETE /proxies/{p} 204                 GET /proxies/{p}/toxics 200 [toxic]
  POST /proxies/{p}/toxics 200 toxic      GET|POST|PATCH /proxies/{p}/toxics/{t} 200
  DELETE /proxies/{p}/toxics/{t} 204      POST /reset 204          GET /version 200
A proxy is {"name","listen","upstream","enabled","toxics":[...]}; a toxic is
{"attributes":{...},"name","type","stream","toxicity"}; errors are {"error": msg, "status": code}.
Unknown paths are 404, known paths with another method 405, browsers (User-Agent Mozilla/) 403.
Requests are handled one at a time (Toxiproxy locks its collections), so edits never interleave.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from harness.toxiproxy_server import VERSION
from harness.toxiproxy_server.model import (
    PROXY_EXISTS,
    PROXY_NOT_FOUND,
    TOXIC_NOT_FOUND,
    ApiError,
    ProxyInput,
    decode_json,
    error,
    missing_field,
    parse_new_toxic,
    parse_proxy,
    parse_toxic_update,
    split_host_port,
)
from harness.toxiproxy_server.proxy import Proxy

log = logging.getLogger("toxiproxy.api")

JSON = "application/json"


@dataclass(slots=True)
class Response:
    status: int
    body: bytes = b""
    content_type: str = JSON


def json_response(status: int, payload: Any) -> Response:
    return Response(status, json.dumps(payload).encode())


def error_response(exc: ApiError) -> Response:
    # Go's http.Error appends a newline to the JSON it is given.
    return Response(exc.status, json.dumps(exc.body()).encode() + b"\n")


_SEGMENT = r"([^/]+)"
ROUTES: list[tuple[re.Pattern[str], dict[str, str]]] = [
    (re.compile(r"/reset"), {"POST": "reset"}),
    (re.compile(r"/proxies"), {"GET": "proxy_index", "POST": "proxy_create"}),
    (re.compile(r"/populate"), {"POST": "populate"}),
    (
        re.compile(rf"/proxies/{_SEGMENT}"),
        {
            "GET": "proxy_show",
            "POST": "proxy_update",
            "PATCH": "proxy_update",
            "DELETE": "proxy_delete",
        },
    ),
    (re.compile(rf"/proxies/{_SEGMENT}/toxics"), {"GET": "toxic_index", "POST": "toxic_create"}),
    (
        re.compile(rf"/proxies/{_SEGMENT}/toxics/{_SEGMENT}"),
        {
            "GET": "toxic_show",
            "POST": "toxic_update",
            "PATCH": "toxic_update",
            "DELETE": "toxic_delete",
        },
    ),
    (re.compile(r"/version"), {"GET": "version"}),
]


class ApiServer:
    def __init__(self, seed: int | None = None) -> None:
        self.proxies: dict[str, Proxy] = {}
        self.rng = random.Random(seed)
        self._lock = asyncio.Lock()

    async def handle(self, method: str, path: str, body: bytes, user_agent: str = "") -> Response:
        if user_agent.startswith("Mozilla/"):
            return Response(403, b"User agent not allowed\n", "text/plain; charset=utf-8")
        path = path.split("?", 1)[0]
        for pattern, methods in ROUTES:
            match = pattern.fullmatch(path)
            if match is None:
                continue
            handler_name = methods.get(method)
            if handler_name is None:
                return Response(405, b"", "text/plain; charset=utf-8")
            args = [unquote(a) for a in match.groups()]
            async with self._lock:
                try:
                    return await getattr(self, handler_name)(body, *args)
                except ApiError as exc:
                    return error_response(exc)
                except Exception as exc:  # a bug must not take the server down
                    log.exception("%s %s failed", method, path)
                    return error_response(ApiError(f"internal error: {exc}", 500))
        return Response(404, b"404 page not found\n", "text/plain; charset=utf-8")

    def _proxy(self, name: str) -> Proxy:
        proxy = self.proxies.get(name)
        if proxy is None:
            raise error(PROXY_NOT_FOUND)
        return proxy

    # -- proxies ----------------------------------------------------------------------------
    async def proxy_index(self, body: bytes) -> Response:
        return json_response(200, {name: p.to_json() for name, p in self.proxies.items()})

    def _new_proxy(self, given: ProxyInput, where: str = "") -> Proxy:
        if not given.name:
            raise missing_field(f"name{where}")
        if not given.upstream:
            raise missing_field(f"upstream{where}")
        split_host_port(given.upstream, f"upstream{where}")
        listen = given.listen or ":0"
        split_host_port(listen, f"listen{where}")
        return Proxy(given.name, listen, given.upstream, self.rng)

    async def proxy_create(self, body: bytes) -> Response:
        given = parse_proxy(decode_json(body))
        proxy = self._new_proxy(given)
        if proxy.name in self.proxies:
            raise error(PROXY_EXISTS)
        if given.enabled is not False:
            await proxy.start()
        self.proxies[proxy.name] = proxy
        return json_response(201, proxy.to_json())

    async def populate(self, body: bytes) -> Response:
        data = decode_json(body)
        if not isinstance(data, list):
            raise ApiError("bad request body: expected a JSON array of proxies", 400)
        # Validate everything before touching anything, as Toxiproxy does.
        planned: list[tuple[Proxy, bool]] = []
        seen: set[str] = set()
        for i, raw in enumerate(data, start=1):
            where = f" at proxy {i}"
            given = parse_proxy(raw, where=f"of proxy {i} ")
            proxy = self._new_proxy(given, where)
            if proxy.name in seen:
                raise ApiError(f"bad request body: duplicate proxy name {proxy.name!r}", 400)
            seen.add(proxy.name)
            planned.append((proxy, given.enabled is not False))
        result: list[Proxy] = []
        for proxy, enabled in planned:
            existing = self.proxies.get(proxy.name)
            if existing is not None:
                if existing.listen == proxy.listen and existing.upstream == proxy.upstream:
                    result.append(existing)
                    continue
                await existing.stop()
                del self.proxies[proxy.name]
            if enabled:
                try:
                    await proxy.start()
                except ApiError as exc:
                    payload = {**exc.body(), "proxies": [p.to_json() for p in result]}
                    return json_response(exc.status, payload)
            self.proxies[proxy.name] = proxy
            result.append(proxy)
        return json_response(201, {"proxies": [p.to_json() for p in result]})

    async def proxy_show(self, body: bytes, name: str) -> Response:
        return json_response(200, self._proxy(name).to_json())

    async def proxy_update(self, body: bytes, name: str) -> Response:
        proxy = self._proxy(name)
        given = parse_proxy(decode_json(body))
        listen = given.listen if given.listen is not None else proxy.listen
        upstream = given.upstream if given.upstream is not None else proxy.upstream
        enabled = given.enabled if given.enabled is not None else proxy.enabled
        split_host_port(listen, "listen")
        split_host_port(upstream, "upstream")
        if listen != proxy.listen or upstream != proxy.upstream:
            await proxy.stop()  # changing either drops every connection, as Toxiproxy does
            proxy.listen, proxy.upstream = listen, upstream
        if enabled and not proxy.enabled:
            await proxy.start()
        elif not enabled and proxy.enabled:
            await proxy.stop()
        return json_response(200, proxy.to_json())

    async def proxy_delete(self, body: bytes, name: str) -> Response:
        proxy = self._proxy(name)
        await proxy.stop()
        del self.proxies[name]
        return Response(204)

    async def reset(self, body: bytes) -> Response:
        for proxy in self.proxies.values():
            await proxy.start()
            for spec in proxy.toxics():
                proxy.remove_toxic(spec)
        return Response(204)

    # -- toxics -----------------------------------------------------------------------------
    async def toxic_index(self, body: bytes, name: str) -> Response:
        return json_response(200, [t.to_json() for t in self._proxy(name).toxics()])

    async def toxic_create(self, body: bytes, name: str) -> Response:
        proxy = self._proxy(name)
        spec = parse_new_toxic(decode_json(body), {t.name for t in proxy.toxics()})
        proxy.add_toxic(spec)
        return json_response(200, spec.to_json())

    def _toxic(self, proxy: Proxy, toxic_name: str):
        spec = proxy.find_toxic(toxic_name)
        if spec is None:
            raise error(TOXIC_NOT_FOUND)
        return spec

    async def toxic_show(self, body: bytes, name: str, toxic_name: str) -> Response:
        return json_response(200, self._toxic(self._proxy(name), toxic_name).to_json())

    async def toxic_update(self, body: bytes, name: str, toxic_name: str) -> Response:
        proxy = self._proxy(name)
        current = self._toxic(proxy, toxic_name)
        spec = parse_toxic_update(decode_json(body), current)
        proxy.update_toxic(spec)
        return json_response(200, spec.to_json())

    async def toxic_delete(self, body: bytes, name: str, toxic_name: str) -> Response:
        proxy = self._proxy(name)
        proxy.remove_toxic(self._toxic(proxy, toxic_name))
        return Response(204)

    async def version(self, body: bytes) -> Response:
        payload = json.dumps({"version": VERSION}).encode() + b"\n"
        return Response(200, payload, "application/json;charset=utf-8")

    async def shutdown(self) -> None:
        async with self._lock:
            for proxy in self.proxies.values():
                await proxy.stop()
