"""Fixtures: a real `highwater broker` subprocess on a free 127.0.0.1 port with a tmp data dir.

Started as `python -m broker_app.server.main ...` (the same code as `highwater broker`), waited
for (bounded) until it accepts TCP connections, and killed in `finally` whatever the test did.
Its stderr goes to a file in the tmp dir so a failing test can show the broker's log lines.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from tenacity import retry, retry_if_exception_type, stop_after_delay, wait_fixed

REPO = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


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
        log = open(self.log_path, "ab")
        try:
            self.proc = subprocess.Popen(
                cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=log, env=os.environ.copy()
            )
        finally:
            log.close()
        self._wait_listening()

    @retry(
        stop=stop_after_delay(30),
        wait=wait_fixed(0.1),
        retry=retry_if_exception_type(OSError),
        reraise=True,
    )
    def _wait_listening(self) -> None:
        assert self.proc is not None
        if self.proc.poll() is not None:
            raise RuntimeError(f"broker exited with {self.proc.returncode}:\n{self.log()}")
        socket.create_connection(("127.0.0.1", self.port), timeout=1).close()

    def signal(self, sig: int) -> int:
        """Send `sig` and wait (bounded) for exit; returns the exit code."""
        assert self.proc is not None
        self.proc.send_signal(sig)
        return self.proc.wait(timeout=30)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=15)

    def log(self) -> str:
        with contextlib.suppress(OSError):
            return self.log_path.read_text(errors="replace")
        return ""


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
