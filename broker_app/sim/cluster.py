"""SimCluster: brokers, the controller quorum and the clients' host on one simulated network.

The fault primitives the plan actions map onto (through harness/cluster/simulated.py, the
run's cluster protocol), by node name
("broker-N", "controller-1", "client"):
- cut(a, b) / heal(): both directions of a link, or every network fault;
- latency(src, dst, ms, jitter): one direction;
- kill(node, lose_unsynced): SIGKILL; with lose_unsynced also a power loss of a broker's disk
  (every write not fsynced is gone: storage/fs.py's MemoryFileSystem); stop(node): SIGTERM (a
  broker's controlled shutdown, then its clean shutdown); start(node);
- pause(node) / resume(node): SIGSTOP / SIGCONT;
- disk_sync(node): the kernel writing a broker's dirty pages out.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from broker_app.config import BrokerConfig
from broker_app.controller.config import ControllerConfig
from broker_app.storage.log_manager import batches_not_synced

from .broker import SimBroker, broker_name
from .events import EventLoop, Process
from .network import Network
from .quorum import CONTROLLER_ID_BASE, SimQuorumController

CLIENT = "client"


class SimCluster:
    def __init__(
        self,
        seed: int,
        broker_configs: list[BrokerConfig],
        controller_config: ControllerConfig,
        base_delay_ms: tuple[int, int] = (1, 3),
        controllers: int = 1,
        tick_interval_ms: int = 100,
    ) -> None:
        """controllers: the size of the KRaft controller quorum, SimQuorumControllers
        controller-1..N (Raft node ids CONTROLLER_ID_BASE + 1..N). One is a one-voter quorum,
        as Kafka (and `highwater controller`) runs a lone controller."""
        self.loop = EventLoop(seed)
        self.net = Network(self.loop, base_delay_ms)
        self.controllers: dict[str, SimQuorumController] = {}
        ids = tuple(CONTROLLER_ID_BASE + i for i in range(1, controllers + 1))
        for i in ids:
            q = SimQuorumController(self.loop, self.net,
                                    dataclasses.replace(controller_config, node_id=i), ids,
                                    tick_interval_ms)  # fmt: skip
            self.controllers[q.name] = q
        names = tuple(self.controllers)
        self.brokers: dict[int, SimBroker] = {
            c.node_id: SimBroker(self.loop, self.net, c, names if len(names) > 1 else names[0])
            for c in broker_configs
        }
        self.client = Process(self.loop, CLIENT)
        self.client.start()
        self.net.add_node(CLIENT, self.client)
        # Who wants to know which replicas a power loss emptied (sim/invariants.py).
        self.power_loss_listeners: list[Callable[[int, dict[tuple[str, int], int]], None]] = []

    def start(self) -> None:
        for c in self.controllers.values():
            c.start()
        for b in self.brokers.values():
            b.start()

    @property
    def controller(self) -> SimQuorumController:
        """The active controller: the live quorum voter that is active in the highest Raft
        epoch (the first voter while none is)."""
        active = [c for c in self.controllers.values() if c.controller is not None]
        if active:
            return max(active, key=lambda c: c.client.epoch if c.client else -1)
        return next(iter(self.controllers.values()))

    def node_names(self) -> list[str]:
        return [*self.controllers, *(broker_name(i) for i in sorted(self.brokers))]

    def broker(self, name: str) -> SimBroker | None:
        if name.startswith("broker-"):
            return self.brokers.get(int(name.split("-", 1)[1]))
        return None

    def process(self, name: str) -> Process:
        return self.net.processes[name]

    # --- faults ---------------------------------------------------------------------------

    def cut(self, a: str, b: str) -> None:
        self.net.cut(a, b)

    def heal(self) -> None:
        self.net.heal()

    def latency(self, src: str, dst: str, ms: int, jitter_ms: int = 0) -> None:
        f = self.net.fault(src, dst)
        f.latency_ms, f.jitter_ms = ms, jitter_ms

    def kill(self, name: str, lose_unsynced: bool = False) -> int:
        """SIGKILL `name`; returns how many batches the power loss dropped (0 without).
        A power loss that drops batches is told to every `power_loss_listeners` entry as
        (broker id, {(topic, partition): batches lost})."""
        b = self.broker(name)
        self.net.reset_node(name)
        if b is None:
            # A controller's page cache survives (lose_unsynced or not), as in containers,
            # where only brokers sit on the disk-fault layer (harness/cluster/cluster.py).
            self.controllers[name].kill()
            return 0
        b.kill()
        if not lose_unsynced:
            return 0
        lost = batches_not_synced(b.fs, b.data_dir)
        b.fs.power_loss()
        dropped = sum(lost.values())
        if lost:
            for listener in self.power_loss_listeners:
                listener(b.node_id, lost)
        return dropped

    def stop(self, name: str) -> None:
        """SIGTERM. A broker goes through its controlled shutdown first (it is `stopping`
        until the controller lets it go, SimBroker.stop)."""
        b = self.broker(name)
        if b is None:
            # A voter's stop is a kill (Deviation: no graceful resign/EndQuorumEpoch).
            self.net.reset_node(name)
            self.controllers[name].kill()
        else:
            b.stop()

    def start_node(self, name: str) -> None:
        """Start `name`; a broker still in its controlled shutdown starts once it is down."""
        b = self.broker(name)
        if b is not None and b.stopping:
            b.after_stop(lambda: self.start_node(name))
            return
        target = self.controllers[name] if b is None else b
        if not target.process.up:
            self.net.new_streams(name)
            target.start()

    def pause(self, name: str) -> None:
        self.process(name).pause()

    def resume(self, name: str) -> None:
        self.process(name).resume()

    def unexpected_exits(self) -> list[str]:
        """Every time a process stopped itself: the controllers' halts (SimQuorumController
        .exits), then the brokers' exits (SimBroker.exits), each in node order."""
        return [*(line for c in self.controllers.values() for line in c.exits),
                *(line for _id, b in sorted(self.brokers.items()) for line in b.exits)]

    def disk_sync(self, name: str) -> None:
        b = self.broker(name)
        if b is not None:
            b.fs.sync_all()

    def heal_all(self) -> None:
        """Heal the network, resume and start everything (what a run does before draining)."""
        self.heal()
        for name in self.node_names():
            p = self.process(name)
            if p.paused:
                p.resume()
            b = self.broker(name)
            if not p.up or (b is not None and b.stopping):
                self.start_node(name)

