"""Fixtures: a real `highwater broker` subprocess on a free 127.0.0.1 port with a tmp data dir.

Started as `python -m broker_app.server.main ...` (the same code as `highwater broker`), waited
for (bounded) until it accepts TCP connections, and killed in `finally` whatever the test did.
Its stderr goes to a file in the tmp dir so a failing test can show the broker's log lines.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from procutil import REPO, free_port, read_log, start_process, stop_process, wait_listening

__all__ = ["REPO", "BrokerProcess", "free_port"]


class BrokerProcess:
    def __init__(
        self,
        data_dir: Path,
        node_id: int = 1,
        extra_args: list[str] | None = None,
        via_cli: bool = False,
    ):
        self.data_dir = data_dir
        self.node_id = node_id
        self.port = free_port()
        self.extra_args = extra_args or []
        self.via_cli = via_cli  # through harness.cli (`highwater broker`) instead of the module
        self.log_path = data_dir.parent / f"broker-{node_id}.log"
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> None:
        entry = ["harness.cli", "broker"] if self.via_cli else ["broker_app.server.main"]
        cmd = [
            sys.executable, "-m", *entry,
            "--node-id", str(self.node_id),
            "--port", str(self.port),
            "--data-dir", str(self.data_dir),
            *self.extra_args,
        ]  # fmt: skip
        self.proc = start_process(cmd, self.log_path)
        wait_listening(self.proc, [self.port], "broker", self.log)

    def signal(self, sig: int) -> int:
        """Send `sig` and wait (bounded) for exit; returns the exit code."""
        assert self.proc is not None
        self.proc.send_signal(sig)
        return self.proc.wait(timeout=30)

    def stop(self) -> None:
        stop_process(self.proc)

    def log(self) -> str:
        return read_log(self.log_path)


@pytest.fixture
def broker_factory(tmp_path: Path) -> Iterator:
    started: list[BrokerProcess] = []

    def make(extra_args: list[str] | None = None, node_id: int = 1) -> BrokerProcess:
        b = BrokerProcess(tmp_path / f"data-{node_id}", node_id, extra_args)
        started.append(b)
        b.start()
        return b

    try:
        yield make
    finally:
        for b in started:
            b.stop()


@pytest.fixture
def broker(broker_factory) -> BrokerProcess:
    return broker_factory()
