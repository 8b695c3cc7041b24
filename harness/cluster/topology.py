"""The cluster's shape as plain data: node names, labels, ports and one proxy per directed link.

Contract (pure, no docker, unit-testable):
- nodes are named "broker-<id>" (ids 1..N), "controller" and "client" (the harness's clients);
- every connection crosses a Toxiproxy proxy, one per directed link (src, dst):
  client -> broker-i      listens on CLIENT_PROXY_BASE + i, published on 127.0.0.1 of the host;
                          each broker advertises that host port to clients;
  broker-a -> broker-b    listens on PEER_PROXY_BASE + 100*a + b (a != b), upstream broker-b;
  broker-i -> controller  listens on CONTROLLER_PROXY_BASE + i, upstream controller;
- brokers reach their peers and the controller only through those proxy addresses (inside the
  docker network, by the toxiproxy container's alias), so a directed pair can be cut alone.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

LABEL_RUN = "highwater.run"
LABEL_ROLE = "highwater.role"
LABEL_NODE = "highwater.node"
LABEL_OWNER = "highwater.owner"  # "<host>:<pid>:<process start ticks>" or "detached"
LABEL_CREATED = "highwater.created"  # unix seconds

CLIENT = "client"
CONTROLLER = "controller"
TOXIPROXY = "toxiproxy"

BROKER_PORT = 9092  # every broker listens here inside its container
CONTROLLER_PORT = 9093
TOXIPROXY_API_PORT = 8474
CLIENT_PROXY_BASE = 19000
PEER_PROXY_BASE = 20000
CONTROLLER_PROXY_BASE = 29000
MAX_BROKERS = 99  # keeps the peer port plan (100*a + b) unambiguous

DATA_DIR = "/var/lib/highwater/data"

_RUN_ID = re.compile(r"[a-z0-9][a-z0-9_.-]{0,62}")
_BROKER = re.compile(r"broker-([1-9][0-9]*)")


class TopologyError(ValueError):
    """A node name, link or run id that does not fit the cluster."""


def check_run_id(run_id: str) -> str:
    if not _RUN_ID.fullmatch(run_id):
        raise TopologyError(
            f"run id {run_id!r}: use 1-63 lowercase letters, digits, '.', '_' or '-' "
            "(it names docker containers and networks)"
        )
    return run_id


def broker_name(broker_id: int) -> str:
    return f"broker-{broker_id}"


def broker_id(name: str) -> int:
    m = _BROKER.fullmatch(name)
    if not m:
        raise TopologyError(f"{name!r} is not a broker name (broker-<id>)")
    return int(m.group(1))


@dataclass(frozen=True)
class Link:
    """One directed connection and the proxy it crosses."""

    src: str
    dst: str
    proxy: str  # Toxiproxy proxy name
    listen_port: int  # port inside the toxiproxy container
    upstream: str  # host:port inside the docker network

    @property
    def listen(self) -> str:
        return f"0.0.0.0:{self.listen_port}"


@dataclass(frozen=True)
class Topology:
    brokers: int
    controller: bool

    def __post_init__(self) -> None:
        if not 1 <= self.brokers <= MAX_BROKERS:
            raise TopologyError(f"brokers={self.brokers}: must be 1..{MAX_BROKERS}")

    @property
    def broker_ids(self) -> list[int]:
        return list(range(1, self.brokers + 1))

    @property
    def broker_names(self) -> list[str]:
        return [broker_name(i) for i in self.broker_ids]

    @property
    def nodes(self) -> list[str]:
        """Every node a fault can name (the clients included)."""
        return [*self.broker_names, *([CONTROLLER] if self.controller else []), CLIENT]

    def check_node(self, name: str, *, allow_client: bool = True) -> str:
        if name == CLIENT and not allow_client:
            raise TopologyError("'client' is not a container: it has no process to act on")
        if name not in self.nodes:
            raise TopologyError(f"unknown node {name!r}; this cluster has {', '.join(self.nodes)}")
        return name

    def links(self) -> list[Link]:
        out = []
        for i in self.broker_ids:
            out.append(Link(CLIENT, broker_name(i), f"{CLIENT}-to-{broker_name(i)}",
                            CLIENT_PROXY_BASE + i, f"{broker_name(i)}:{BROKER_PORT}"))
        for a in self.broker_ids:
            for b in self.broker_ids:
                if a != b:
                    out.append(Link(broker_name(a), broker_name(b),
                                    f"{broker_name(a)}-to-{broker_name(b)}",
                                    PEER_PROXY_BASE + 100 * a + b,
                                    f"{broker_name(b)}:{BROKER_PORT}"))
        if self.controller:
            for i in self.broker_ids:
                out.append(Link(broker_name(i), CONTROLLER, f"{broker_name(i)}-to-{CONTROLLER}",
                                CONTROLLER_PROXY_BASE + i, f"{CONTROLLER}:{CONTROLLER_PORT}"))
        return out

    def link_map(self) -> dict[tuple[str, str], Link]:
        return {(link.src, link.dst): link for link in self.links()}

    def client_links(self) -> list[Link]:
        return [link for link in self.links() if link.src == CLIENT]

    def populate(self) -> list[dict[str, object]]:
        """The body of Toxiproxy's POST /populate (and of toxiproxy-server --config)."""
        return [{"name": link.proxy, "listen": link.listen, "upstream": link.upstream,
                 "enabled": True} for link in self.links()]

    def peer_address(self, src_id: int, dst_id: int) -> str:
        """Where broker src_id connects to reach broker dst_id: its own proxy for that pair."""
        return f"{TOXIPROXY}:{PEER_PROXY_BASE + 100 * src_id + dst_id}"

    def controller_address(self, src_id: int) -> str:
        return f"{TOXIPROXY}:{CONTROLLER_PROXY_BASE + src_id}"
