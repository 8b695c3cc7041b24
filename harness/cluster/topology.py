"""The cluster's shape as plain data: node names, labels, ports and one proxy per directed link.

Contract (pure, no docker, unit-testable):
- nodes are named "broker-<id>" (ids 1..N), "controller-<c>" (the KRaft controller quorum,
  c = 1..C, C <= MAX_CONTROLLERS) and "client" (the harness's clients); controller c runs with
  node.id `controller_node_id(c)` = CONTROLLER_NODE_ID_BASE + c, because KRaft node ids are
  unique across brokers and controllers (a controller refuses a broker with its own id);
  plans, conditions and reports name controllers by c;
- every connection crosses a Toxiproxy proxy, one per directed link (src, dst):
  client -> broker-i               listens on CLIENT_PROXY_BASE + i, published on 127.0.0.1 of
                                   the host; each broker advertises that host port to clients;
  broker-a -> broker-b             listens on PEER_PROXY_BASE + 100*a + b (a != b);
  broker-i -> controller-c         listens on CONTROLLER_PROXY_BASE + 10*i + c;
  controller-a -> controller-b     listens on QUORUM_PROXY_BASE + 10*a + b (a != b: Raft's
                                   Vote, BeginQuorumEpoch, EndQuorumEpoch, Fetch between voters);
- brokers reach their peers and the controllers, and controllers each other, only through those
  proxy addresses (inside the docker network, by the toxiproxy container's alias), so a directed
  pair can be cut alone: `voters(c)` is controller c's controller.quorum.voters (its own entry
  direct: it is never dialled), `controller_bootstrap(i)` broker i's
  controller.quorum.bootstrap.servers.
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
CONTROLLER_PROXY_BASE = 30000  # above the peer plan (20000 + 100*a + b <= 29999)
QUORUM_PROXY_BASE = 31000
MAX_BROKERS = 99  # keeps the peer port plan (100*a + b) unambiguous
MAX_CONTROLLERS = 9  # keeps the controller port plans (10*i + c) unambiguous
CONTROLLER_NODE_ID_BASE = 3000  # controller c is node 3000 + c (README's example voters too)

DATA_DIR = "/var/lib/highwater/data"

_RUN_ID = re.compile(r"[a-z0-9][a-z0-9_.-]{0,62}")
_BROKER = re.compile(r"broker-([1-9][0-9]*)")
_CONTROLLER = re.compile(r"controller-([1-9])")


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


def controller_name(controller_id: int) -> str:
    return f"{CONTROLLER}-{controller_id}"


def controller_id(name: str) -> int:
    m = _CONTROLLER.fullmatch(name)
    if not m:
        raise TopologyError(f"{name!r} is not a controller name (controller-<id>)")
    return int(m.group(1))


def controller_node_id(c: int) -> int:
    """Controller c's KRaft node.id (its voter id in controller.quorum.voters)."""
    return CONTROLLER_NODE_ID_BASE + c


def controller_index(node_id: int) -> int | None:
    """The c of a controller's KRaft node id, None for an id outside the plan."""
    c = node_id - CONTROLLER_NODE_ID_BASE
    return c if 1 <= c <= MAX_CONTROLLERS else None


def is_controller(name: str) -> bool:
    return _CONTROLLER.fullmatch(name) is not None


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
    # the KRaft quorum's size; 0: no controller container, each broker runs alone in combined
    # mode (its own one-voter controller in its process: broker_app/server/combined.py)
    controllers: int = 0

    def __post_init__(self) -> None:
        if not 1 <= self.brokers <= MAX_BROKERS:
            raise TopologyError(f"brokers={self.brokers}: must be 1..{MAX_BROKERS}")
        if isinstance(self.controllers, bool) or not 0 <= self.controllers <= MAX_CONTROLLERS:
            raise TopologyError(f"controllers={self.controllers!r}: must be 0..{MAX_CONTROLLERS}")

    @property
    def controller_ids(self) -> list[int]:
        return list(range(1, self.controllers + 1))

    @property
    def controller_names(self) -> list[str]:
        return [controller_name(c) for c in self.controller_ids]

    @property
    def broker_ids(self) -> list[int]:
        return list(range(1, self.brokers + 1))

    @property
    def broker_names(self) -> list[str]:
        return [broker_name(i) for i in self.broker_ids]

    @property
    def nodes(self) -> list[str]:
        """Every node a fault can name (the clients included)."""
        return [*self.broker_names, *self.controller_names, CLIENT]

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
        for i in self.broker_ids:
            for c in self.controller_ids:
                out.append(Link(broker_name(i), controller_name(c),
                                f"{broker_name(i)}-to-{controller_name(c)}",
                                self._controller_port(i, c),
                                f"{controller_name(c)}:{CONTROLLER_PORT}"))
        for a in self.controller_ids:
            for b in self.controller_ids:
                if a != b:
                    out.append(Link(controller_name(a), controller_name(b),
                                    f"{controller_name(a)}-to-{controller_name(b)}",
                                    self._quorum_port(a, b),
                                    f"{controller_name(b)}:{CONTROLLER_PORT}"))
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

    @staticmethod
    def _controller_port(broker_id: int, controller_id: int) -> int:
        return CONTROLLER_PROXY_BASE + 10 * broker_id + controller_id

    @staticmethod
    def _quorum_port(src_id: int, dst_id: int) -> int:
        return QUORUM_PROXY_BASE + 10 * src_id + dst_id

    def controller_address(self, broker_id: int, controller_id: int) -> str:
        """Where broker `broker_id` connects to reach controller `controller_id`."""
        return f"{TOXIPROXY}:{self._controller_port(broker_id, controller_id)}"

    def controller_bootstrap(self, broker_id: int) -> str:
        """Broker `broker_id`'s controller.quorum.bootstrap.servers: its proxy to each
        controller, controller 1 first."""
        return ",".join(self.controller_address(broker_id, c) for c in self.controller_ids)

    def voters(self, controller_id: int) -> str:
        """controller.quorum.voters as controller `controller_id` runs with it: every other
        voter at its proxy for that directed pair, itself at its own (never dialled) address."""
        def address(c: int) -> str:
            if c == controller_id:
                return f"{controller_name(c)}:{CONTROLLER_PORT}"
            return f"{TOXIPROXY}:{self._quorum_port(controller_id, c)}"

        return ",".join(f"{controller_node_id(c)}@{address(c)}" for c in self.controller_ids)
