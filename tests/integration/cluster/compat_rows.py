"""The rows of the client compatibility table: one function per (client, feature).

A row function gets the bootstrap string and a fresh topic name (already created with 1
partition, RF 3, holding 3 records at offsets 0-2) and returns None when the feature worked end
to end (checked, not just called), "n/a" when the client library has no API for it, or raises.
The table (docs/compat.md, copied into the README) is what test_client_compat.py measures.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import time
import uuid
from collections.abc import Callable
from typing import Any

import confluent_kafka as ck
import confluent_kafka.admin as cka
import kafka as kp
import kafka.admin as kpa
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient, RecordsToDelete
from aiokafka.admin import NewPartitions as AioNewPartitions
from aiokafka.admin import NewTopic as AioNewTopic
from aiokafka.admin.config_resource import ConfigResource as AioConfigResource
from aiokafka.admin.config_resource import ConfigResourceType as AioResourceType
from aiokafka.structs import TopicPartition as AioTp

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
ROWS = [*(f"produce ({c})" for c in CODECS), "consume", "metadata", "list offsets",
        "create/delete topic", "create partitions", "describe configs", "alter configs",
        "dynamic broker configs", "delete records", "describe log dirs", "describe cluster",
        "elect leaders",
        "list/alter reassignments", "subscribe with a group + commit",
        "list/describe/delete groups", "fetch from follower (client.rack)",
        "transactions"]  # fmt: skip
FOLLOWER_ROW = "fetch from follower (client.rack)"
CLIENTS = ["confluent-kafka", "kafka-python", "aiokafka", "kcat"]
Row = Callable[[str, str], "str | None"]
VALUES = [b"r0", b"r1", b"r2"]
BROKERS = ["1", "2", "3"]  # the compat cluster's broker ids, as config resource names


def _check(cond: bool, what: str) -> None:
    if not cond:
        raise AssertionError(what)


def _eventually(check: Callable[[], Any], what: str, timeout: float = 5.0) -> None:
    """A change committed by the controller reaches each broker's metadata a little later (as
    in Kafka); a client reading through another broker may need a moment to see it."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(what)
        time.sleep(0.1)


async def _eventually_async(check: Callable[[], Any], what: str, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not await check():
        if time.monotonic() > deadline:
            raise AssertionError(what)
        await asyncio.sleep(0.1)


def _field(part: dict[str, Any], name: str) -> Any:
    """A partition field of a describe_topics dict: the libraries name them differently
    (kafka-python 3: Kafka's names, isr_nodes/replica_nodes; aiokafka: isr/replicas)."""
    return part[name] if name in part else part[f"{name.rstrip('s')}_nodes"]


def _new_name() -> str:
    return f"c-{uuid.uuid4().hex[:10]}"


# --- confluent-kafka ------------------------------------------------------------------------


def _ck_admin(bs: str) -> cka.AdminClient:
    return cka.AdminClient({"bootstrap.servers": bs})


def rack_of(broker_id: int) -> str:
    """The broker.rack test_client_compat.py gives broker `broker_id` (KIP-392 rows)."""
    return f"rack-{broker_id}"


def follower_rack(bs: str, topic: str) -> str:
    """The rack of a follower of `topic`-0: a consumer there is sent to that follower."""
    part = _ck_admin(bs).list_topics(topic, timeout=10).topics[topic].partitions[0]
    return rack_of(next(r for r in part.replicas if r != part.leader))


def _ck_consume(bs: str, topic: str, n: int, group: str | None = None,
                rack: str = "") -> list[bytes]:
    c = ck.Consumer({"bootstrap.servers": bs, "group.id": group or _new_name(),
                     "auto.offset.reset": "earliest", "enable.auto.commit": False,
                     "client.rack": rack})  # fmt: skip
    try:
        if group is None:
            c.assign([ck.TopicPartition(topic, 0, 0)])
        else:
            c.subscribe([topic])
        got: list[bytes] = []
        deadline = time.monotonic() + 20
        while len(got) < n and time.monotonic() < deadline:
            m = c.poll(0.2)
            if m is not None and m.error() is None:
                got.append(m.value())
        if group is not None and got:
            c.commit(asynchronous=False)
            committed = c.committed([ck.TopicPartition(topic, 0)], timeout=10)
            _check(committed[0].offset == n, f"committed {committed[0].offset}")
        return got
    finally:
        c.close()


def ck_produce(codec: str) -> Row:
    def row(bs: str, topic: str) -> None:
        p = ck.Producer({"bootstrap.servers": bs, "compression.type": codec, "acks": "all"})
        for v in (b"x" * 100, b"y" * 100):
            p.produce(topic, v, partition=0)
        _check(p.flush(15) == 0, "undelivered")
        _check(_ck_consume(bs, topic, 5)[3:] == [b"x" * 100, b"y" * 100], "read back")
    return row


def ck_consume(bs: str, topic: str) -> None:
    _check(_ck_consume(bs, topic, 3) == VALUES, "records")


def ck_follower(bs: str, topic: str) -> None:
    _check(_ck_consume(bs, topic, 3, rack=follower_rack(bs, topic)) == VALUES, "records")


def ck_metadata(bs: str, topic: str) -> None:
    md = _ck_admin(bs).list_topics(timeout=10)
    _check(len(md.brokers) == 3 and len(md.topics[topic].partitions[0].isrs) == 3, str(md))


def ck_list_offsets(bs: str, topic: str) -> None:
    tp, a = ck.TopicPartition(topic, 0), _ck_admin(bs)  # keep `a`: its futures need it
    fs = a.list_offsets({tp: cka.OffsetSpec.earliest()})
    _check(fs[tp].result(10).offset == 0, "earliest")
    fs = a.list_offsets({tp: cka.OffsetSpec.latest()})
    _check(fs[tp].result(10).offset == 3, "latest")


def ck_create_delete(bs: str, topic: str) -> None:
    a, name = _ck_admin(bs), _new_name()
    a.create_topics([cka.NewTopic(name, 2, 3)])[name].result(15)
    a.delete_topics([name])[name].result(15)
    _eventually(lambda: name not in a.list_topics(timeout=10).topics, "still listed")


def ck_create_partitions(bs: str, topic: str) -> None:
    a = _ck_admin(bs)
    a.create_partitions([cka.NewPartitions(topic, 3)])[topic].result(15)
    _eventually(lambda: len(a.list_topics(topic, timeout=10).topics[topic].partitions) == 3,
                "3 partitions")  # fmt: skip


def ck_describe_configs(bs: str, topic: str) -> None:
    a = _ck_admin(bs)
    res = cka.ConfigResource(cka.ResourceType.TOPIC, topic)
    configs = a.describe_configs([res])[res].result(10)
    _check(configs["min.insync.replicas"].value == "2", "min.insync.replicas")
    broker = cka.ConfigResource(cka.ResourceType.BROKER, "1")
    _check("num.partitions" in a.describe_configs([broker])[broker].result(10), "broker")


def ck_alter_configs(bs: str, topic: str) -> None:
    a = _ck_admin(bs)
    res = cka.ConfigResource(cka.ResourceType.TOPIC, topic, incremental_configs=[
        cka.ConfigEntry("retention.ms", "1234",
                        incremental_operation=cka.AlterConfigOpType.SET)])  # fmt: skip
    a.incremental_alter_configs([res])[res].result(15)
    plain = cka.ConfigResource(cka.ResourceType.TOPIC, topic)
    _eventually(lambda: a.describe_configs([plain])[plain].result(10)["retention.ms"].value
                == "1234", "retention.ms set")  # fmt: skip
    bad = cka.ConfigResource(cka.ResourceType.TOPIC, topic, incremental_configs=[
        cka.ConfigEntry("no.such", "1", incremental_operation=cka.AlterConfigOpType.SET)])
    try:
        a.incremental_alter_configs([bad])[bad].result(15)
    except ck.KafkaException as e:
        _check("no.such" in str(e), str(e))
    else:
        raise AssertionError("unknown config accepted")


def _acks_all_ok(bs: str, topic: str) -> bool:
    """One acks=all send to `topic` (RF 1, no topic-level min.insync.replicas): True when it
    is acknowledged, False when the broker refuses it (NOT_ENOUGH_REPLICAS until the timeout)."""
    # kafka-python's producer (no retries): the answer itself, NOT_ENOUGH_REPLICAS or not
    p = kp.KafkaProducer(bootstrap_servers=bs, acks="all", retries=0, request_timeout_ms=5000)
    try:
        p.send(topic, b"v", partition=0).get(timeout=10)
        return True
    except kp.errors.KafkaError:
        return False
    finally:
        p.close(timeout=5)


def _rf1_topic(bs: str) -> str:
    name, a = _new_name(), _ck_admin(bs)
    a.create_topics([cka.NewTopic(name, 1, 1)])[name].result(15)
    _eventually(lambda: _acks_all_ok(bs, name), "the new RF 1 topic takes acks=all sends", 15)
    return name


def _honoured(bs: str, alter: Callable[[str | None], None]) -> None:
    """`alter(value)` sets (value None: deletes) a dynamic min.insync.replicas on every broker
    (the client libraries accept only broker ids as names, not "" for the cluster default);
    the brokers must honour it: an RF 1 topic without its own setting refuses acks=all at 2
    and takes it again once the dynamic value is gone."""
    topic = _rf1_topic(bs)
    alter("2")
    try:
        _eventually(lambda: not _acks_all_ok(bs, topic), "min.insync.replicas=2 not honoured", 15)
    finally:
        alter(None)
    _eventually(lambda: _acks_all_ok(bs, topic), "deleting the dynamic value not honoured", 15)


def ck_broker_configs(bs: str, topic: str) -> None:
    a = _ck_admin(bs)

    def alter(value: str | None) -> None:
        op = cka.AlterConfigOpType.SET if value is not None else cka.AlterConfigOpType.DELETE
        for b in BROKERS:
            res = cka.ConfigResource(cka.ResourceType.BROKER, b, incremental_configs=[
                cka.ConfigEntry("min.insync.replicas", value, incremental_operation=op)])
            a.incremental_alter_configs([res])[res].result(15)
        if value is not None:  # described as a dynamic broker config (source 2)
            b1 = cka.ConfigResource(cka.ResourceType.BROKER, "1")
            entry = a.describe_configs([b1])[b1].result(10)["min.insync.replicas"]
            _check((entry.value, int(entry.source)) == (value, 2), f"described {entry}")

    _honoured(bs, alter)
    bad = cka.ConfigResource(cka.ResourceType.BROKER, "1", incremental_configs=[
        cka.ConfigEntry("no.such", "1", incremental_operation=cka.AlterConfigOpType.SET)])
    try:
        a.incremental_alter_configs([bad])[bad].result(15)
    except ck.KafkaException as e:
        _check("no.such" in str(e), str(e))
    else:
        raise AssertionError("unknown broker config accepted")


def ck_delete_records(bs: str, topic: str) -> None:
    tp, a = ck.TopicPartition(topic, 0, 2), _ck_admin(bs)
    a.delete_records([tp])[tp].result(15)
    _check(_ck_consume(bs, topic, 1) == [b"r2"], "first record after delete")


def ck_describe_cluster(bs: str, topic: str) -> None:
    a = _ck_admin(bs)
    d = a.describe_cluster().result(10)
    _check(len(d.nodes) == 3 and d.controller is not None, str(d))


def ck_elect_leaders(bs: str, topic: str) -> None:
    tp, a = ck.TopicPartition(topic, 0), _ck_admin(bs)
    res = a.elect_leaders(ck.ElectionType.PREFERRED, [tp]).result(15)
    _check(tp in res, str(res))  # ELECTION_NOT_NEEDED comes back as the partition's error


def ck_group(bs: str, topic: str) -> None:
    _check(_ck_consume(bs, topic, 3, group=f"g-{topic}") == VALUES, "records")


def ck_groups_admin(bs: str, topic: str) -> None:
    group = f"g-{topic}"
    _ck_consume(bs, topic, 3, group=group)
    a = _ck_admin(bs)
    listed = a.list_consumer_groups().result(10)
    _check(group in {g.group_id for g in listed.valid}, "listed")
    d = a.describe_consumer_groups([group])[group].result(10)
    _check(d.group_id == group, "described")
    a.delete_consumer_groups([group])[group].result(10)


def ck_transactions(bs: str, topic: str) -> str | None:
    p = ck.Producer({"bootstrap.servers": bs, "transactional.id": _new_name()})
    try:
        p.init_transactions(10)
    except ck.KafkaException:
        return "not yet"
    p.begin_transaction()
    p.produce(topic, b"t", partition=0)
    p.commit_transaction(10)
    return None


# --- kafka-python ---------------------------------------------------------------------------


def _kp_admin(bs: str) -> kp.KafkaAdminClient:
    return kp.KafkaAdminClient(bootstrap_servers=bs, request_timeout_ms=15000)


def _kp_consume(bs: str, topic: str, n: int, group: str | None = None,
                rack: str = "") -> list[bytes]:
    c = kp.KafkaConsumer(bootstrap_servers=bs, group_id=group, auto_offset_reset="earliest",
                         enable_auto_commit=False, consumer_timeout_ms=15000,
                         client_rack=rack)  # fmt: skip
    try:
        if group is None:
            c.assign([kp.TopicPartition(topic, 0)])
        else:
            c.subscribe([topic])
        got = []
        for m in c:
            got.append(m.value)
            if len(got) >= n:
                break
        if group is not None:
            c.commit()
            _check(c.committed(kp.TopicPartition(topic, 0)) == n, "committed")
        return got
    finally:
        c.close()


def kp_produce(codec: str) -> Row:
    def row(bs: str, topic: str) -> None:
        p = kp.KafkaProducer(bootstrap_servers=bs, acks="all",
                             compression_type=None if codec == "none" else codec)  # fmt: skip
        for v in (b"x" * 100, b"y" * 100):
            p.send(topic, v, partition=0).get(15)
        p.close()
        _check(_kp_consume(bs, topic, 5)[3:] == [b"x" * 100, b"y" * 100], "read back")
    return row


def kp_consume(bs: str, topic: str) -> None:
    _check(_kp_consume(bs, topic, 3) == VALUES, "records")


def kp_follower(bs: str, topic: str) -> None:
    _check(_kp_consume(bs, topic, 3, rack=follower_rack(bs, topic)) == VALUES, "records")


def kp_metadata(bs: str, topic: str) -> None:
    a = _kp_admin(bs)
    [t] = a.describe_topics([topic])
    _check(len(_field(t["partitions"][0], "isr")) == 3, str(t))
    a.close()


def kp_list_offsets(bs: str, topic: str) -> None:
    c = kp.KafkaConsumer(bootstrap_servers=bs)
    tp = kp.TopicPartition(topic, 0)
    _check((c.beginning_offsets([tp])[tp], c.end_offsets([tp])[tp]) == (0, 3), "offsets")
    c.close()


def kp_create_delete(bs: str, topic: str) -> None:
    a, name = _kp_admin(bs), _new_name()
    a.create_topics([kpa.NewTopic(name, 2, 3)])
    a.delete_topics([name])
    _eventually(lambda: name not in a.list_topics(), "still listed")
    a.close()


def kp_create_partitions(bs: str, topic: str) -> None:
    a = _kp_admin(bs)
    a.create_partitions({topic: kpa.NewPartitions(3)})
    _eventually(lambda: len(a.describe_topics([topic])[0]["partitions"]) == 3, "3 partitions")
    a.close()


def kp_describe_configs(bs: str, topic: str) -> None:
    a = _kp_admin(bs)
    out = a.describe_configs([kpa.ConfigResource(kpa.ConfigResourceType.TOPIC, topic)],
                             config_filter="all")  # fmt: skip
    _check("min.insync.replicas" in str(out) and "'2'" in str(out), str(out)[:300])
    out = a.describe_configs([kpa.ConfigResource(kpa.ConfigResourceType.BROKER, "1")],
                             config_filter="all")  # fmt: skip
    _check("num.partitions" in str(out), str(out)[:300])
    a.close()


def kp_alter_configs(bs: str, topic: str) -> None:
    a = _kp_admin(bs)
    a.alter_configs([kpa.ConfigResource(kpa.ConfigResourceType.TOPIC, topic,
                                        configs={"retention.ms": "4321",
                                                 "min.insync.replicas": "2"})])  # fmt: skip
    res = kpa.ConfigResource(kpa.ConfigResourceType.TOPIC, topic)
    _eventually(lambda: "4321" in str(a.describe_configs([res])), "retention.ms set")
    a.close()


def kp_broker_configs(bs: str, topic: str) -> None:
    a = _kp_admin(bs)
    try:
        # kafka-python 3 sends IncrementalAlterConfigs when the broker offers it: SET / DELETE
        _honoured(bs, lambda v: a.alter_configs([kpa.ConfigResource(
            kpa.ConfigResourceType.BROKER, b, configs={"min.insync.replicas": (
                "DELETE", None) if v is None else v}) for b in BROKERS]))
    finally:
        a.close()


def kp_delete_records(bs: str, topic: str) -> None:
    a = _kp_admin(bs)
    a.delete_records({kp.TopicPartition(topic, 0): 2})
    a.close()
    _check(_kp_consume(bs, topic, 1) == [b"r2"], "first record after delete")


def kp_describe_log_dirs(bs: str, topic: str) -> None:
    a = _kp_admin(bs)
    out = a.describe_log_dirs()
    _check(topic in str(out), str(out)[:300])
    a.close()


def kp_describe_cluster(bs: str, topic: str) -> None:
    a = _kp_admin(bs)
    d = a.describe_cluster()
    _check(len(d["brokers"]) == 3, str(d))
    a.close()


def kp_elect_leaders(bs: str, topic: str) -> None:
    a = _kp_admin(bs)
    a.elect_leaders(kpa.client.ElectionType.PREFERRED if hasattr(kpa.client, "ElectionType")
                    else 0, [kp.TopicPartition(topic, 0)], raise_errors=False)  # fmt: skip
    a.close()


def kp_reassignments(bs: str, topic: str) -> None:
    a = _kp_admin(bs)
    [t] = a.describe_topics([topic])
    replicas = _field(t["partitions"][0], "replicas")
    a.alter_partition_reassignments({kp.TopicPartition(topic, 0): list(reversed(replicas))})
    a.list_partition_reassignments()
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        [t] = a.describe_topics([topic])
        if _field(t["partitions"][0], "replicas") == list(reversed(replicas)):
            break
        time.sleep(0.2)
    _check(_field(t["partitions"][0], "replicas") == list(reversed(replicas)), str(t))
    a.close()


def kp_group(bs: str, topic: str) -> None:
    _check(_kp_consume(bs, topic, 3, group=f"g-{topic}") == VALUES, "records")


def kp_groups_admin(bs: str, topic: str) -> None:
    group = f"g-{topic}"
    _kp_consume(bs, topic, 3, group=group)
    a = _kp_admin(bs)
    _check(group in str(a.list_groups()), "listed")
    _check(group in str(a.describe_groups([group])), "described")
    a.delete_groups([group])
    a.close()


def kp_transactions(bs: str, topic: str) -> str | None:
    try:
        p = kp.KafkaProducer(bootstrap_servers=bs, transactional_id=_new_name(),
                             max_block_ms=5000)  # fmt: skip
        p.init_transactions()
    except Exception:  # noqa: BLE001 - any failure means "not supported"
        return "not yet"
    p.begin_transaction()
    p.send(topic, b"t", partition=0)
    p.commit_transaction()
    return None


# --- aiokafka -----------------------------------------------------------------------------


def _aio(coro_fn: Callable[..., Any]) -> Row:
    def row(bs: str, topic: str) -> Any:
        return asyncio.run(asyncio.wait_for(coro_fn(bs, topic), 30))
    return row


async def _aio_consume(bs: str, topic: str, n: int, group: str | None = None,
                       rack: str | None = None) -> list[bytes]:
    c = AIOKafkaConsumer(bootstrap_servers=bs, group_id=group, auto_offset_reset="earliest",
                         enable_auto_commit=False, client_rack=rack)  # fmt: skip
    await c.start()
    try:
        if group is None:
            c.assign([AioTp(topic, 0)])
        else:
            c.subscribe([topic])
        got: list[bytes] = []
        while len(got) < n:
            m = await c.getone()
            got.append(m.value)
        if group is not None:
            await c.commit()
            _check(await c.committed(AioTp(topic, 0)) == n, "committed")
        return got
    finally:
        await c.stop()


async def _aio_admin(bs: str) -> AIOKafkaAdminClient:
    a = AIOKafkaAdminClient(bootstrap_servers=bs, request_timeout_ms=15000)
    await a.start()
    return a


def aio_produce(codec: str) -> Row:
    async def run(bs: str, topic: str) -> None:
        p = AIOKafkaProducer(bootstrap_servers=bs, acks="all",
                             compression_type=None if codec == "none" else codec)  # fmt: skip
        await p.start()
        try:
            for v in (b"x" * 100, b"y" * 100):
                await p.send_and_wait(topic, v, partition=0)
        finally:
            await p.stop()
        _check((await _aio_consume(bs, topic, 5))[3:] == [b"x" * 100, b"y" * 100], "read back")
    return _aio(run)


async def _aio_consume_row(bs: str, topic: str) -> None:
    _check(await _aio_consume(bs, topic, 3) == VALUES, "records")


async def _aio_follower(bs: str, topic: str) -> None:
    got = await asyncio.wait_for(_aio_consume(bs, topic, 3, rack=follower_rack(bs, topic)), 20)
    _check(got == VALUES, "records")


async def _aio_metadata(bs: str, topic: str) -> None:
    a = await _aio_admin(bs)
    try:
        [t] = await a.describe_topics([topic])
        _check(len(_field(t["partitions"][0], "isr")) == 3, str(t))
    finally:
        await a.close()


async def _aio_list_offsets(bs: str, topic: str) -> None:
    c = AIOKafkaConsumer(bootstrap_servers=bs)
    await c.start()
    try:
        tp = AioTp(topic, 0)
        first, last = await c.beginning_offsets([tp]), await c.end_offsets([tp])
        _check((first[tp], last[tp]) == (0, 3), "offsets")
    finally:
        await c.stop()


async def _aio_create_delete(bs: str, topic: str) -> None:
    a, name = await _aio_admin(bs), _new_name()
    try:
        await a.create_topics([AioNewTopic(name, 2, 3)])
        await a.delete_topics([name])
        _check(name not in await a.list_topics(), "still listed")
    finally:
        await a.close()


async def _aio_create_partitions(bs: str, topic: str) -> None:
    a = await _aio_admin(bs)
    try:
        await a.create_partitions({topic: AioNewPartitions(3)})
        [t] = await a.describe_topics([topic])
        _check(len(t["partitions"]) == 3, str(t))
    finally:
        await a.close()


async def _aio_describe_configs(bs: str, topic: str) -> None:
    a = await _aio_admin(bs)
    try:
        out = await a.describe_configs([AioConfigResource(AioResourceType.TOPIC, topic)])
        _check("min.insync.replicas" in str(out), str(out)[:300])
        out = await a.describe_configs([AioConfigResource(AioResourceType.BROKER, "1")])
        _check("num.partitions" in str(out), str(out)[:300])
    finally:
        await a.close()


async def _aio_alter_configs(bs: str, topic: str) -> None:
    a = await _aio_admin(bs)
    try:
        await a.alter_configs([AioConfigResource(AioResourceType.TOPIC, topic, configs={
            "retention.ms": "999", "min.insync.replicas": "2"})])  # fmt: skip
        res = AioConfigResource(AioResourceType.TOPIC, topic)

        async def done() -> bool:
            return "999" in str(await a.describe_configs([res]))

        await _eventually_async(done, "retention.ms set")
    finally:
        await a.close()


def aio_broker_configs(bs: str, topic: str) -> None:
    async def alter(value: str | None) -> None:
        a = await _aio_admin(bs)
        try:
            # AlterConfigs (not incremental): the resource's dynamic configs become exactly
            # these, so {} deletes them
            await a.alter_configs([AioConfigResource(AioResourceType.BROKER, b, configs={}
                                  if value is None else {"min.insync.replicas": value})
                                   for b in BROKERS])
        finally:
            await a.close()

    _honoured(bs, lambda v: asyncio.run(alter(v)))


async def _aio_delete_records(bs: str, topic: str) -> None:
    a = await _aio_admin(bs)
    try:
        out = await a.delete_records({AioTp(topic, 0): RecordsToDelete(2)})
        _check(out[AioTp(topic, 0)] == 2, str(out))
    finally:
        await a.close()
    _check(await _aio_consume(bs, topic, 1) == [b"r2"], "first record after delete")


async def _aio_describe_cluster(bs: str, topic: str) -> None:
    a = await _aio_admin(bs)
    try:
        d = await a.describe_cluster()
        _check(len(d["brokers"]) == 3, str(d))
    finally:
        await a.close()


async def _aio_group(bs: str, topic: str) -> None:
    _check(await _aio_consume(bs, topic, 3, group=f"g-{topic}") == VALUES, "records")


async def _aio_groups_admin(bs: str, topic: str) -> None:
    group = f"g-{topic}"
    await _aio_consume(bs, topic, 3, group=group)
    a = await _aio_admin(bs)
    try:
        _check(group in str(await a.list_consumer_groups()), "listed")
        _check(group in str(await a.describe_consumer_groups([group])), "described")
    finally:
        await a.close()


async def _aio_transactions(bs: str, topic: str) -> str | None:
    p = AIOKafkaProducer(bootstrap_servers=bs, transactional_id=_new_name())
    try:
        await asyncio.wait_for(p.start(), 10)
    except Exception:  # noqa: BLE001 - any failure means "not supported"
        await p.stop()
        return "not yet"
    try:
        async with p.transaction():
            await p.send_and_wait(topic, b"t", partition=0)
    finally:
        await p.stop()
    return None


# --- kcat (Debian's, librdkafka 2.0) -----------------------------------------------------


def _kcat(*args: str, stdin: bytes | None = None) -> bytes:
    out = subprocess.run(["kcat", *args], input=stdin, capture_output=True, timeout=30,
                         check=False)  # fmt: skip
    _check(out.returncode == 0, f"kcat {' '.join(args)}: {out.stderr.decode()[-300:]}")
    return out.stdout


def kcat_produce(codec: str) -> Row:
    def row(bs: str, topic: str) -> None:
        _kcat("-P", "-b", bs, "-t", topic, "-p", "0", "-z", codec, "-X", "acks=all",
              stdin=b"x" * 100 + b"\n" + b"y" * 100 + b"\n")  # fmt: skip
        _check(_kcat_consume(bs, topic, 5)[3:] == [b"x" * 100, b"y" * 100], "read back")
    return row


def _kcat_consume(bs: str, topic: str, n: int) -> list[bytes]:
    out = _kcat("-C", "-b", bs, "-t", topic, "-p", "0", "-o", "beginning", "-c", str(n), "-e")
    return out.splitlines()


def kcat_follower(bs: str, topic: str) -> None:
    # no -e: the follower may answer an empty fetch (its HW not yet at 3) before the records
    out = _kcat("-C", "-b", bs, "-t", topic, "-p", "0", "-o", "beginning", "-c", "3",
                "-X", f"client.rack={follower_rack(bs, topic)}")
    _check(out.splitlines() == VALUES, f"records {out!r}")


def kcat_metadata(bs: str, topic: str) -> None:
    md = json.loads(_kcat("-L", "-b", bs, "-t", topic, "-J"))
    [t] = md["topics"]
    _check(len(md["brokers"]) == 3 and len(t["partitions"][0]["isrs"]) == 3, str(md)[:300])


def kcat_consume(bs: str, topic: str) -> None:
    _check(_kcat_consume(bs, topic, 3) == VALUES, "records")


def kcat_group(bs: str, topic: str) -> None:
    group = f"g-{topic}"
    out = _kcat("-G", group, "-b", bs, "-o", "beginning", "-c", "3", "-e",
                "-X", "enable.auto.commit=true", topic)  # fmt: skip
    _check(out.splitlines() == VALUES, f"records {out!r}")
    c = ck.Consumer({"bootstrap.servers": bs, "group.id": group})
    try:
        committed = c.committed([ck.TopicPartition(topic, 0)], timeout=10)
        _check(committed[0].offset == 3, f"committed {committed[0].offset}")
    finally:
        c.close()


def _na(bs: str, topic: str) -> str:
    return "n/a"


TABLE: dict[str, dict[str, Row]] = {
    "confluent-kafka": {
        **{f"produce ({c})": ck_produce(c) for c in CODECS},
        "consume": ck_consume, "metadata": ck_metadata, "list offsets": ck_list_offsets,
        "create/delete topic": ck_create_delete, "create partitions": ck_create_partitions,
        "describe configs": ck_describe_configs, "alter configs": ck_alter_configs,
        "dynamic broker configs": ck_broker_configs,
        "delete records": ck_delete_records, "describe log dirs": _na,
        "describe cluster": ck_describe_cluster, "elect leaders": ck_elect_leaders,
        "list/alter reassignments": _na, "subscribe with a group + commit": ck_group,
        "list/describe/delete groups": ck_groups_admin, "transactions": ck_transactions,
        FOLLOWER_ROW: ck_follower,
    },
    "kafka-python": {
        **{f"produce ({c})": kp_produce(c) for c in CODECS},
        "consume": kp_consume, "metadata": kp_metadata, "list offsets": kp_list_offsets,
        "create/delete topic": kp_create_delete, "create partitions": kp_create_partitions,
        "describe configs": kp_describe_configs, "alter configs": kp_alter_configs,
        "dynamic broker configs": kp_broker_configs,
        "delete records": kp_delete_records, "describe log dirs": kp_describe_log_dirs,
        "describe cluster": kp_describe_cluster, "elect leaders": kp_elect_leaders,
        "list/alter reassignments": kp_reassignments, "subscribe with a group + commit": kp_group,
        "list/describe/delete groups": kp_groups_admin, "transactions": kp_transactions,
        FOLLOWER_ROW: kp_follower,
    },
    "aiokafka": {
        **{f"produce ({c})": aio_produce(c) for c in CODECS},
        "consume": _aio(_aio_consume_row), "metadata": _aio(_aio_metadata),
        "list offsets": _aio(_aio_list_offsets), "create/delete topic": _aio(_aio_create_delete),
        "create partitions": _aio(_aio_create_partitions),
        "describe configs": _aio(_aio_describe_configs),
        "alter configs": _aio(_aio_alter_configs), "delete records": _aio(_aio_delete_records),
        "dynamic broker configs": aio_broker_configs,
        "describe log dirs": _na, "describe cluster": _aio(_aio_describe_cluster),
        "elect leaders": _na, "list/alter reassignments": _na,
        "subscribe with a group + commit": _aio(_aio_group),
        "list/describe/delete groups": _aio(_aio_groups_admin),
        "transactions": _aio(_aio_transactions), FOLLOWER_ROW: _aio(_aio_follower),
    },
    # kcat's rows beyond these are admin features it does not have
    "kcat": {
        **{r: _na for r in ROWS},
        **{f"produce ({c})": kcat_produce(c) for c in CODECS},
        "consume": kcat_consume, "metadata": kcat_metadata,
        "subscribe with a group + commit": kcat_group, FOLLOWER_ROW: kcat_follower,
    },
}  # fmt: skip
