"""`highwater controller` as a process, spoken to with raw Kafka requests built by the codec."""

from __future__ import annotations

import signal
import socket
import struct
import uuid
from typing import Any

import pytest
from tenacity import retry, stop_after_delay, wait_fixed

from broker_app.controller.errors import Errors
from broker_app.metadata import METADATA_TOPIC, MetadataLoader
from broker_app.protocol.codec import request_class
from broker_app.protocol.entities import build

from ..rawclient import RawClient


def req(api_key: int, version: int, data: dict[str, Any]) -> Any:
    return build(request_class(api_key, version), data)


def register(client: RawClient, broker_id: int, version: int = 4, incarnation=None) -> Any:
    return client.request(
        req(62, version, {
            "broker_id": broker_id,
            "cluster_id": "highwater-cluster",
            "incarnation_id": incarnation or uuid.uuid4(),
            "listeners": [{"name": "PLAINTEXT", "host": "127.0.0.1", "port": 19090 + broker_id,
                           "security_protocol": 0}],
            "features": [],
            "rack": None,
        })
    )  # fmt: skip


def heartbeat(client: RawClient, broker_id: int, epoch: int, offset: int, **kw: bool) -> Any:
    return client.request(
        req(63, 1, {
            "broker_id": broker_id, "broker_epoch": epoch, "current_metadata_offset": offset,
            "want_fence": kw.get("want_fence", False),
            "want_shut_down": kw.get("want_shut_down", False),
        })
    )  # fmt: skip


def create_topics(client: RawClient, name: str, partitions: int, rf: int, **configs: str) -> Any:
    return client.request(
        req(19, 7, {
            "topics": [{"name": name, "num_partitions": partitions, "replication_factor": rf,
                        "assignments": [],
                        "configs": [{"name": k, "value": v} for k, v in configs.items()]}],
            "timeout": 5000,
            "validate_only": False,
        })
    )  # fmt: skip


def fetch(client: RawClient, offset: int, topic: str = METADATA_TOPIC, max_wait: int = 0) -> Any:
    return client.request(
        req(1, 12, {
            "replica_id": -1, "max_wait": max_wait, "min_bytes": 1, "max_bytes": 1 << 20,
            "isolation_level": 0, "session_id": 0, "session_epoch": -1,
            "topics": [{"topic": topic, "partitions": [{
                "partition": 0, "current_leader_epoch": -1, "fetch_offset": offset,
                "last_fetched_epoch": -1, "log_start_offset": -1,
                "partition_max_bytes": 1 << 20}]}],
            "forgotten_topics_data": [], "rack_id": "",
        })
    )  # fmt: skip


def catch_up(client: RawClient, loader: MetadataLoader) -> None:
    """Fetch until the loader has everything up to the high watermark (bounded)."""
    for _ in range(100):
        part = fetch(client, loader.next_offset).responses[0].partitions[0]
        assert part.error_code == 0
        loader.apply_fetched(part.records or b"")
        if loader.next_offset >= part.high_watermark:
            return
    raise AssertionError("metadata fetch did not reach the high watermark")


def start_three_brokers(client: RawClient) -> dict[int, int]:
    epochs = {}
    for b in (1, 2, 3):
        resp = register(client, b)
        assert resp.error_code == 0, resp
        epochs[b] = resp.broker_epoch
    loader = MetadataLoader()
    catch_up(client, loader)
    for b, e in epochs.items():
        resp = heartbeat(client, b, e, loader.image.offset)
        assert resp.error_code == 0 and not resp.is_fenced and resp.is_caught_up
    return epochs


def test_register_heartbeat_create_then_fetch_the_metadata_log(controller):
    with RawClient(controller.port) as c:
        versions = c.request(req(18, 3, {"client_software_name": "t",
                                         "client_software_version": "1"}))  # fmt: skip
        keys = {k.api_key for k in versions.api_keys}
        assert {1, 3, 18, 19, 43, 56, 62, 63} <= keys
        epochs = start_three_brokers(c)
        assert sorted(epochs.values()) == sorted(set(epochs.values()))  # distinct epochs
        resp = create_topics(c, "events", 3, 3, **{"min.insync.replicas": "2"})
        t = resp.topics[0]
        assert t.error_code == 0 and t.num_partitions == 3 and t.replication_factor == 3
        loader = MetadataLoader()
        catch_up(c, loader)
    image = loader.image
    topic = image.topics["events"]
    assert topic.topic_id == t.topic_id
    assert topic.configs == {"min.insync.replicas": "2"}
    assert sorted(topic.partitions) == [0, 1, 2]
    assert sorted(p.leader for p in topic.partitions.values()) == [1, 2, 3]
    assert all(sorted(p.isr) == [1, 2, 3] for p in topic.partitions.values())
    assert all(not b.fenced for b in image.brokers.values())
    # The broker-side replay equals the controller's own image.
    assert loader.image.to_json() == controller.state()["image"]


def test_local_changes_from_fetched_delta(controller):
    with RawClient(controller.port) as c:
        start_three_brokers(c)
        loader = MetadataLoader()
        catch_up(c, loader)
        create_topics(c, "t", 3, 2)
        part = fetch(c, loader.next_offset).responses[0].partitions[0]
        delta = loader.apply_fetched(part.records)
    changes = delta.local_changes(1)
    image = loader.image
    led = {p for p, reg in image.topics["t"].partitions.items() if reg.leader == 1}
    followed = {
        p for p, reg in image.topics["t"].partitions.items()
        if 1 in reg.replicas and reg.leader != 1
    }  # fmt: skip
    assert {p for _, p in changes.leaders} == led and led
    assert {p for _, p in changes.followers} == followed
    assert changes.topic_ids["t"] == image.topics["t"].topic_id


def test_session_expiry_fences_and_moves_leadership(controller_factory):
    controller = controller_factory(["--session-timeout-ms", "1500"])
    with RawClient(controller.port) as c:
        epochs = start_three_brokers(c)
        create_topics(c, "t", 1, 3)
        leader = controller.state()["image"]["topics"]["t"]["partitions"]["0"]["leader"]
        others = [b for b in (1, 2, 3) if b != leader]

        @retry(stop=stop_after_delay(30), wait=wait_fixed(0.2), reraise=True)
        def wait_fenced() -> dict:
            for b in others:  # keep the others alive
                assert heartbeat(c, b, epochs[b], 10**6).error_code == 0
            s = controller.state()["image"]
            assert s["brokers"][str(leader)]["fenced"]
            return s

        s = wait_fenced()
    p = s["topics"]["t"]["partitions"]["0"]
    assert p["leader"] in others and leader not in p["isr"]
    ages = controller.state()["ms_since_heartbeat"]
    assert ages[str(leader)] > 1500 >= min(ages[str(b)] for b in others)
    assert p["leader_epoch"] == 1 and p["partition_epoch"] == 1


def test_restart_keeps_metadata_and_a_restarted_broker_gets_a_new_epoch(controller_factory):
    controller = controller_factory()
    with RawClient(controller.port) as c:
        epochs = start_three_brokers(c)
        create_topics(c, "kept", 2, 3)
    before = controller.state()
    assert controller.stop() == 0
    again = controller_factory(data_dir=controller.data_dir)
    after = again.state()
    assert after["image"] == before["image"]
    assert after["controller_epoch"] == before["controller_epoch"] + 1
    with RawClient(again.port) as c:
        resp = register(c, 2)  # a new incarnation of broker 2
        assert resp.error_code == 0 and resp.broker_epoch > epochs[2]
        assert heartbeat(c, 2, epochs[2], 10**6).error_code == Errors.STALE_BROKER_EPOCH


def test_sigkill_leaves_a_log_that_replays(controller_factory):
    controller = controller_factory()
    with RawClient(controller.port) as c:
        start_three_brokers(c)
        create_topics(c, "k", 1, 1)
    before = controller.state()["image"]
    controller.stop(signal.SIGKILL)
    again = controller_factory(data_dir=controller.data_dir)
    assert again.state()["image"] == before


def test_bad_input_gets_protocol_errors_and_nothing_crashes(controller):
    with RawClient(controller.port) as c:
        assert heartbeat(c, 42, 0, 0).error_code == Errors.BROKER_ID_NOT_REGISTERED
        epochs = start_three_brokers(c)
        create_topics(c, "t", 1, 3)
        tid = uuid.UUID(controller.state()["image"]["topics"]["t"]["topic_id"])
        alter = req(56, 3, {"broker_id": 1, "broker_epoch": epochs[1] + 1000, "topics": [
            {"topic_id": tid, "partitions": [{"partition_index": 0, "leader_epoch": 0,
             "new_isr_with_epochs": [{"broker_id": 1, "broker_epoch": epochs[1]}],
             "leader_recovery_state": 0, "partition_epoch": 0}]}]})  # fmt: skip
        assert c.request(alter).error_code == Errors.STALE_BROKER_EPOCH
        alter = req(56, 2, {"broker_id": 1, "broker_epoch": epochs[1], "topics": [
            {"topic_id": tid, "partitions": [{"partition_index": 0, "leader_epoch": 0,
             "new_isr": [1, 2], "leader_recovery_state": 0, "partition_epoch": 0}]}]})  # fmt: skip
        ok = c.request(alter).topics[0].partitions[0]
        assert ok.error_code == 0 and list(ok.isr) == [1, 2] and ok.partition_epoch == 1
        stale = c.request(alter).topics[0].partitions[0]  # same partition epoch again
        assert stale.error_code == Errors.INVALID_UPDATE_VERSION
        unknown = fetch(c, 0, topic="nope").responses[0].partitions[0]
        assert unknown.error_code == Errors.UNKNOWN_TOPIC_OR_PARTITION
        beyond = fetch(c, 10**6).responses[0].partitions[0]
        assert beyond.error_code == Errors.OFFSET_OUT_OF_RANGE
        rf = create_topics(c, "big", 1, 4).topics[0]
        assert rf.error_code == Errors.INVALID_REPLICATION_FACTOR and "only 3" in rf.error_message
    # Garbage, a negative frame size and an unsupported API each close only their connection.
    for junk in (b"\x00\x00\x00\x05hello", struct.pack(">i", -4), struct.pack(">ihhi", 8, 0, 3, 1)):
        with RawClient(controller.port) as bad:
            bad.send_raw(junk)
            assert bad.is_closed_by_peer()
    with socket.create_connection(("127.0.0.1", controller.admin_port), timeout=10) as s:
        s.sendall(b"NONSENSE\r\n\r\n")
        assert s.recv(100).startswith(b"HTTP/1.1 400")
    assert controller.state()["image"]["topics"]["t"]["partitions"]["0"]["isr"] == [1, 2]


def test_parked_metadata_fetch_wakes_on_append(controller):
    with RawClient(controller.port) as c:
        start_three_brokers(c)
        end = controller.state()["metadata_offset"] + 1
        # max_wait far beyond the socket timeout: only a wake-up can answer in time.
        waiter = RawClient(controller.port, timeout=20)
        try:
            waiter.send(req(1, 12, {
                "replica_id": -1, "max_wait": 25_000, "min_bytes": 1, "max_bytes": 1 << 20,
                "isolation_level": 0, "session_id": 0, "session_epoch": -1,
                "topics": [{"topic": METADATA_TOPIC, "partitions": [{
                    "partition": 0, "current_leader_epoch": -1, "fetch_offset": end,
                    "last_fetched_epoch": -1, "log_start_offset": -1,
                    "partition_max_bytes": 1 << 20}]}],
                "forgotten_topics_data": [], "rack_id": "",
            }), correlation_id=7)  # fmt: skip
            create_topics(c, "wake", 1, 1)
            corr, resp = waiter.recv(1, 12)
        finally:
            waiter.close()
    assert corr == 7
    records = resp.responses[0].partitions[0].records
    assert records, "the parked fetch returned no records"
    loader = MetadataLoader()
    loader.apply_fetched(records)  # Topic + Partition records of "wake", from offset `end`
    assert "wake" in loader.image.topics


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4])
def test_every_registration_version(controller, version):
    with RawClient(controller.port) as c:
        data = {
            "broker_id": 5, "cluster_id": "highwater-cluster", "incarnation_id": uuid.uuid4(),
            "listeners": [{"name": "PLAINTEXT", "host": "127.0.0.1", "port": 9999,
                           "security_protocol": 0}],
            "features": [], "rack": None,
        }  # fmt: skip
        resp = c.request(req(62, version, data))
    assert resp.error_code == 0 and resp.broker_epoch >= 0


def test_controllers_in_sibling_dirs_write_their_own_logs(controller_factory, tmp_path) -> None:
    # As test_controller_quorum lays out its voters: data dirs side by side in one tmp dir.
    first = controller_factory(data_dir=tmp_path / "controller-1")
    second = controller_factory(data_dir=tmp_path / "controller-2")
    assert first.log_path != second.log_path
    for c in (first, second):
        c.stop()
        # Each process logs its start once; a shared file would hold both starts.
        assert c.log().count("emulating Kafka") == 1, c.log()
