"""A cluster of containers: Toxiproxy, an optional KRaft controller quorum and N brokers, on a
fresh network.

Contract:
- Cluster(run_id, brokers=N, controllers=C, images=None, store_dir=None, ...) is a context
  manager; `with` (or up()/down()) creates a docker network and containers, all labelled
  highwater.run=<run id> (+ highwater.role, highwater.node, highwater.owner), and always removes
  them at the end: on exceptions, on Ctrl-C, on SIGTERM/SIGHUP (turned into KeyboardInterrupt),
  and at interpreter exit. With store_dir, down() first copies every container's log and data
  dir into <store_dir>/logs and <store_dir>/data.
- Every connection crosses a Toxiproxy proxy (see topology.py): brokers advertise to clients the
  127.0.0.1 port on which their client proxy is published, so `bootstrap` works from the host
  and every client byte goes through a proxy. The Toxiproxy API is published on 127.0.0.1 too
  (`toxiproxy_api`), and `net` is a harness.net.Net over it. Each broker's own port is
  published as well (`direct_address(node)`): for benchmarks and debugging only.
- C controllers (`controller-1`..`controller-C`; `controller=True` is C=1) run as one Raft
  quorum, each with `--node-id 3000+c --controller-quorum-voters` naming the others at its own
  proxies (topology.voters). Brokers reach peers and controllers only through their own
  proxies: `--controller-quorum-bootstrap-servers` (their proxy to each controller) and
  `--peer <id>=toxiproxy:<20000+100*self+id>` (the images are built from this tree, so the
  broker always has these flags).
- Process faults act on containers by node name: kill (SIGKILL), stop (SIGTERM, then SIGKILL after
  a timeout), start, restart, pause/resume (cgroup freezer). start/restart wait until the
  process says it listens again (bounded).
- Cluster.attach(run_id): a handle on a running run, from docker's labels, for status and down.
- Containers, network, published ports and the wait for "listening" in a node's log are
  testcontainers-python's. Its reaper, Ryuk, is a registry image, so it is off: the
  highwater.run labels and lifecycle.clean are the cleanup guarantee.
Errors: ClusterError, with the node and what failed (and the container's last log lines).
"""

from __future__ import annotations

import io
import re
import tarfile
import time
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.cluster import lifecycle
from harness.cluster.topology import (
    BROKER_PORT,
    CLIENT,
    CONTROLLER,
    CONTROLLER_PORT,
    DATA_DIR,
    LABEL_CREATED,
    LABEL_NODE,
    LABEL_OWNER,
    LABEL_ROLE,
    LABEL_RUN,
    TOXIPROXY,
    TOXIPROXY_API_PORT,
    Topology,
    broker_id,
    broker_name,
    check_run_id,
    controller_name,
    controller_node_id,
    is_controller,
)
from harness.net import Net

READY_TIMEOUT_S = 90.0
STOP_TIMEOUT_S = 10
LOG_TAIL = 30
LISTENING = "listening"


class ClusterError(RuntimeError):
    """A container could not be created, started or reached; the message says which and why."""


@dataclass(frozen=True)
class NodeInfo:
    name: str
    role: str
    container: str
    status: str
    direct: str | None  # 127.0.0.1:<port> of the process's own port, if published


def new_run_id(prefix: str = "hw") -> str:
    return f"{prefix}-{time.strftime('%Y%m%d-%H%M%S')}-{uuid.uuid4().hex[:6]}"


DOCKER_TIMEOUT_S = 120


def _docker() -> Any:
    """testcontainers' DockerClient (`.client` is the docker SDK's), the daemon checked."""
    from testcontainers.core.docker_client import DockerClient

    try:
        tc = DockerClient(timeout=DOCKER_TIMEOUT_S)
        tc.client.ping()
    except Exception as exc:  # docker raises several unrelated types for "no daemon"
        raise ClusterError(f"cannot reach the Docker daemon ({exc}); is dockerd running?") from exc
    return tc


@contextmanager
def _without_ryuk() -> Iterator[None]:
    """Ryuk off while we start containers; a user's own setting (their containers) restored."""
    from testcontainers.core.config import testcontainers_config as tc_config

    before, tc_config.ryuk_disabled = tc_config.ryuk_disabled, True
    try:
        yield
    finally:
        tc_config.ryuk_disabled = before



class Cluster:
    def __init__(
        self,
        run_id: str | None = None,
        brokers: int = 3,
        controller: bool = False,
        images: Mapping[str, str] | None = None,
        store_dir: Path | str | None = None,
        broker_args: Sequence[str] = (),
        disk_faults: bool = False,
        controller_args: Sequence[str] = (),
        detached: bool = False,
        ready_timeout_s: float = READY_TIMEOUT_S,
        controllers: int | None = None,
    ) -> None:
        """controllers: the quorum's size (None: 1 with controller=True, else 0)."""
        self.run_id = check_run_id(run_id or new_run_id())
        if controllers is None:
            controllers = 1 if controller else 0
        self.topology = Topology(brokers, controllers)
        self._images = dict(images) if images else None
        self.store_dir = Path(store_dir) if store_dir else None
        self.broker_args = list(broker_args)
        self.controller_args = list(controller_args)  # e.g. --kafka-version 3.9
        self.disk_faults = disk_faults
        self.owner = lifecycle.DETACHED if detached else lifecycle.owner_label()
        self.ready_timeout_s = ready_timeout_s
        self._tc: Any = None  # testcontainers' DockerClient; .client is the docker SDK's
        self._network: Any = None
        self._guard: lifecycle.CleanupGuard | None = None
        self._containers: dict[str, Any] = {}  # node -> docker SDK container
        self._started: dict[str, Any] = {}  # node -> the DockerContainer that started it
        self._api_port: int | None = None
        self._client_ports: dict[str, int] = {}
        self.net: Net | None = None
        self._closed = False
        # Nodes this harness stopped or killed and has not started since; a node found down
        # that is not among them exited on its own (the run check `unexpected-exits`).
        self._taken_down: set[str] = set()
        #: one line per such exit, noticed when the node is started again
        self.unexpected_exits: list[str] = []

    # --- names ----------------------------------------------------------------------------------

    @property
    def network_name(self) -> str:
        return f"hw-{self.run_id}"

    def container_name(self, node: str) -> str:
        return f"hw-{self.run_id}-{node}"

    def _labels(self, role: str, node: str) -> dict[str, str]:
        return {LABEL_RUN: self.run_id, LABEL_ROLE: role, LABEL_NODE: node,
                LABEL_OWNER: self.owner, LABEL_CREATED: str(int(time.time()))}

    # --- addresses ------------------------------------------------------------------------------

    @property
    def bootstrap(self) -> str:
        """Comma-separated 127.0.0.1:<port> of every broker's client proxy."""
        return ",".join(f"127.0.0.1:{self._client_ports[b]}" for b in self.topology.broker_names)

    def client_address(self, node: str) -> str:
        return f"127.0.0.1:{self._client_ports[node]}"

    @property
    def toxiproxy_api(self) -> str:
        return f"127.0.0.1:{self._api_port}"

    def direct_address(self, node: str) -> str | None:
        """The node's own port as published on 127.0.0.1 (no proxy): benchmarks only."""
        return self._published(self.container(node), _own_port(node))

    def published(self, node: str, port: int) -> str | None:
        """127.0.0.1:<host port> that `node`'s container `port` is published on, if any."""
        return self._published(self.container(node), port)

    @property
    def addresses_known(self) -> bool:
        """True once the Toxiproxy container's published ports have been read (bootstrap and
        toxiproxy_api are meaningful)."""
        return self._api_port is not None and bool(self._client_ports)

    def _published(self, container: Any, port: int) -> str | None:
        try:
            return f"127.0.0.1:{self._tc.port(container.id, port)}"
        except ConnectionError:  # not published, or the container is not running
            return None

    # --- lifecycle ------------------------------------------------------------------------------

    def __enter__(self) -> Cluster:
        self.up()
        return self

    def __exit__(self, *exc: object) -> None:
        self.down()

    def up(self) -> Cluster:
        """Create network, Toxiproxy, proxies, controller and brokers; wait until they listen."""
        self._guard = lifecycle.CleanupGuard(self._cleanup)
        self._guard.__enter__()
        try:
            self._tc = _docker()
            images = self._images or _ensure_images()
            self._images = images
            from testcontainers.core.network import Network

            labels = {LABEL_RUN: self.run_id, LABEL_OWNER: self.owner,
                      LABEL_CREATED: str(int(time.time()))}  # fmt: skip
            self._network = Network({"timeout": DOCKER_TIMEOUT_S}, {"labels": labels})
            self._network.name = self.network_name  # named after the run, not a random uuid
            self._network.create()
            self._start_toxiproxy(images["toxiproxy"])
            for c in self.topology.controller_ids:
                self._create_controller(images["broker"], c)
            for i in self.topology.broker_ids:
                self._create_broker(images["broker"], i)
            for name in self.node_names():
                self._wait_listening(name, 0)
        except BaseException:
            self.down()
            raise
        return self

    def down(self) -> None:
        """Collect logs and data (with store_dir), then remove every container and the network."""
        if self._guard is not None:
            guard, self._guard = self._guard, None
            guard.__exit__(None, None, None)
        else:
            self._cleanup()

    def _cleanup(self) -> None:
        if self._closed:
            return
        self._closed = True
        client = (self._tc or _docker()).client
        try:
            if self.store_dir is not None and self._containers:
                try:
                    self.collect_logs(self.store_dir / "logs")
                    self.collect_data(self.store_dir / "data")
                except Exception as exc:  # removal must happen even if collection fails
                    print(f"highwater cluster: collecting logs/data failed: {exc}")
        finally:
            lifecycle.clean(client, only_run=self.run_id)

    @property
    def is_up(self) -> bool:
        """Started and not yet removed."""
        return bool(self._containers) and not self._closed

    def detach(self) -> None:
        """Leave the cluster running after this process ends (`highwater cluster up`); it is then
        removed by `highwater cluster down` or `highwater clean --all`."""
        if self.owner != lifecycle.DETACHED:
            raise ClusterError("only a cluster made with detached=True can outlive its process")
        if self._guard is not None:
            guard, self._guard = self._guard, None
            self._closed = True  # the guard's exit must not clean up
            guard.__exit__(None, None, None)
            self._closed = False

    @classmethod
    def attach(cls, run_id: str) -> Cluster:
        """A handle on a running cluster, rebuilt from its containers' labels."""
        tc = _docker()
        found = tc.client.containers.list(all=True, filters={"label": f"{LABEL_RUN}={run_id}"})
        if not found:
            raise ClusterError(f"no containers labelled {LABEL_RUN}={run_id}")
        by_node = {c.labels.get(LABEL_NODE, ""): c for c in found}
        brokers = sum(1 for c in found if c.labels.get(LABEL_ROLE) == "broker")
        controllers = sum(1 for c in found if c.labels.get(LABEL_ROLE) == CONTROLLER)
        self = cls(run_id, brokers=max(brokers, 1), controllers=controllers, images={})
        self.owner = found[0].labels.get(LABEL_OWNER, "")
        self._tc = tc
        self._containers = by_node
        if TOXIPROXY in by_node:
            self._read_toxiproxy_ports(by_node[TOXIPROXY])
        return self

    def node_names(self) -> list[str]:
        """The fault-able nodes (controllers first, then brokers); not the Toxiproxy container."""
        return [*self.topology.controller_names, *self.topology.broker_names]

    def container(self, node: str) -> Any:
        if node not in self._containers:
            raise ClusterError(
                f"unknown node {node!r}; run {self.run_id} has {', '.join(self._containers)}"
            )
        return self._containers[node]

    # --- creating containers --------------------------------------------------------------------

    def _create(self, image: str, node: str, role: str, command: list[str],
                ports: Iterable[int], copy_into: Sequence[tuple[Any, str]] = (),
                wait: Any = None, **extra: Any) -> Any:
        """Create and start the node's container (testcontainers' DockerContainer), on the
        run's network under the node's name, each of `ports` published on 127.0.0.1 (a random
        host port); `copy_into` files land before the process starts; `wait`, a testcontainers
        WaitStrategy, says when it is ready."""
        import docker.errors
        from testcontainers.core.container import DockerContainer

        dc = DockerContainer(image, docker_client_kw={"timeout": DOCKER_TIMEOUT_S},
                             command=command, name=self.container_name(node),
                             env=extra.pop("environment", {}), network=self._network,
                             network_aliases=[node])  # fmt: skip
        dc.with_kwargs(hostname=node, labels=self._labels(role, node), detach=True, **extra)
        for port in [*ports, *self.extra_ports(role)]:
            # Loopback only: nothing of a test cluster is reachable from other machines.
            dc.ports[f"{port}/tcp"] = ("127.0.0.1", None)
        for source, destination in copy_into:
            dc.with_copy_into_container(source, destination)
        if wait is not None:
            dc.waiting_for(wait.with_startup_timeout(self.ready_timeout_s))
        try:
            with _without_ryuk():
                dc.start()
        except (docker.errors.APIError, TimeoutError, RuntimeError) as exc:
            raise ClusterError(f"{node}: cannot create or start a container from {image}: "
                               f"{exc}") from exc  # fmt: skip
        self._started[node] = dc
        self._containers[node] = dc.get_wrapped_container()
        return self._containers[node]

    def _start_toxiproxy(self, image: str) -> None:
        from testcontainers.core.wait_strategies import LogMessageWaitStrategy

        # Not testcontainers' HttpWaitStrategy: it dials the docker gateway's address, and
        # every port here is published on 127.0.0.1 only.
        ports = [TOXIPROXY_API_PORT, *(link.listen_port for link in self.topology.client_links())]
        container = self._create(image, TOXIPROXY, TOXIPROXY, [], ports,
                                 wait=LogMessageWaitStrategy(LISTENING).with_poll_interval(0.1))
        self._read_toxiproxy_ports(container)
        assert self.net is not None
        try:
            self.net.version()
        except Exception as exc:  # the log said it listens: a failure here is not a wait
            raise ClusterError(f"Toxiproxy API at {self.toxiproxy_api}: {exc}") from exc
        self.net.create_proxies()

    def _read_toxiproxy_ports(self, container: Any) -> None:
        api = self._published(container, TOXIPROXY_API_PORT)
        if api is None:
            raise ClusterError(f"{TOXIPROXY}: API port {TOXIPROXY_API_PORT} is not published")
        self._api_port = int(api.rsplit(":", 1)[1])
        for link in self.topology.client_links():
            addr = self._published(container, link.listen_port)
            if addr is None:
                raise ClusterError(f"{TOXIPROXY}: proxy port {link.listen_port} not published")
            self._client_ports[link.dst] = int(addr.rsplit(":", 1)[1])
        self.net = Net("127.0.0.1", self._api_port, self.topology.link_map())

    def controller_command(self, c: int) -> list[str]:
        """Controller c's command: one voter of the quorum, its peers at its own proxies."""
        return ["controller", "--node-id", str(controller_node_id(c)),
                "--port", str(CONTROLLER_PORT), "--host", "0.0.0.0",
                "--advertised-host", controller_name(c), "--data-dir", DATA_DIR,
                "--controller-quorum-voters", self.topology.voters(c), *self.controller_args]

    def extra_ports(self, role: str) -> list[int]:
        """Container ports a subclass publishes besides the role's own (none here): the hook
        that lets ObservedCluster publish its admin port without overriding container creation."""
        return []

    def _create_controller(self, image: str, c: int) -> None:
        self._create(image, controller_name(c), CONTROLLER, self.controller_command(c),
                     [CONTROLLER_PORT])

    def broker_command(self, i: int) -> list[str]:
        name = broker_name(i)
        command = ["broker", "--node-id", str(i), "--port", str(BROKER_PORT), "--host", "0.0.0.0",
                   "--data-dir", DATA_DIR, "--advertised-host", "127.0.0.1",
                   "--advertised-port", str(self._client_ports[name])]
        if self.topology.controllers:
            command += ["--controller-quorum-bootstrap-servers",
                        self.topology.controller_bootstrap(i)]
        for j in self.topology.broker_ids:
            if j != i:
                command += ["--peer", f"{j}={self.topology.peer_address(i, j)}"]
        # The harness's consumers carry a group.id, so librdkafka asks for a coordinator and
        # __consumer_offsets gets created; one partition instead of Kafka's 50 keeps that from
        # dominating a 3-broker cluster's replication work (a plan may override it).
        command += ["--offsets-topic-num-partitions", "1"]
        # KIP-392: each broker its own rack, so a consumer's client.rack names one broker (only
        # a rack-aware replica selector, a plan switch, acts on it).
        command += ["--broker-rack", f"rack-{i}"]
        return [*command, *self.broker_args]

    def _create_broker(self, image: str, i: int) -> None:
        extra: dict[str, Any] = {}
        copy_into: list[tuple[Any, str]] = []
        command = self.broker_command(i)
        if self.disk_faults:
            from harness.cluster import diskfs

            command, extra = diskfs.wrap_broker(command)
            copy_into = diskfs.library_files()
        self._create(image, broker_name(i), "broker", command, [BROKER_PORT], copy_into,
                     **extra)

    # --- waiting --------------------------------------------------------------------------------

    def direct_connections(self) -> dict[str, dict[str, Any]]:
        """node -> {"proxied": n, "direct": [peer, ...]}: the connections it accepted on its
        Kafka port from the Toxiproxy container, and the peers of those that did not come from
        it (harness.cluster.bypass); an empty `direct` is what a sound cluster shows. A node
        whose table cannot be read now (paused, down) has {"unreadable": why}."""
        from harness.cluster.bypass import direct_peers, parse_proc_net_tcp, proxied_count

        proxy = self.container(TOXIPROXY)
        proxy.reload()
        networks = proxy.attrs["NetworkSettings"].get("Networks") or {}
        proxy_ips = {n.get("IPAddress") for n in networks.values() if n.get("IPAddress")}
        out: dict[str, dict[str, Any]] = {}
        for node in self.node_names():
            port = _own_port(node)
            try:
                code, text = self.container(node).exec_run(
                    ["sh", "-c", "cat /proc/net/tcp /proc/net/tcp6 2>/dev/null"])
            except Exception as exc:  # paused or stopped by a fault: nothing to read now
                out[node] = {"unreadable": f"{type(exc).__name__}: {exc}"}
                continue
            conns = parse_proc_net_tcp(text.decode(errors="replace"))
            if not conns:
                out[node] = {"unreadable": f"no TCP table (exit {code})"}
                continue
            out[node] = {"proxied": proxied_count(conns, {port}, proxy_ips),
                         "direct": direct_peers(conns, {port}, proxy_ips)}
        return out

    def logs(self, node: str, tail: int | str = "all") -> str:
        return self.container(node).logs(stdout=True, stderr=True, tail=tail).decode(
            errors="replace")

    def _listening_count(self, node: str) -> int:
        """How often the node said it listens, in whichever log stream it says so."""
        return max(stream.count(LISTENING.encode()) for stream in self._target(node).get_logs())

    def _target(self, node: str) -> Any:
        if node not in self._started:
            raise ClusterError(f"{node}: this handle did not start run {self.run_id} (attached "
                               "handles are for status and down)")
        return self._started[node]

    def _wait_listening(self, node: str, seen_before: int) -> None:
        """Wait until the node's log says it listens more often than seen_before times (a
        restarted container keeps its earlier log)."""
        from testcontainers.core.wait_strategies import LogMessageWaitStrategy

        pattern = re.compile(f"(?:{LISTENING}.*?){{{seen_before + 1}}}", re.DOTALL)
        strategy = (LogMessageWaitStrategy(pattern).with_startup_timeout(self.ready_timeout_s)
                    .with_poll_interval(0.1))  # fmt: skip
        try:
            strategy.wait_until_ready(self._target(node))
        except (TimeoutError, RuntimeError) as exc:  # not in time, or it exited first
            raise ClusterError(f"{node} did not say it listens ({exc}); last log lines:\n"
                               f"{self.logs(node, tail=LOG_TAIL)}") from exc  # fmt: skip

    # --- process faults -------------------------------------------------------------------------

    def start(self, node: str, wait: bool = True) -> None:
        """Start a stopped or killed node; with wait, until it says it listens again."""
        import docker.errors

        container = self.container(node)
        self._note_exit(node, container)
        before = self._listening_count(node)
        try:
            container.start()
        except docker.errors.APIError as exc:
            raise ClusterError(f"{node}: cannot start container: {exc}") from exc
        self._taken_down.discard(node)
        if wait:
            self._wait_listening(node, before)

    def _note_exit(self, node: str, container: Any) -> None:
        """Record `node` in unexpected_exits if its container exited without us."""
        if node in self._taken_down:
            return
        container.reload()
        state = container.attrs.get("State", {})
        if container.status in ("exited", "dead"):
            self.unexpected_exits.append(
                f"{node} exited on its own (exit code {state.get('ExitCode')}, "
                f"at {state.get('FinishedAt')})")

    def kill(self, node: str, lose_unsynced: bool = True) -> None:
        """SIGKILL. With the disk-fault layer, writes not yet fsynced are lost unless
        lose_unsynced=False (then they are written out first, as a kernel would on a crash
        of the process alone); without it, the container's filesystem keeps them anyway."""
        if self.disk_faults and node.startswith("broker-") and not lose_unsynced:
            from harness.cluster import diskfs

            diskfs.control(self.container(node), "flush")
        self._taken_down.add(node)
        self.container(node).kill(signal="SIGKILL")
        self.container(node).wait(timeout=STOP_TIMEOUT_S + 30)

    def stop(self, node: str, timeout_s: int = STOP_TIMEOUT_S) -> None:
        """SIGTERM, then SIGKILL after timeout_s (docker stop)."""
        self._taken_down.add(node)
        self.container(node).stop(timeout=timeout_s)

    def restart(self, node: str, signal: str = "TERM", lose_unsynced: bool = True) -> None:
        if signal == "KILL":
            self.kill(node, lose_unsynced=lose_unsynced)
        else:
            self.stop(node)
        self.start(node)

    def pause(self, node: str) -> None:
        """Freeze every process of the node (cgroup freezer): sockets stay open, nothing runs."""
        self.container(node).pause()

    def resume(self, node: str) -> None:
        self.container(node).unpause()

    def status(self, node: str) -> str:
        container = self.container(node)
        container.reload()
        return str(container.status)

    # --- admin requests through the client proxies (harness/cluster/admin.py) ----------------

    def elect_preferred(self, partitions: Sequence[str] = ()) -> None:
        from harness.cluster.admin import elect_preferred

        elect_preferred(self.bootstrap, partitions)

    def reassign(self, partition: str, replicas: Sequence[int]) -> None:
        from harness.cluster.admin import reassign

        reassign(self.bootstrap, partition, replicas)

    def rebalance(self, topics: Sequence[str], brokers: Sequence[int], rng: Any
                  ) -> dict[tuple[str, int], list[int]]:
        from harness.cluster.admin import rebalance

        return rebalance(self.bootstrap, topics, brokers, rng)

    def nodes(self) -> list[NodeInfo]:
        out = []
        for name, container in sorted(self._containers.items()):
            role = container.labels.get(LABEL_ROLE, "")
            port = TOXIPROXY_API_PORT if name == TOXIPROXY else _own_port(name)
            direct = self._published(container, port)
            out.append(NodeInfo(name, role, container.name, container.status, direct))
        return out

    # --- collection -----------------------------------------------------------------------------

    def collect_logs(self, dest: Path | str, nodes: Iterable[str] | None = None) -> list[Path]:
        """Write each container's stdout+stderr (with timestamps) to dest/<node>.log."""
        dest = Path(dest)
        dest.mkdir(parents=True, exist_ok=True)
        written = []
        for node in nodes or list(self._containers):
            text = self.container(node).logs(stdout=True, stderr=True, timestamps=True)
            path = dest / f"{node}.log"
            path.write_bytes(text)
            written.append(path)
        return written

    def collect_data(self, dest: Path | str, nodes: Iterable[str] | None = None) -> list[Path]:
        """Copy each broker's and the controller's data dir to dest/<node>/ (docker get_archive;
        works on stopped containers too). With the disk-fault layer this is what reached the
        backing store, i.e. what survives a crash."""
        import docker.errors

        dest = Path(dest)
        dest.mkdir(parents=True, exist_ok=True)
        copied = []
        default = [n for n in self._containers if n not in (TOXIPROXY, CLIENT)]
        for node in nodes or default:
            container = self.container(node)
            source = self._data_source(node)
            try:
                stream, _stat = container.get_archive(source)
            except docker.errors.NotFound:
                continue  # the process never wrote its data dir
            buf = io.BytesIO(b"".join(stream))
            target = dest / node
            target.mkdir(parents=True, exist_ok=True)
            with tarfile.open(fileobj=buf) as tar:
                tar.extractall(target, filter="data")
            copied.append(target)
        return copied

    def _data_source(self, node: str) -> str:
        if self.disk_faults and node.startswith("broker-"):
            from harness.cluster import diskfs

            return diskfs.BACKING_DIR
        return DATA_DIR

    # --- file corruption ------------------------------------------------------------------------

    def corrupt_file(self, node: str, kind: str, partition: str | None, how: str, n: int,
                     rng: Any) -> str:
        """Damage one file of a stopped broker's data dir (harness.cluster.corrupt); returns
        "<path>: <what was done>". Raises ClusterError if the broker runs or the file is
        missing."""
        import docker.errors

        from harness.cluster import corrupt

        broker_id(node)
        container = self.container(node)
        container.reload()
        if container.status not in ("exited", "created", "dead"):
            raise ClusterError(f"corrupt-file on {node}: it is {container.status}; stop or kill "
                               "it first (a running broker would overwrite the file)")
        root = self._data_source(node)
        directory = root if kind == "replication-offset-checkpoint" else f"{root}/{partition}"
        try:
            stream, _ = container.get_archive(directory)
        except docker.errors.NotFound as exc:
            raise ClusterError(f"corrupt-file on {node}: no {directory}") from exc
        with tarfile.open(fileobj=io.BytesIO(b"".join(stream))) as tar:
            members = {m.name.split("/", 1)[-1]: m for m in tar.getmembers() if m.isfile()}
            top = {name: m for name, m in members.items() if "/" not in name}
            try:
                name = corrupt.pick(list(top), kind)
                extracted = tar.extractfile(top[name])
                assert extracted is not None
                damaged, what = corrupt.damage(extracted.read(), how, n, rng)
            except corrupt.CorruptError as exc:
                raise ClusterError(f"corrupt-file on {node}: {directory}: {exc}") from exc
            original = top[name]
        out = io.BytesIO()
        with tarfile.open(fileobj=out, mode="w") as tar:
            info = tarfile.TarInfo(name)
            info.size, info.mtime = len(damaged), int(time.time())
            # Same mode and owner: the broker must be able to open (and repair) it.
            info.mode, info.uid, info.gid = original.mode, original.uid, original.gid
            tar.addfile(info, io.BytesIO(damaged))
        if not container.put_archive(directory, out.getvalue()):
            raise ClusterError(f"corrupt-file on {node}: docker refused to write {name}")
        return f"{directory}/{name}: {what}"

    # --- disk faults ----------------------------------------------------------------------------

    def disk_stall(self, node: str, seconds: float, ops: str = "all") -> None:
        """Make the node's writes and/or fsyncs block for `seconds` (needs disk_faults=True)."""
        self._need_disk(node)
        from harness.cluster import diskfs

        diskfs.control(self.container(node), "stall", ops, str(seconds))

    def disk_sync(self, node: str) -> None:
        """Write the node's unsynced pages out (kernel writeback; needs disk_faults=True)."""
        self._need_disk(node)
        from harness.cluster import diskfs

        diskfs.control(self.container(node), "flush")

    def disk_unstall(self, node: str) -> None:
        self._need_disk(node)
        from harness.cluster import diskfs

        diskfs.control(self.container(node), "unstall")

    def disk_status(self, node: str) -> dict[str, Any]:
        self._need_disk(node)
        from harness.cluster import diskfs

        return diskfs.status(self.container(node))

    def _need_disk(self, node: str) -> None:
        broker_id(node)
        if not self.disk_faults:
            raise ClusterError(
                f"disk faults on {node}: the cluster was started without disk_faults=True "
                "(the FUSE layer under the data dir)"
            )


def _own_port(node: str) -> int:
    """The port a node's process listens on inside its container."""
    return CONTROLLER_PORT if is_controller(node) else BROKER_PORT


def _ensure_images() -> dict[str, str]:
    """Build the images if missing or stale (harness.images); seconds when nothing changed."""
    from harness.images import ImageError, ensure_images

    try:
        return ensure_images()
    except ImageError as exc:
        raise ClusterError(f"images: {exc}") from exc
