"""The plan builder: a composed, overridden node tree in, a validated `Plan` out.

Sections by concern: the typed node reads are NodeReader's (harness.plan.yamlnodes), `faults`
and `nemesis` StepsMixin's (harness.plan.steps), `modes` ModesMixin's (harness.plan.modes);
this module holds the top level, cluster (topics, kafka_version and switches), workload and
`expected`.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from broker_app.kafka_versions import SWITCH_NAMES, KafkaVersionError, check_value, preset, resolve
from harness.checker.expectations import EXPECTABLE, Expectation, parse_expression
from harness.checker.history import ACKS
from harness.plan.model import (
    CATALOG_SIZE,
    ClusterSpec,
    ConsumerSpec,
    DrainSpec,
    NemesisSpec,
    Plan,
    ProducerSpec,
    SettleSpec,
    TopicSpec,
    WorkloadSpec,
)
from harness.plan.modes import ModesMixin
from harness.plan.steps import MAX_SECONDS, MAX_TIMEOUT, StepsMixin
from harness.plan.yamlnodes import NodeReader, describe, join, suggest

CONSUMER_MODES = ("assign", "subscribe")
COMMIT_MODES = ("sync", "async", "auto", "none")  # harness.group_client.COMMIT_MODES
OFFSET_RESETS = ("earliest", "latest")  # librdkafka's auto.offset.reset, assign mode
ASSIGNORS = ("range", "roundrobin", "cooperative-sticky")
TOPIC_NAME = re.compile(r"^[A-Za-z0-9._-]{1,249}$")


class PlanBuilder(NodeReader, StepsMixin, ModesMixin):
    """A plan file's node tree -> Plan (`plan(root, overrides)`); one per load."""

    def __init__(self, source: str) -> None:
        super().__init__(source)
        self.partitions: dict[str, int] = {}  # name -> replication factor
        self.brokers: tuple[int, ...] = ()
        self.controllers: tuple[int, ...] = (1,)
        self.notes: list[str] = []


    def plan(self, root: Node, overrides: dict[str, str]) -> Plan:
        m = self.mapping(root, "", ("name", "description", "cluster", "workload", "faults",
                                    "nemesis", "expected", "settle", "drain", "modes",
                                    "title", "catalog"),
                         required=("cluster", "workload"))
        name = Path(self.source).stem
        if "name" in m:
            name = self.str_(m["name"][1], "name")
        description = self.str_(m["description"][1], "description") if "description" in m else ""
        title = self.str_(m["title"][1], "title").strip() if "title" in m else ""
        catalog = tuple(self.int_(n, join("catalog", i), 1, CATALOG_SIZE)
                        for i, n in enumerate(self.seq(m["catalog"][1], "catalog"))
                        ) if "catalog" in m else ()  # fmt: skip
        cluster = self.cluster(m["cluster"][1], "cluster")
        workload = self.workload(m["workload"][1], "workload")
        faults = self.faults(m["faults"][1], "faults") if "faults" in m else ()
        self.check_group_steps(faults, workload)
        nemesis = NemesisSpec()
        if "nemesis" in m:
            nemesis = self.nemesis(m["nemesis"][1], "nemesis", cluster)
            if nemesis.mode == "random" and faults:
                raise self.error(m["faults"][0], "faults",
                                 "must be empty with nemesis.mode random (the seed draws them)")
        expected = self.expected(m["expected"][1], "expected") if "expected" in m else {}
        settle, drain = SettleSpec(), DrainSpec()
        if "settle" in m:
            s = self.mapping(m["settle"][1], "settle", ("timeout_s",))
            if "timeout_s" in s:
                settle = SettleSpec(self.num(s["timeout_s"][1], "settle.timeout_s",
                                             hi=MAX_TIMEOUT, positive=True))
        if "drain" in m:
            d = self.mapping(m["drain"][1], "drain", ("timeout_s", "idle_s"))
            kw = {k: self.num(v, f"drain.{k}", hi=MAX_TIMEOUT, positive=True)
                  for k, (_, v) in d.items()}
            drain = DrainSpec(**kw)
        modes = self.modes(m["modes"][1], "modes") if "modes" in m else {}
        return Plan(name=name, description=description.strip(), source=self.source,
                    cluster=cluster, workload=workload, faults=faults, nemesis=nemesis,
                    expected=expected, settle=settle, drain=drain, overrides=overrides,
                    modes=modes, title=title, catalog=catalog, notes=tuple(self.notes))

    def cluster(self, node: Node, path: str) -> ClusterSpec:
        m = self.mapping(node, path, ("brokers", "controllers", "topics", "switches",
                                      "kafka_version"), required=("topics",))
        brokers = self.int_(m["brokers"][1], f"{path}.brokers", 1, 99) if "brokers" in m else 3
        controllers = (self.int_(m["controllers"][1], f"{path}.controllers", 1, 9)
                       if "controllers" in m else ClusterSpec.controllers)
        self.brokers = tuple(range(1, brokers + 1))
        self.controllers = tuple(range(1, controllers + 1))
        topics: list[TopicSpec] = []
        tpath = f"{path}.topics"
        items = self.seq(m["topics"][1], tpath)
        if not items:
            raise self.error(m["topics"][1], tpath, "needs at least one topic")
        for i, item in enumerate(items):
            t = self.topic(item, join(tpath, i), brokers)
            if any(t.name == o.name for o in topics):
                raise self.error(item, join(tpath, i) + ".name", f"topic {t.name!r} twice")
            topics.append(t)
        switches = self.str_map(m["switches"][1], f"{path}.switches") if "switches" in m else {}
        version = (self.kafka_version(m["kafka_version"][1], f"{path}.kafka_version")
                   if "kafka_version" in m else None)
        if "switches" in m:
            switches = self.version_switches(m["switches"][1], f"{path}.switches", switches,
                                             version, m.get("kafka_version", (None, None))[1])
        spec = ClusterSpec(brokers, controllers, tuple(topics), switches, version)
        self.partitions = spec.partitions()
        return spec

    def kafka_version(self, node: Node, path: str) -> str:
        """A known Kafka release, as written (the scalar's text: YAML would read 4.10 as 4.1)."""
        if not isinstance(node, ScalarNode) or not str(node.value).strip():
            raise self.error(node, path, f'expected a Kafka version like "3.9", got '
                             f"{describe(node)}")
        try:
            preset(str(node.value))
        except KafkaVersionError as e:
            raise self.error(node, path, str(e)) from None
        return str(node.value).strip()

    def version_switches(self, node: Node, path: str, switches: dict[str, str],
                         version: str | None, version_node: Node | None) -> dict[str, str]:
        """Check the version-governed switches against the table. An explicit switch wins over
        the plan's kafka_version preset (docs/kafka-versions.md); each one that changes a
        preset value gets a file:line note. ELR without strict min ISR is refused."""
        assert isinstance(node, MappingNode)
        nodes = {str(k.value): v for k, v in node.value if isinstance(k, ScalarNode)}
        out = dict(switches)
        for name in SWITCH_NAMES:
            if name not in out:
                continue
            try:
                out[name] = check_value(name, out[name])
            except KafkaVersionError as e:
                raise self.error(nodes[name], join(path, name), str(e)) from None
        explicit = {k: v for k, v in out.items() if k in SWITCH_NAMES}
        try:
            resolve(version, explicit)
        except KafkaVersionError as e:
            culprit = next((k for k in ("strict-min-isr", "eligible-leader-replicas")
                            if k in explicit), None)
            where = nodes[culprit] if culprit else (version_node or node)
            raise self.error(where, join(path, culprit) if culprit else path, str(e)) from None
        if version is not None:
            base = preset(version)
            for name, value in explicit.items():
                if value != base[name]:
                    n = nodes[name]
                    at = (f"{self.source}:{n.start_mark.line + 1}" if n.start_mark.line >= 0
                          else f"{self.source}: {n.start_mark.name}")
                    self.notes.append(f"{at}: {join(path, name)}: {value} overrides kafka_version "
                                      f"{version}'s {base[name]} (the explicit switch wins)")
        return out

    def topic(self, node: Node, path: str, brokers: int) -> TopicSpec:
        m = self.mapping(node, path, ("name", "partitions", "replication_factor",
                                      "min_insync_replicas", "configs"), required=("name",))
        name = self.str_(m["name"][1], f"{path}.name")
        if not TOPIC_NAME.match(name):
            raise self.error(m["name"][1], f"{path}.name",
                             f"bad topic name {name!r}: use 1-249 of [A-Za-z0-9._-]")
        parts = (self.int_(m["partitions"][1], f"{path}.partitions", 1, 1000)
                 if "partitions" in m else 1)
        rf = min(3, brokers)
        if "replication_factor" in m:
            rf_node = m["replication_factor"][1]
            rf = self.int_(rf_node, f"{path}.replication_factor", 1)
            if rf > brokers:
                raise self.error(rf_node, f"{path}.replication_factor",
                                 f"{rf} is more than the cluster's {brokers} broker(s)")
        misr = 1
        if "min_insync_replicas" in m:
            misr_node = m["min_insync_replicas"][1]
            misr = self.int_(misr_node, f"{path}.min_insync_replicas", 1)
            if misr > rf:
                raise self.error(misr_node, f"{path}.min_insync_replicas",
                                 f"{misr} is more than replication_factor {rf}")
        configs = self.str_map(m["configs"][1], f"{path}.configs") if "configs" in m else {}
        return TopicSpec(name, parts, rf, misr, configs)

    def partition_ref(self, node: Node, path: str) -> str:
        p = str(self.scalar(node, path, "a partition like t-0"))
        if p not in self.partitions:
            known = ", ".join(sorted(self.partitions))
            raise self.error(node, path, f"unknown partition {p!r} (plan has: {known})"
                             f"{suggest(p, self.partitions)}")
        return p

    def partition_list(self, node: Node, path: str) -> tuple[str, ...]:
        refs = tuple(self.partition_ref(n, join(path, i))
                     for i, n in enumerate(self.seq(node, path)))
        if len(set(refs)) != len(refs):
            raise self.error(node, path, "a partition is listed twice")
        return refs

    def broker_id(self, node: Node, path: str) -> int:
        b = self.int_(node, path)
        if b not in self.brokers:
            raise self.error(node, path, f"no broker {b}: brokers are 1..{len(self.brokers)}")
        return b

    def workload(self, node: Node, path: str) -> WorkloadSpec:
        m = self.mapping(node, path, ("producers", "consumers"), required=("producers",))
        pnode = m["producers"][1]
        ppath = f"{path}.producers"
        if isinstance(pnode, SequenceNode):
            producers = tuple(self.producer(n, join(ppath, i)) for i, n in enumerate(pnode.value))
            if not producers:
                raise self.error(pnode, ppath, "needs at least one producer group")
        else:
            producers = (self.producer(pnode, ppath),)
        consumers = (self.consumers(m["consumers"][1], f"{path}.consumers")
                     if "consumers" in m else ConsumerSpec())
        return WorkloadSpec(producers, consumers)

    def consumers(self, node: Node, path: str) -> ConsumerSpec:
        c = self.mapping(node, path, ("count", "poll_interval_ms", "partitions", "mode", "group",
                                      "commit", "assignor", "max_poll_records", "racks",
                                      "auto_offset_reset"))
        kw: dict[str, Any] = {}
        if "racks" in c:
            items = self.seq(c["racks"][1], f"{path}.racks")
            racks = tuple(self.str_(n, join(f"{path}.racks", i)) for i, n in enumerate(items))
            if not racks or not all(racks):
                raise self.error(c["racks"][1], f"{path}.racks",
                                 "a list of non-empty rack names (e.g. rack-2: broker 2's)")
            kw["racks"] = racks
        if "count" in c:
            kw["count"] = self.int_(c["count"][1], f"{path}.count", 0, 1000)
        if "poll_interval_ms" in c:
            kw["poll_interval_ms"] = self.int_(c["poll_interval_ms"][1],
                                               f"{path}.poll_interval_ms", 1, 60_000)
        for key, choices in (("mode", CONSUMER_MODES), ("commit", COMMIT_MODES),
                             ("assignor", ASSIGNORS), ("auto_offset_reset", OFFSET_RESETS)):
            if key in c:
                kw[key] = self.enum(c[key][1], f"{path}.{key}", choices)
        mode = kw.get("mode", "assign")
        for key in ("group", "commit", "assignor", "max_poll_records"):
            if key in c and mode != "subscribe":
                raise self.error(c[key][0], f"{path}.{key}",
                                 "only with mode: subscribe (assign mode has no group)")
        if "auto_offset_reset" in c and mode == "subscribe":
            raise self.error(c["auto_offset_reset"][0], f"{path}.auto_offset_reset",
                             "only with mode: assign (group members start from the group's "
                             "committed offsets)")
        if "partitions" in c:
            if mode == "subscribe":
                raise self.error(c["partitions"][0], f"{path}.partitions",
                                 "not with mode: subscribe (the group subscribes to every "
                                 "topic of the plan; the coordinator assigns partitions)")
            kw["partitions"] = self.partition_list(c["partitions"][1], f"{path}.partitions")
        if "max_poll_records" in c:
            kw["max_poll_records"] = self.int_(c["max_poll_records"][1],
                                               f"{path}.max_poll_records", 1, 100_000)
        if "group" in c:
            group = self.str_(c["group"][1], f"{path}.group")
            if not TOPIC_NAME.match(group):
                raise self.error(c["group"][1], f"{path}.group",
                                 f"bad group id {group!r}: use 1-249 of [A-Za-z0-9._-]")
            kw["group"] = group
        return ConsumerSpec(**kw)

    def producer(self, node: Node, path: str) -> ProducerSpec:
        m = self.mapping(node, path, ("count", "acks", "rate", "values", "duration_s",
                                      "partitions", "idempotence", "timeout_ms"))
        kw: dict[str, Any] = {}
        if "count" in m:
            kw["count"] = self.int_(m["count"][1], f"{path}.count", 1, 1000)
        if "acks" in m:
            kw["acks"] = self.acks(m["acks"][1], f"{path}.acks")
        if "rate" in m:
            kw["rate"] = self.num(m["rate"][1], f"{path}.rate", hi=1e6, positive=True)
        if "values" in m and "duration_s" in m:
            raise self.error(m["duration_s"][0], f"{path}.duration_s",
                             "give either values or duration_s, not both")
        if "values" in m:
            kw["values"] = self.int_(m["values"][1], f"{path}.values", 1, 10**9)
        elif "duration_s" in m:
            kw["duration_s"] = self.num(m["duration_s"][1], f"{path}.duration_s",
                                        hi=MAX_SECONDS, positive=True)
        else:
            raise self.error(node, f"{path}.values",
                             "missing: give values (how many) or duration_s (how long)")
        if "partitions" in m:
            kw["partitions"] = self.partition_list(m["partitions"][1], f"{path}.partitions")
        if "idempotence" in m:
            kw["idempotence"] = self.bool_(m["idempotence"][1], f"{path}.idempotence")
        if "timeout_ms" in m:
            kw["timeout_ms"] = self.int_(m["timeout_ms"][1], f"{path}.timeout_ms", 1, 3_600_000)
        return ProducerSpec(**kw)

    def acks(self, node: Node, path: str) -> str:
        v = self.scalar(node, path, 'acks: "0", "1" or "all"')
        text = "all" if str(v) in ("-1", "all") and not isinstance(v, bool) else str(v)
        if isinstance(v, bool) or text not in ACKS:
            raise self.error(node, path, f'acks must be "0", "1" or "all" (or -1), got '
                             f"{describe(node)}")
        return text


    def expected(self, node: Node, path: str) -> dict[str, Expectation]:
        m = self.mapping(node, path, EXPECTABLE)
        out: dict[str, Expectation] = {}
        for anomaly, (_, vnode) in m.items():
            v = self.scalar(vnode, join(path, anomaly), 'an expression like "== 0" or "> 0"')
            if isinstance(v, int) and not isinstance(v, bool) and v >= 0:
                out[anomaly] = Expectation(anomaly, "==", v)
                continue
            match = parse_expression(v) if isinstance(v, str) else None
            if match is None:
                raise self.error(vnode, join(path, anomaly),
                                 f'expected an expression like "== 0" or "> 0", got '
                                 f"{describe(vnode)}")
            out[anomaly] = Expectation(anomaly, *match)
        return out
