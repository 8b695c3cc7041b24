"""Fixtures: a real `highwater controller` subprocess on free 127.0.0.1 ports, tmp data dir.

Started as `python -m broker_app.controller.main` (same code as `highwater controller`), waited
for (bounded) until both the Kafka and the admin port accept connections, and stopped in
`finally` (SIGTERM, then SIGKILL) whatever the test did. Its stderr goes to a file that a
failing test can print.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tenacity import retry, retry_if_exception_type, stop_after_delay, wait_fixed

REPO = Path(__file__).resolve().parents[3]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ControllerProcess:
    def __init__(self, data_dir: Path, extra_args: list[str] | None = None) -> None:
        self.data_dir = data_dir
        self.port = free_port()
        self.admin_port = free_port()
        self.extra_args = extra_args or []
        self.log_path = data_dir.parent / "controller.log"
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> None:
        cmd = [
            sys.executable, "-m", "broker_app.controller.main",
            "--port", str(self.port),
            "--admin-port", str(self.admin_port),
            "--data-dir", str(self.data_dir),
            *self.extra_args,
        ]  # fmt: skip
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=log, env=os.environ.copy()
            )
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
            raise RuntimeError(f"controller exited with {self.proc.returncode}:\n{self.log()}")
        for port in (self.port, self.admin_port):
            socket.create_connection(("127.0.0.1", port), timeout=1).close()

    def state(self) -> dict[str, Any]:
        url = f"http://127.0.0.1:{self.admin_port}/state"
        with urllib.request.urlopen(url, timeout=10) as r:
            return json.loads(r.read())

    def stop(self, sig: int = signal.SIGTERM) -> int | None:
        if self.proc is None or self.proc.poll() is not None:
            return None if self.proc is None else self.proc.returncode
        self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait(timeout=15)

    def log(self) -> str:
        with contextlib.suppress(OSError):
            return self.log_path.read_text(errors="replace")
        return ""


@pytest.fixture
def controller_factory(tmp_path: Path) -> Iterator:
    started: list[ControllerProcess] = []

    def make(extra_args: list[str] | None = None, data_dir: Path | None = None):
        c = ControllerProcess(data_dir or tmp_path / "controller", extra_args)
        started.append(c)
        c.start()
        return c

    try:
        yield make
    finally:
        for c in started:
            c.stop()


@pytest.fixture
def controller(controller_factory) -> ControllerProcess:
    return controller_factory()
