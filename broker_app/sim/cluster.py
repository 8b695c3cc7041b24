"""SimCluster: brokers, one controller and the clients' host on one simulated network.

The fault primitives the plan actions map onto (harness/sim/nemesis.py), by node name
("broker-N", "controller-1", "client"):
- cut(a, b) / heal(): both directions of a link, or every network fault;
- latency(src, dst, ms, jitter): one direction;
- kill(node, lose_unsynced): SIGKILL; with lose_unsynced also a power loss of its disk (every
  batch not fsynced is gone); stop(node): SIGTERM (clean shutdown); start(node);
- pause(node) / resume(node): SIGSTOP / SIGCONT;
- disk_sync(node): the kernel writing a broker's dirty pages out.
"""

from __future__ import annotations

from broker_app.config import BrokerConfig
from broker_app.controller.config import ControllerConfig

from .broker import SimBroker, broker_name
from .controller import SimController
from .events import EventLoop, Process
from .network import Network

CLIENT = "client"


class SimCluster:
    def __init__(
        self,
        seed: int,
        broker_configs: list[BrokerConfig],
        controller_config: ControllerConfig,
        base_delay_ms: tuple[int, int] = (1, 3),
    ) -> None:
        self.loop = EventLoop(seed)
        self.net = Network(self.loop, base_delay_ms)
        self.controller = SimController(self.loop, controller_config)
        self.net.add_node(self.controller.name, self.controller.process, self.controller.handle)
        self.brokers: dict[int, SimBroker] = {
            c.node_id: SimBroker(self.loop, self.net, c, self.controller.name)
            for c in broker_configs
        }
        self.client = Process(self.loop, CLIENT)
        self.client.start()
        self.net.add_node(CLIENT, self.client)

    def start(self) -> None:
        self.controller.start()
        for b in self.brokers.values():
            b.start()

    def node_names(self) -> list[str]:
        return [self.controller.name, *(broker_name(i) for i in sorted(self.brokers))]

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
        """SIGKILL `name`; returns how many batches the power loss dropped (0 without)."""
        b = self.broker(name)
        self.net.reset_node(name)
        if b is None:
            self.controller.kill()
            return 0
        b.kill()
        return b.disk.crash() if lose_unsynced else 0

    def stop(self, name: str) -> None:
        self.net.reset_node(name)
        b = self.broker(name)
        if b is None:
            self.controller.kill()  # its log is durable on every batch: a stop is a kill
        else:
            b.stop()

    def start_node(self, name: str) -> None:
        b = self.broker(name)
        target = self.controller if b is None else b
        if not target.process.up:
            target.start()

    def pause(self, name: str) -> None:
        self.process(name).pause()

    def resume(self, name: str) -> None:
        self.process(name).resume()

    def disk_sync(self, name: str) -> None:
        b = self.broker(name)
        if b is not None:
            for d in b.disk.partitions.values():
                d.synced = len(d.batches)

    def heal_all(self) -> None:
        """Heal the network, resume and start everything (what a run does before draining)."""
        self.heal()
        for name in self.node_names():
            p = self.process(name)
            if p.paused:
                p.resume()
            if not p.up:
                self.start_node(name)
