"""The containers' runtime of the one run pipeline (harness/run/pipeline.py).

ContainerRuntime carries the pipeline's phases on an ObservedCluster (harness/run/observed.py:
brokers and controllers in containers, Toxiproxy on every link) on the wall clock: topics
through a real AdminClient (`create_topics`, retried while brokers register), the state as
the StatePoller last read it from the nodes' admin `GET /state`, the plan's workload as real
confluent-kafka clients through the proxies (harness/workload.py), the one Nemesis in a
thread of its own (TICK_S), final reads by a fresh consumer (harness/client.drain), and a
live progress line. Before the heal it records in run.json whether any connection bypassed
Toxiproxy (`direct_connections`). `close()` stops whatever is still running, whatever failed.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from harness.run.pipeline import RunAborted, describe

TOPIC_CREATE_TIMEOUT_S = 90.0
# Producers run their plan's duration; past this extra time the run stops waiting for them.
WORKLOAD_GRACE_S = 60.0


class ContainerRuntime:
    """harness.run.pipeline.Runtime on containers (see the module docstring)."""

    def __init__(self, plan: Any, cluster: Any, history: Any, run_dir: Any,
                 duration_s: float | None) -> None:
        self.plan = plan
        self.cluster = cluster
        self.history = history
        self.run_dir = run_dir
        self.duration_s = duration_s
        self.poller: Any = None  # the run's StatePoller (set before the phases start)
        self.t0 = time.monotonic()  # time 0 of the faults, reset when they start
        self.workload_: Any = None
        self.nemesis: Any = None
        self.progress: Any = None
        self.ids: Any = None

    # --- clock and state --------------------------------------------------------------------

    def now(self) -> float:
        return time.monotonic()

    def elapsed(self) -> float:
        return time.monotonic() - self.t0

    def state(self) -> Any:
        return self.poller.latest()

    def fresh_state(self) -> Any:
        return self.poller.latest()

    def say(self, text: str) -> None:
        if self.progress is not None:
            self.progress.print(text)
        else:
            print(f"highwater run: {text}")

    def wait_for(self, pred: Callable[[Any], bool], timeout_s: float) -> Any:
        if self.progress is not None:
            self.progress.phase = "settling"
        return self.poller.wait_for(pred, timeout_s)

    # --- phases -----------------------------------------------------------------------------

    def create_topics(self, topics: Sequence[Any], timeout_s: float) -> None:
        from harness.state_poller import settled

        create_topics(self.cluster.bootstrap, topics)
        if self.poller.wait_for(settled, timeout_s) is None:
            raise RunAborted(f"topics not led with a full ISR within {timeout_s:g}s: "
                             f"{describe(self.poller.latest())}")

    def workload(self) -> Any:
        from harness.client import ProcessIds
        from harness.workload import workload_from_plan

        self.ids = ProcessIds()
        self.workload_ = workload_from_plan(self.plan, self.cluster.bootstrap, self.history,
                                            new_process=self.ids, duration_s=self.duration_s)
        return self.workload_

    def run_faults(self, wl: Any, nemesis: Any) -> None:
        from harness.run.progress import Progress

        self.nemesis = nemesis
        self.progress = Progress(lambda: dict(wl.stats), lambda: nemesis.active)
        self.t0 = time.monotonic()
        self.progress.phase = "workload"
        self.progress.start()
        wl.start()
        nemesis.start(self.t0)
        self._wait_workload_and_faults(wl, nemesis)
        # While the clients are still connected: every accepted connection must come
        # through Toxiproxy, or the plan's network faults were no-ops for it.
        direct = _direct_connections(self.cluster)
        bypass = {n: c["direct"] for n, c in direct.items() if c.get("direct")}
        if bypass:
            self.say(f"WARNING: connections bypass Toxiproxy: {bypass}")
        self.run_dir.write_meta(direct_connections=direct)
        self.progress.phase = "healing"
        wl.stop(timeout_s=60)
        nemesis.stop(timeout_s=120)

    def _wait_workload_and_faults(self, wl: Any, nemesis: Any) -> None:
        expected = self.duration_s or self.plan.workload.duration_s()
        deadline = time.monotonic() + expected + WORKLOAD_GRACE_S
        while time.monotonic() < deadline:
            if nemesis.failure:
                raise RunAborted(nemesis.failure)
            # Both: producers finished, and every step fired (or was skipped) and was undone.
            if wl.wait_producers(timeout_s=0.5) and nemesis.done():
                break
        else:
            if not wl.wait_producers(timeout_s=0):
                raise RunAborted(f"producers still running {WORKLOAD_GRACE_S:g}s after their "
                                 f"{expected:g}s")
        if nemesis.failure:
            raise RunAborted(nemesis.failure)

    def drain(self, timeout_s: float, idle_s: float) -> Any:
        from harness.client import drain
        from harness.workload import all_partitions

        if self.progress is not None:
            self.progress.phase = "draining"
        result = drain(self.cluster.bootstrap, self.history, all_partitions(self.plan.cluster),
                       self.ids, timeout_s=timeout_s, idle_s=idle_s)
        if self.progress is not None:
            self.progress.stop()
        return result

    def close(self) -> None:
        """Stop the progress line, the workload, the nemesis and the poller (cleanup goes on
        whatever one part says)."""
        for thing in (self.progress, self.workload_, self.nemesis, self.poller):
            if thing is not None:
                try:
                    thing.stop()
                except Exception:  # cleanup goes on whatever one part says
                    pass


def _direct_connections(cluster: Any) -> dict[str, dict[str, Any]]:
    """cluster.direct_connections(), or the reason it could not be read (never fatal)."""
    try:
        return cluster.direct_connections()
    except Exception as exc:  # docker busy or the API changed: report, do not abort the run
        return {"*": {"unreadable": f"{type(exc).__name__}: {exc}"}}


def create_topics(bootstrap: str, topics: Any, timeout_s: float = TOPIC_CREATE_TIMEOUT_S) -> None:
    """CreateTopics with RF, min.insync.replicas and configs; retried (bounded) while the
    brokers are still registering. TOPIC_ALREADY_EXISTS counts as done."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient, NewTopic
    from tenacity import Retrying, retry_if_exception_type, stop_after_delay, wait_fixed

    from harness.client import LIBRDKAFKA_LOG

    admin = AdminClient({"bootstrap.servers": bootstrap, "logger": LIBRDKAFKA_LOG})
    for t in topics:
        config = {"min.insync.replicas": str(t.min_insync_replicas), **t.configs}

        def create(t: Any = t, config: dict[str, str] = config) -> None:
            fut = admin.create_topics([NewTopic(t.name, t.partitions, t.replication_factor,
                                                config=config)], request_timeout=15)[t.name]
            try:
                fut.result(timeout=30)
            except KafkaException as exc:
                if "TOPIC_ALREADY_EXISTS" not in str(exc):
                    raise

        try:
            for attempt in Retrying(stop=stop_after_delay(timeout_s), wait=wait_fixed(1.0),
                                    retry=retry_if_exception_type(KafkaException),
                                    reraise=True):
                with attempt:
                    create()
        except KafkaException as exc:
            raise RunAborted(f"cannot create topic {t.name!r}: {exc}") from exc
