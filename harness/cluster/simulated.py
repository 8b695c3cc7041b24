"""SimulatedCluster: the simulator's cluster (broker_app/sim/cluster.py) behind the run's
cluster protocol (harness/cluster/protocol.py), so the nemesis handlers act on it as on
containers.

Contract:
- `net` (SimLinks) has the links the containers' topology has (harness/cluster/topology.py:
  the clients reach brokers only; brokers reach each other and the controllers; controllers
  each other). partition/isolate cut both directions of a link (a cut drops messages silently,
  as Toxiproxy's `timeout` toxic does), latency and blackhole one direction; clear removes a
  kind of fault from one direction; heal_all every fault.
- Processes: kill (SIGKILL; lose_unsynced also drops a broker's unsynced writes, a power
  loss; returns how many batches it dropped), stop (SIGTERM: a broker's controlled shutdown,
  `status` says "exited" as soon as it began), start (once a stopping broker is down),
  restart (stop or kill, then start RESTART_GAP_MS later), pause/resume; status is docker's
  word for the node (running, paused, exited).
- disk_sync writes a broker's dirty pages out; disk stalls are not simulated
  (`disk_faults` is False).
- elect_preferred goes to the active controller as its ElectLeaders API does; reassign and
  rebalance are not simulated (the action table says so, and the run refuses them first).
- `state(elapsed_s)` is what the container run's StatePoller would see (the active
  controller's committed image, each live unpaused broker's replicas, the quorum);
  `polled_state(elapsed_s)` the same refreshed every STATE_INTERVAL_S, as the poller does.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from broker_app.metadata.image import MetadataImage
from broker_app.sim.cluster import CLIENT, SimCluster
from broker_app.sim.quorum import CONTROLLER_ID_BASE
from broker_app.storage.topic_partition import TopicPartition
from harness.plan.state import (
    ClusterState,
    ControllerState,
    PartitionState,
    ReplicaState,
    active_controller,
)

STATE_INTERVAL_S = 0.2  # harness/state_poller.py's interval: `when` sees state this fresh
RESTART_GAP_MS = 100


class NotSimulated(ValueError):
    """An action the simulator cannot carry out (the action table's `simulated` column)."""


class SimLinks:
    """The simulated network's links, by the container topology's rules."""

    def __init__(self, cluster: SimCluster) -> None:
        self._cluster = cluster
        self._net = cluster.net

    def _role(self, node: str) -> str:
        return node.split("-", 1)[0]

    def linked(self, a: str, b: str) -> bool:
        if a == b or a not in self._net.processes or b not in self._net.processes:
            return False
        return {self._role(a), self._role(b)} != {CLIENT, "controller"}

    def partition(self, a: str, b: str) -> None:
        self._net.cut(a, b)

    def heal(self, a: str, b: str) -> None:
        self._net.uncut(a, b)

    def isolate(self, node: str) -> list[str]:
        others = [n for n in self._net.processes if self.linked(node, n)]
        for other in others:
            self.partition(node, other)
        return others

    def rejoin(self, node: str) -> None:
        for other in [n for n in self._net.processes if self.linked(node, n)]:
            self.heal(node, other)

    def latency(self, src: str, dst: str, ms: int, jitter_ms: int = 0) -> None:
        f = self._net.fault(src, dst)
        f.latency_ms, f.jitter_ms = ms, jitter_ms

    def blackhole(self, src: str, dst: str, close_after_ms: int = 0) -> None:
        if close_after_ms:
            raise NotSimulated("blackhole close_after_ms is not simulated")
        self._net.cut(src, dst, both=False)

    def clear(self, src: str, dst: str, kinds: Iterable[str] = ("latency", "bandwidth")) -> None:
        for kind in kinds:
            if kind == "latency":
                self.latency(src, dst, 0, 0)
            elif kind == "blackhole":
                self._net.uncut(src, dst, both=False)

    def heal_all(self) -> None:
        self._net.heal()


class SimulatedCluster:
    """A SimCluster behind harness.cluster.protocol.RunCluster (see the module docstring)."""

    disk_faults = False

    def __init__(self, sim: SimCluster) -> None:
        self.sim = sim
        self.net = SimLinks(sim)
        self._state: ClusterState | None = None
        self._state_at = -1.0

    # --- processes --------------------------------------------------------------------------

    def node_names(self) -> list[str]:
        return self.sim.node_names()

    def status(self, node: str) -> str:
        process = self.sim.process(node)
        broker = self.sim.broker(node)
        if not process.up or (broker is not None and broker.stopping):
            return "exited"
        return "paused" if process.paused else "running"

    def kill(self, node: str, lose_unsynced: bool = False) -> int:
        return self.sim.kill(node, lose_unsynced)

    def stop(self, node: str) -> None:
        self.sim.stop(node)

    def start(self, node: str) -> None:
        self.sim.start_node(node)

    def restart(self, node: str, signal: str = "TERM", lose_unsynced: bool = False) -> None:
        if signal == "KILL":
            self.sim.kill(node, lose_unsynced)
        else:
            self.sim.stop(node)
        self.sim.client.call_later(RESTART_GAP_MS, lambda: self.sim.start_node(node))

    def pause(self, node: str) -> None:
        self.sim.pause(node)

    def resume(self, node: str) -> None:
        self.sim.resume(node)

    def disk_sync(self, node: str) -> None:
        self.sim.disk_sync(node)

    # --- admin ------------------------------------------------------------------------------

    def elect_preferred(self, partitions: Sequence[str] = ()) -> None:
        from broker_app.controller.messages import ElectLeadersRequest
        from harness.workload import parse_partition

        ctl = self.sim.controller
        if not ctl.process.up or ctl.controller is None or ctl.raft is None:
            return  # no active controller: the request would time out unanswered
        wanted = [parse_partition(p) for p in partitions] or None
        # As the controller's ElectLeaders API does: append to the Raft log, wake the client.
        ctl.raft.elect_leaders(ElectLeadersRequest(0, wanted), self.sim.loop.now_ms)

    def reassign(self, partition: str, replicas: Sequence[int]) -> None:
        raise NotSimulated("reassign is not simulated")

    def rebalance(self, topics: Sequence[str], brokers: Sequence[int], rng: Any) -> Any:
        raise NotSimulated("rebalance is not simulated")

    # --- what the state poller would see ----------------------------------------------------

    def controller_image(self) -> MetadataImage | None:
        """The active controller's image as its /state serves it: the quorum's committed image
        (the uncommitted tail may still be undone by a failover); None when none is active."""
        ctl = self.sim.controller
        if not ctl.process.up or ctl.controller is None:
            return None
        raft = getattr(ctl, "raft", None)
        return raft.committed_image if raft is not None else ctl.controller.image

    def polled_state(self, elapsed_s: float) -> ClusterState:
        """state(), as the run's StatePoller holds it: refreshed every STATE_INTERVAL_S."""
        if self._state is None or elapsed_s - self._state_at >= STATE_INTERVAL_S - 1e-9:
            self._state = self.state(elapsed_s)
            self._state_at = elapsed_s
        return self._state

    def state(self, elapsed_s: float) -> ClusterState:
        """The controller's partitions, and each live, unpaused broker's own replicas."""
        sim = self.sim
        image = self.controller_image()
        if image is None:  # the harness would see the brokers' (possibly stale) metadata
            images = [b.loader.image for b in sim.brokers.values() if b.up]
            image = max(images, key=lambda i: i.offset) if images else None
        partitions: dict[str, PartitionState] = {}
        if image is not None:
            for t, idx, reg in image.all_partitions():
                states = {}
                for bid in reg.replicas:
                    b = sim.brokers.get(bid)
                    if b is None or not b.up or b.process.paused or b.replica_manager is None:
                        continue
                    p = b.replica_manager.get_partition(t.name, idx)
                    if p is None:
                        continue
                    hwc = b.store.checkpointed_high_watermarks.get(TopicPartition(t.name, idx), -1)
                    states[bid] = ReplicaState(bid, p.role, p.log_end_offset, p.high_watermark,
                                               p.leader_epoch, hwc)  # fmt: skip
                leader = reg.leader if reg.leader >= 0 else None
                ps = PartitionState(t.name, idx, leader, reg.leader_epoch, reg.replicas,
                                    reg.isr, states, reg.elr)  # fmt: skip
                partitions[ps.name] = ps
        alive = frozenset(i for i, b in sim.brokers.items() if b.up)
        quorum = self._quorum_view()
        if quorum:
            known = active_controller(quorum)
            ids = tuple(sorted(int(n.split("-")[1]) for n in sim.controllers))
            active = known[0] if known else None
        else:
            ids, active = (1,), (1 if sim.controller.process.up else None)
        return ClusterState(
            brokers=tuple(sorted(sim.brokers)), alive=alive, partitions=partitions,
            controllers=ids, controller=active, elapsed_s=elapsed_s, quorum=quorum,
        )  # fmt: skip

    def _quorum_view(self) -> dict[int, ControllerState]:
        """Each live, unpaused quorum voter's /state "quorum" view."""
        out = {}
        base = CONTROLLER_ID_BASE  # Raft node ids -> the plan's controller numbers
        for c in self.sim.controllers.values():
            client = getattr(c, "client", None)
            if client is None or not c.process.up or c.process.paused or c.raft is None:
                continue
            leader = None if client.leader_id is None else client.leader_id - base
            out[c.config.node_id - base] = ControllerState(
                c.config.node_id - base, client.epoch, leader, c.raft.is_active,
                c.raft.committed_offset, client.high_watermark, client.log.end_offset,
                tuple(sorted(v - base for v in client.config.voters)))
        return out
