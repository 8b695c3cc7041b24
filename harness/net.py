"""Network faults on a cluster's links, through the Toxiproxy HTTP API (toxiproxy-python).

Contract:
- Net(api_host, api_port, links) where links maps (src, dst) node names to the Link (proxy) that
  carries connections opened by src to dst (harness.cluster.topology). Node names: "broker-<id>",
  "controller", "client".
- partition(a, b): a `timeout` toxic with timeout=0 on both streams of every proxy between a and
  b (a->b and b->a, whichever exist): bytes are held, connections stay open, as in a real
  partition (no RST that would tell the peer at once). heal(a, b) removes them; note that
  removing a timeout toxic closes the connections it held (Toxiproxy's behaviour), so clients
  reconnect after a heal.
- isolate(node): partition(node, x) for every other node, the clients included.
- latency(src, dst, ms, jitter_ms), bandwidth(src, dst, kbps), blackhole(src, dst,
  close_after_ms) (`timeout` toxic), reset(src, dst, after_ms) (`reset_peer`), slice(src, dst,
  bytes, variation, delay_us) (`slicer`) and limit_data(src, dst, bytes) (`limit_data`) act on the
  bytes flowing from src to dst only: the upstream stream of proxy src->dst, and the downstream
  stream of proxy dst->src (e.g. broker-1 -> client). Each is one toxic named
  "<kind>-<stream>". clear(src, dst, kinds) removes those; heal_all() resets every proxy
  (Toxiproxy's POST /reset: every toxic removed, every proxy enabled).
- Unknown nodes or pairs with no proxy between them raise NetError naming them. Repeating a
  fault replaces it (toxics are named by kind and stream).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from typing import Any

from harness.cluster.topology import Link

# toxiproxy-python keeps the server address in class attributes (one server per process), so
# every call sets it under this lock: several Net objects (clusters) can coexist.
_API_LOCK = threading.RLock()

PARTITION = "partition"


class NetError(ValueError):
    """A link fault named a node or a pair this cluster has no proxy for."""


class Net:
    def __init__(self, api_host: str, api_port: int, links: Mapping[tuple[str, str], Link]):
        self.api_host = api_host
        self.api_port = api_port
        self.links = dict(links)
        self.nodes = sorted({n for pair in self.links for n in pair})

    # --- toxiproxy-python plumbing --------------------------------------------------------------

    def _call(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        from toxiproxy.api import APIConsumer

        with _API_LOCK:
            APIConsumer.host, APIConsumer.port = self.api_host, self.api_port
            return fn(*args, **kwargs)

    def _server(self) -> Any:
        from toxiproxy import Toxiproxy

        return Toxiproxy()

    def _proxy(self, link: Link) -> Any:
        from toxiproxy.proxy import Proxy

        return Proxy(name=link.proxy, upstream=link.upstream, enabled=True, listen=link.listen)

    def _add_toxic(self, link: Link, name: str, stream: str, kind: str,
                   attributes: dict[str, int]) -> None:
        from toxiproxy.exceptions import NotFound

        proxy = self._proxy(link)
        # Replace, not stack: a second latency on the same stream means "now this latency".
        try:
            self._call(proxy.destroy_toxic, name)
        except NotFound:
            pass
        self._call(proxy.add_toxic, name=name, type=kind, stream=stream, toxicity=1.0,
                   attributes=attributes)

    def _remove_toxic(self, link: Link, name: str) -> None:
        from toxiproxy.exceptions import NotFound

        try:
            self._call(self._proxy(link).destroy_toxic, name)
        except NotFound:
            pass

    # --- setup ----------------------------------------------------------------------------------

    def create_proxies(self) -> None:
        """Create every link's proxy (idempotent: existing identical proxies stay)."""
        body = [{"name": link.proxy, "upstream": link.upstream, "listen": link.listen,
                 "enabled": True} for link in self.links.values()]
        self._call(lambda: self._server().populate(body))

    def version(self) -> str:
        content = self._call(lambda: self._server().version())
        return content.decode() if isinstance(content, bytes) else str(content or "")

    def proxies(self) -> dict[str, Any]:
        return self._call(lambda: self._server().proxies())

    def toxics(self) -> dict[str, list[str]]:
        """Proxy name -> names of its toxics (for status and tests)."""
        out = {}
        for link in self.links.values():
            out[link.proxy] = sorted(self._call(lambda link=link: self._proxy(link).toxics()))
        return out

    # --- link lookup ----------------------------------------------------------------------------

    def _check(self, *nodes: str) -> None:
        for n in nodes:
            if n not in self.nodes:
                raise NetError(f"unknown node {n!r}; links exist between {', '.join(self.nodes)}")

    def _between(self, a: str, b: str) -> list[Link]:
        self._check(a, b)
        if a == b:
            raise NetError(f"a node cannot be partitioned from itself ({a!r})")
        found = [self.links[p] for p in ((a, b), (b, a)) if p in self.links]
        if not found:
            raise NetError(f"no connection between {a!r} and {b!r} crosses a proxy")
        return found

    def _directions(self, src: str, dst: str) -> list[tuple[Link, str]]:
        """Every (proxy, stream) carrying bytes from src to dst. Between two brokers both proxies
        do: upstream of src->dst (src's requests) and downstream of dst->src (src's responses,
        e.g. a leader's fetch responses to follower dst), so a one-direction fault covers both."""
        self._check(src, dst)
        out = []
        if (src, dst) in self.links:
            out.append((self.links[(src, dst)], "upstream"))
        if (dst, src) in self.links:
            out.append((self.links[(dst, src)], "downstream"))
        if not out:
            raise NetError(f"no proxy carries bytes from {src!r} to {dst!r}")
        return out

    # --- faults ---------------------------------------------------------------------------------

    def partition(self, a: str, b: str) -> None:
        for link in self._between(a, b):
            for stream in ("upstream", "downstream"):
                self._add_toxic(link, f"{PARTITION}-{stream}", stream, "timeout", {"timeout": 0})

    def heal(self, a: str, b: str) -> None:
        for link in self._between(a, b):
            for stream in ("upstream", "downstream"):
                self._remove_toxic(link, f"{PARTITION}-{stream}")

    def _others(self, node: str) -> Iterable[str]:
        self._check(node)
        return [n for n in self.nodes if n != node and self.linked(node, n)]

    def linked(self, a: str, b: str) -> bool:
        return (a, b) in self.links or (b, a) in self.links

    def isolate(self, node: str) -> list[str]:
        """Cut node from everyone it has a link with (clients too); returns those nodes."""
        others = list(self._others(node))
        for other in others:
            self.partition(node, other)
        return others

    def rejoin(self, node: str) -> None:
        for other in self._others(node):
            self.heal(node, other)

    def latency(self, src: str, dst: str, ms: int, jitter_ms: int = 0) -> None:
        if ms < 0 or jitter_ms < 0:
            raise NetError(f"latency {src}->{dst}: ms={ms} and jitter_ms={jitter_ms} must be >= 0")
        for link, stream in self._directions(src, dst):
            self._add_toxic(link, f"latency-{stream}", stream, "latency",
                            {"latency": ms, "jitter": jitter_ms})

    def bandwidth(self, src: str, dst: str, kbps: int) -> None:
        """Limit src->dst to kbps kilobytes per second (Toxiproxy's `rate`, KB/s)."""
        if kbps < 1:
            raise NetError(f"bandwidth {src}->{dst}: kbps={kbps} must be >= 1")
        for link, stream in self._directions(src, dst):
            self._add_toxic(link, f"bandwidth-{stream}", stream, "bandwidth", {"rate": kbps})

    def blackhole(self, src: str, dst: str, close_after_ms: int = 0) -> None:
        """Drop every byte from src to dst (Toxiproxy `timeout`); with close_after_ms > 0 each
        connection is closed that long after the toxic reached it, with 0 never (it is closed
        when the toxic is removed)."""
        self._link_toxic("blackhole", src, dst, "timeout", {"timeout": close_after_ms})

    def reset(self, src: str, dst: str, after_ms: int = 0) -> None:
        """Reset (RST) each connection after_ms after its next bytes from src (`reset_peer`)."""
        self._link_toxic("reset", src, dst, "reset_peer", {"timeout": after_ms})

    def slice(self, src: str, dst: str, bytes: int, variation: int = 0, delay_us: int = 0
              ) -> None:
        """Cut the bytes from src to dst into pieces of about `bytes` +- variation, one piece
        every delay_us microseconds (`slicer`)."""
        if bytes < 1:
            raise NetError(f"slice {src}->{dst}: bytes={bytes} must be >= 1")
        self._link_toxic("slice", src, dst, "slicer",
                         {"average_size": bytes, "size_variation": variation, "delay": delay_us})

    def limit_data(self, src: str, dst: str, bytes: int) -> None:
        """Close each connection once `bytes` bytes from src to dst went through (`limit_data`)."""
        self._link_toxic("limit-data", src, dst, "limit_data", {"bytes": bytes})

    def _link_toxic(self, kind: str, src: str, dst: str, toxic: str,
                    attributes: dict[str, int]) -> None:
        bad = {k: v for k, v in attributes.items() if v < 0}
        if bad:
            raise NetError(f"{kind} {src}->{dst}: {bad} must be >= 0")
        for link, stream in self._directions(src, dst):
            self._add_toxic(link, f"{kind}-{stream}", stream, toxic, attributes)

    def clear(self, src: str, dst: str, kinds: Iterable[str] = ("latency", "bandwidth")) -> None:
        """Remove the faults of those kinds (latency, bandwidth, blackhole, reset, slice,
        limit-data) on bytes from src to dst."""
        for link, stream in self._directions(src, dst):
            for kind in kinds:
                self._remove_toxic(link, f"{kind}-{stream}")

    def heal_all(self) -> None:
        self._call(lambda: self._server().reset())

