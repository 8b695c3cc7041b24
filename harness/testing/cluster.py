"""HighwaterCluster: a highwater cluster for a user's own test suite (testcontainers style).

Contract:
- `HighwaterCluster(brokers=3, controllers=1, kafka_version=None, switches=None)` is a
  context manager (or `up()` / `down()`): entering builds the project's images if missing
  (no registry needed) and starts the containers (controllers, brokers, Toxiproxy) on a
  fresh docker network; leaving collects their logs into `store` and removes every container
  and the network, also on an exception or Ctrl-C (harness.cluster's label-based cleanup;
  `highwater clean` removes what a killed Python left behind).
- `bootstrap_servers`: every client connection crosses Toxiproxy (each broker advertises its
  proxy), so `partition` and `latency` act on the user's clients too.
- Node names are "broker-N", "controller-N" and "client" (the host's clients).
  `leader`/`followers` ask Kafka's own metadata (an AdminClient through the proxies).
- Faults: `kill` (SIGKILL), `stop` (SIGTERM: a controlled shutdown), `start`, `pause`,
  `resume`; `partition(a, b)` cuts both directions of the a-b link, `latency(a, b, ms)` delays
  a->b, `heal()` removes every network fault (stopped or paused nodes stay so).
- `wait_settled(timeout_s)`: every partition of the topics created here has a leader and its
  whole replica set in the ISR; TimeoutError naming the partitions that do not, otherwise.
- `history()` records what the user's clients do (harness/testing/history.py);
  `read_back(history)` reads every partition of the created topics from the start with a fresh
  consumer (the history's final reads); `check(history)` runs the project's PySpark checker
  on it and returns {anomaly: count} (HISTORY.md), `results` keeping the whole results.json.
Every wait is bounded.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

from harness.plan.model import ClusterSpec, TopicSpec
from harness.testing.history import History

SETTLE_POLL_S = 0.25
METADATA_TIMEOUT_S = 10.0


class HighwaterCluster:
    def __init__(self, brokers: int = 3, controllers: int = 1, kafka_version: str | None = None,
                 switches: dict[str, str] | None = None, store: str | Path | None = None,
                 ready_timeout_s: float = 90.0) -> None:  # fmt: skip
        self.spec = ClusterSpec(brokers=brokers, controllers=controllers,
                                switches={k: str(v) for k, v in (switches or {}).items()},
                                kafka_version=kafka_version)  # fmt: skip
        self.spec.version_switches()  # an unknown version or switch value fails here, named
        self.store = Path(store) if store else Path(tempfile.mkdtemp(prefix="highwater-"))
        self.ready_timeout_s = ready_timeout_s
        self.topics: dict[str, TopicSpec] = {}
        self.results: dict[str, Any] | None = None
        self._cluster: Any = None
        self._admin: Any = None
        self._histories: list[History] = []

    # --- lifecycle ------------------------------------------------------------------------

    def __enter__(self) -> HighwaterCluster:
        return self.up()

    def __exit__(self, *exc: object) -> None:
        self.down()

    def up(self) -> HighwaterCluster:
        from harness.cluster import new_run_id
        from harness.images import ensure_images
        from harness.plan.flags import process_flags
        from harness.run.observed import ObservedCluster

        broker_args, controller_args = process_flags(self.spec)
        self._cluster = ObservedCluster(
            new_run_id("hw-test"), brokers=self.spec.brokers, controllers=self.spec.controllers,
            images=ensure_images(), store_dir=self.store / "cluster", broker_args=broker_args,
            controller_args=controller_args, ready_timeout_s=self.ready_timeout_s,
        )  # fmt: skip
        self._cluster.up()
        return self

    def down(self) -> None:
        for h in self._histories:
            h.close()
        self._admin = None
        if self._cluster is not None:
            cluster, self._cluster = self._cluster, None
            cluster.down()

    @property
    def cluster(self) -> Any:
        if self._cluster is None:
            raise RuntimeError("the cluster is not up (use `with HighwaterCluster() as c`)")
        return self._cluster

    @property
    def bootstrap_servers(self) -> str:
        return str(self.cluster.bootstrap)

    # --- topics and metadata --------------------------------------------------------------

    def create_topic(self, name: str, partitions: int = 1, replication_factor: int = 3,
                     min_insync_replicas: int = 2, config: dict[str, str] | None = None,
                     timeout_s: float = 60.0) -> None:  # fmt: skip
        """Create the topic and wait until every partition is led with a full ISR."""
        from harness.run.containers import create_topics

        topic = TopicSpec(name, partitions, replication_factor, min_insync_replicas,
                          dict(config or {}))  # fmt: skip
        create_topics(self.bootstrap_servers, [topic], timeout_s)
        self.topics[name] = topic
        self.wait_settled(timeout_s)

    def _metadata(self, topics: list[str]) -> Any:
        """Kafka's metadata of `topics`, from one AdminClient kept while the cluster is up."""
        if self._admin is None:
            from confluent_kafka.admin import AdminClient

            from harness.client import LIBRDKAFKA_LOG

            self._admin = AdminClient({"bootstrap.servers": self.bootstrap_servers,
                                       "logger": LIBRDKAFKA_LOG})  # fmt: skip
        if len(topics) == 1:
            return self._admin.list_topics(topics[0], timeout=METADATA_TIMEOUT_S)
        return self._admin.list_topics(timeout=METADATA_TIMEOUT_S)

    @staticmethod
    def _find(meta: Any, topic: str, partition: int) -> Any:
        t = meta.topics.get(topic)
        if t is None or t.error is not None or partition not in t.partitions:
            why = t.error if t is not None else "unknown topic"
            raise KeyError(f"{topic}-{partition}: {why}")
        return t.partitions[partition]

    def _partition(self, topic: str, partition: int) -> Any:
        return self._find(self._metadata([topic]), topic, partition)

    def leader(self, topic: str, partition: int = 0) -> str:
        """The node leading topic-partition now ("broker-N"); KeyError without a leader."""
        p = self._partition(topic, partition)
        if p.leader < 0:
            raise KeyError(f"{topic}-{partition} has no leader")
        return f"broker-{p.leader}"

    def followers(self, topic: str, partition: int = 0) -> list[str]:
        p = self._partition(topic, partition)
        return [f"broker-{r}" for r in p.replicas if r != p.leader]

    def wait_settled(self, timeout_s: float = 60.0) -> None:
        deadline = time.monotonic() + timeout_s
        while True:
            missing = self._unsettled()
            if not missing:
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"not settled within {timeout_s:g}s: " + "; ".join(missing))
            time.sleep(SETTLE_POLL_S)

    def _unsettled(self) -> list[str]:
        out = []
        meta = self._metadata(list(self.topics)) if self.topics else None
        for name, topic in self.topics.items():
            for i in range(topic.partitions):
                try:
                    p = self._find(meta, name, i)
                except KeyError as e:
                    out.append(str(e))
                    continue
                if p.leader < 0 or sorted(p.isrs) != sorted(p.replicas):
                    out.append(f"{name}-{i}: leader {p.leader}, isr {sorted(p.isrs)} of "
                               f"{sorted(p.replicas)}")  # fmt: skip
        return out

    # --- faults ---------------------------------------------------------------------------

    def kill(self, node: str) -> None:
        self.cluster.kill(node)

    def stop(self, node: str) -> None:
        self.cluster.stop(node)

    def start(self, node: str) -> None:
        self.cluster.start(node)

    def pause(self, node: str) -> None:
        self.cluster.pause(node)

    def resume(self, node: str) -> None:
        self.cluster.resume(node)

    def partition(self, a: str, b: str) -> None:
        self.cluster.net.partition(a, b)

    def latency(self, a: str, b: str, ms: int, jitter_ms: int = 0) -> None:
        self.cluster.net.latency(a, b, ms, jitter_ms)

    def heal(self) -> None:
        self.cluster.net.heal_all()

    # --- history and checker --------------------------------------------------------------

    def history(self) -> History:
        h = History(self.store / f"history-{len(self._histories) + 1}")
        self._histories.append(h)
        return h

    def read_back(self, history: History, timeout_s: float = 60.0) -> Any:
        """Final reads of every partition of the created topics into `history`."""
        from harness.client import drain

        parts = [(n, i) for n, t in self.topics.items() for i in range(t.partitions)]
        return drain(self.bootstrap_servers, history.writer, parts, history.new_process,
                     timeout_s=timeout_s)  # fmt: skip

    def check(self, history: History, spark_master: str = "local[2]") -> dict[str, int]:
        """The checker's anomaly counts for `history` (its whole results in `results`)."""
        from harness.checker.check import check_runs

        history.writer.close()
        [result] = check_runs([history.directory], spark_master=spark_master, expected={})
        if result.results is None:
            raise RuntimeError(f"the checker could not judge {history.path}: {result.error}")
        self.results = result.results
        return {name: int(a["count"]) for name, a in result.results["anomalies"].items()}
