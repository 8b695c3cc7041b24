"""Command line of the Toxiproxy-compatible server (`highwater toxiproxy-server`).

Contract: listens for the HTTP API on --host/--port (Toxiproxy's defaults: localhost:8474), prints
one line `toxiproxy-server listening on HOST:PORT` to stdout once it accepts requests (with
--port 0 that line carries the real port), optionally creates proxies from a --config JSON file
(the body of POST /populate, like toxiproxy-server -config), and exits 0 on SIGTERM/SIGINT
after closing every proxy.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import signal
import sys


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default="localhost", help="API listen host (default localhost)")
    parser.add_argument("--port", type=int, default=8474, help="API port (default 8474; 0: any)")
    parser.add_argument("--config", help="JSON file of proxies to create at start (/populate body)")
    parser.add_argument(
        "--seed",
        type=int,
        default=None,
        help="seed for toxicity draws, jitter and slicing (default: random)",
    )
    parser.add_argument(
        "--log-level",
        default=os.environ.get("LOG_LEVEL", "info"),
        help="debug, info, warning, error (default info, or $LOG_LEVEL)",
    )


async def serve(args: argparse.Namespace) -> int:
    from harness.toxiproxy_server.api import ApiServer
    from harness.toxiproxy_server.http import serve_http

    api = ApiServer(seed=args.seed)
    if args.config:
        try:
            with open(args.config, "rb") as f:
                body = f.read()
        except OSError as exc:
            print(f"toxiproxy-server: cannot read --config {args.config}: {exc}", file=sys.stderr)
            return 2
        response = await api.handle("POST", "/populate", body)
        if response.status != 201:
            print(
                f"toxiproxy-server: --config {args.config}: {response.body.decode().strip()}",
                file=sys.stderr,
            )
            return 2
        count = len(json.loads(response.body)["proxies"])
        logging.getLogger("toxiproxy").info("populated %d proxies from %s", count, args.config)
    try:
        server = await serve_http(api, args.host, args.port)
    except OSError as exc:
        print(f"toxiproxy-server: cannot listen on {args.host}:{args.port}: {exc}", file=sys.stderr)
        await api.shutdown()
        return 2
    host, port = server.sockets[0].getsockname()[:2]
    print(f"toxiproxy-server listening on {host}:{port}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
    finally:
        server.close()
        await api.shutdown()
    return 0


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(
        level=getattr(logging, str(args.log_level).upper(), logging.INFO),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    return asyncio.run(serve(args))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="toxiproxy-server", description=__doc__.splitlines()[0])
    add_arguments(parser)
    return run(parser.parse_args(argv))
