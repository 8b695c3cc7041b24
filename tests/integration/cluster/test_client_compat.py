"""The client compatibility table, measured: every row of compat_rows.py for confluent-kafka,
kafka-python, aiokafka and kcat (Debian's, librdkafka 2.0: `make sysdeps` installs it) against
one local-process cluster (1 controller, 3 brokers, Kafka 3.5's preset: see VERSION_ARGS),
about 20 s.

The table in docs/compat.md (and the copy between the markers in README.md) must equal what
this test measures, so it cannot go stale. To rewrite both after a change:
    HW_UPDATE_COMPAT=1 python -m pytest tests/integration/cluster/test_client_compat.py
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Producer

from broker_app.storage.records import iter_batches

from ..controller.conftest import ControllerProcess
from .compat_rows import CLIENTS, CODECS, FOLLOWER_ROW, ROWS, TABLE, VALUES, rack_of
from .conftest import REPO, SESSION_MS, BrokerProcess, Cluster
from .helpers import create_topic, wait_until

pytestmark = pytest.mark.timeout(300)

DOC = REPO / "docs" / "compat.md"
README = REPO / "README.md"
BEGIN, END = "<!-- compat-table:begin -->", "<!-- compat-table:end -->"
# Kafka 3.5's preset: the "dynamic broker configs" row shows a dynamic min.insync.replicas=2
# honoured by an RF 1 topic refusing acks=all, which 3.7+ (KAFKA-15583) no longer does (it caps
# min.insync.replicas at the replica count). Nothing else in the table depends on the version.
VERSION_ARGS = ["--kafka-version", "3.5"]
BROKER_ARGS = ["--offsets-topic-num-partitions", "3", "--group-initial-rebalance-delay-ms", "0",
               "--group-min-session-timeout-ms", "1000",
               "--replica-selector", "rack-aware", *VERSION_ARGS]  # fmt: skip


@pytest.fixture(scope="module")
def compat_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    root: Path = tmp_path_factory.mktemp("compat")
    started: list = []
    try:
        c = ControllerProcess(root / "controller", ["--session-timeout-ms", str(SESSION_MS),
                                                    *VERSION_ARGS])
        started.append(c)
        c.start()
        brokers = {}
        for i in (1, 2, 3):
            b = BrokerProcess(i, root / f"broker-{i}", c.bootstrap,
                              [*BROKER_ARGS, "--broker-rack", rack_of(i)])
            started.append(b)
            b.start()
            brokers[i] = b
        wait_until(lambda: all(not b.state()["fenced"] for b in brokers.values()), 30,
                   "every broker registered and unfenced")  # fmt: skip
        yield Cluster(c, brokers)
    finally:
        for proc in reversed(started):
            proc.stop()


def _fresh_topic(bs: str, client: str, row: str) -> str:
    name = f"{client}-{row}".replace(" ", "-").replace("/", "-").replace("(", "")
    name = name.replace(")", "").replace("+", "p")
    create_topic(bs, name, 1, 3, {"min.insync.replicas": "2"})
    p = Producer({"bootstrap.servers": bs, "acks": "all"})
    for v in VALUES:
        p.produce(name, v, partition=0)
    assert p.flush(15) == 0
    return name


def stored_codecs(cluster: Cluster, topic: str) -> set[int]:
    """Compression codec ids (attributes & 7) of the batches after the 3 seeded records, as
    stored in broker 1's log (every broker holds a replica: RF 3, acks=all)."""
    codecs = set()
    for seg in sorted((cluster.brokers[1].data_dir / f"{topic}-0").glob("*.log")):
        for h, _ in iter_batches(seg.read_bytes(), allow_partial_tail=True):
            if h.base_offset >= len(VALUES):
                codecs.add(h.attributes & 7)
    return codecs


def follower_reads(cluster: Cluster, topic: str) -> dict[int, int]:
    """Broker id -> consumer fetches with records it served for `topic`-0 as a follower."""
    out = {}
    for i, b in cluster.brokers.items():
        p = b.partition(topic)
        if p is not None and p.get("follower_reads"):
            out[i] = p["follower_reads"]
    return out


def measure(cluster: Cluster) -> tuple[dict[tuple[str, str], str], dict[str, float]]:
    cells: dict[tuple[str, str], str] = {}
    seconds: dict[str, float] = {}
    for client in CLIENTS:
        start = time.monotonic()
        for row in ROWS:
            bs = cluster.bootstrap
            try:
                topic = _fresh_topic(bs, client, row)
                out = TABLE[client][row](bs, topic)
                if row.startswith("produce (") and out is None:
                    # the codec must really be used: kcat/librdkafka once sent "none" silently
                    want = {CODECS.index(row[len("produce ("):-1])}
                    got = stored_codecs(cluster, topic)
                    assert got == want, f"stored codecs {got}, expected {want}"
                if row == FOLLOWER_ROW and out is None:
                    # the client must have followed the leader's redirect (KIP-392)
                    served = follower_reads(cluster, topic)
                    assert served, f"no follower served {topic}-0 (leader only)"
                cells[(client, row)] = "yes" if out is None else out
            except Exception as e:  # noqa: BLE001 - the cell records any failure
                cells[(client, row)] = f"FAIL: {type(e).__name__}: {str(e)[:80]}"
        seconds[client] = time.monotonic() - start
    return cells, seconds


def render(cells: dict[tuple[str, str], str]) -> str:
    lines = ["| feature | " + " | ".join(CLIENTS) + " |",
             "|---|" + "---|" * len(CLIENTS)]  # fmt: skip
    for row in ROWS:
        vals = [cells[(c, row)].replace("|", "/").replace("\n", " ") for c in CLIENTS]
        lines.append(f"| {row} | " + " | ".join(vals) + " |")
    return "\n".join(lines) + "\n"


def _readme_table() -> str:
    text = README.read_text()
    assert BEGIN in text and END in text, "README.md lacks the compat-table markers"
    return text.split(BEGIN, 1)[1].split(END, 1)[0].strip("\n") + "\n"


def test_client_compatibility_table_matches_the_docs(compat_cluster: Cluster) -> None:
    cells, seconds = measure(compat_cluster)
    table = render(cells)
    print(table, {k: round(v, 1) for k, v in seconds.items()})
    if os.environ.get("HW_UPDATE_COMPAT"):
        DOC.write_text(DOC.read_text().split(BEGIN)[0] + BEGIN + "\n" + table + END + "\n")
        text = README.read_text()
        head, rest = text.split(BEGIN, 1)
        README.write_text(head + BEGIN + "\n" + table + END + rest.split(END, 1)[1])
    doc = DOC.read_text().split(BEGIN, 1)[1].split(END, 1)[0].strip("\n") + "\n"
    assert table == doc, f"docs/compat.md is stale; measured:\n{table}"
    assert table == _readme_table(), "README.md's compat table differs from docs/compat.md"
    failed = {k: v for k, v in cells.items() if v.startswith("FAIL")}
    assert not failed, failed
    # the libraries with a transactional producer say plainly that the broker lacks it
    libraries = [c for c in CLIENTS if c != "kcat"]
    assert {cells[(c, "transactions")] for c in libraries} <= {"not yet", "yes"}
