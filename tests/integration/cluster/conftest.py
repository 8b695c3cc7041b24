"""Fixtures: 1 controller + 3 brokers as local processes on 127.0.0.1, small timeouts.

Brokers run `python -m broker_app.server.main --controller ...` (same code as
`highwater broker`), each with an admin port; everything started is stopped in `finally`
(SIGCONT first, for paused ones; SIGTERM, then SIGKILL). Waits are bounded (tenacity).
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from procutil import REPO, free_port, read_log, start_process, stop_process, wait_listening

from ..controller.conftest import ControllerProcess
from .helpers import wait_until

__all__ = ["REPO", "SESSION_MS", "BrokerProcess", "Cluster"]
LAG_MS = 1500  # replica.lag.time.max.ms for the tests
SESSION_MS = 2000  # controller session timeout


class BrokerProcess:
    def __init__(self, node_id: int, data_dir: Path, controller: str, extra: list[str]) -> None:
        self.node_id = node_id
        self.data_dir = data_dir
        self.controller = controller
        self.port = free_port()
        self.admin_port = free_port()
        self.extra = extra
        self.log_path = data_dir.parent / f"broker-{node_id}.log"
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> None:
        cmd = [
            sys.executable, "-m", "broker_app.server.main",
            "--node-id", str(self.node_id), "--port", str(self.port),
            "--data-dir", str(self.data_dir), "--controller", self.controller,
            "--admin-port", str(self.admin_port),
            "--replica-lag-time-max-ms", str(LAG_MS), "--heartbeat-interval-ms", "200",
            "--replica-fetch-wait-max-ms", "200", "--replica-fetch-backoff-ms", "100",
            *self.extra,
        ]  # fmt: skip
        self.proc = start_process(cmd, self.log_path)
        wait_listening(self.proc, [self.port, self.admin_port], "broker", self.log)

    def state(self) -> dict[str, Any]:
        url = f"http://127.0.0.1:{self.admin_port}/state"
        with urllib.request.urlopen(url, timeout=5) as r:
            return json.loads(r.read())

    def partition(self, topic: str, partition: int = 0) -> dict[str, Any] | None:
        for p in self.state()["partitions"]:
            if p["topic"] == topic and p["partition"] == partition:
                return p
        return None

    def send_signal(self, sig: int) -> None:
        assert self.proc is not None
        self.proc.send_signal(sig)

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, sig: int = signal.SIGTERM) -> None:
        stop_process(self.proc, sig, resume=True)

    def log(self) -> str:
        return read_log(self.log_path)


class Cluster:
    def __init__(self, controller: ControllerProcess, brokers: dict[int, BrokerProcess]) -> None:
        self.controller = controller
        self.brokers = brokers

    @property
    def bootstrap(self) -> str:
        return ",".join(b.bootstrap for b in self.brokers.values() if b.running)

    def logs(self) -> str:
        parts = [f"--- controller\n{self.controller.log()[-4000:]}"]
        parts += [f"--- broker {i}\n{b.log()[-4000:]}" for i, b in self.brokers.items()]
        return "\n".join(parts)


@pytest.fixture
def cluster_factory(tmp_path: Path) -> Iterator[Callable[..., Cluster]]:
    started: list[Any] = []

    def make(n: int = 3, broker_args: list[str] | None = None) -> Cluster:
        c = ControllerProcess(tmp_path / "controller", ["--session-timeout-ms", str(SESSION_MS)])
        started.append(c)
        c.start()
        brokers = {}
        for i in range(1, n + 1):
            b = BrokerProcess(i, tmp_path / f"broker-{i}", c.bootstrap, broker_args or [])
            started.append(b)
            b.start()
            brokers[i] = b
        cluster = Cluster(c, brokers)
        wait_until(lambda: all(not b.state()["fenced"] for b in brokers.values()), 30,
                   "every broker registered and unfenced")  # fmt: skip
        return cluster

    try:
        yield make
    finally:
        for proc in reversed(started):
            proc.stop()


@pytest.fixture
def cluster(cluster_factory) -> Cluster:
    return cluster_factory()
