"""Fixtures: a real `highwater controller` subprocess on free 127.0.0.1 ports, tmp data dir.

Started as `python -m broker_app.controller.main` (same code as `highwater controller`), waited
for (bounded) until both the Kafka and the admin port accept connections, and stopped in
`finally` (SIGTERM, then SIGKILL) whatever the test did. Its stderr goes to `<data dir>.log`
(beside the data dir, one per process) that a
failing test can print.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from procutil import REPO, free_port, read_log, start_process, stop_process, wait_listening

__all__ = ["REPO", "ControllerProcess", "free_port"]


class ControllerProcess:
    def __init__(self, data_dir: Path, extra_args: list[str] | None = None) -> None:
        self.data_dir = data_dir
        self.port = free_port()
        self.admin_port = free_port()
        self.extra_args = extra_args or []
        # One log per process, named after its data dir: the controllers of a quorum test share
        # a parent dir, and a shared log would print every voter's lines as each one's.
        self.log_path = data_dir.parent / f"{data_dir.name}.log"
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
        self.proc = start_process(cmd, self.log_path)
        wait_listening(self.proc, [self.port, self.admin_port], "controller", self.log)

    def state(self) -> dict[str, Any]:
        url = f"http://127.0.0.1:{self.admin_port}/state"
        with urllib.request.urlopen(url, timeout=10) as r:
            return json.loads(r.read())

    def stop(self, sig: int = signal.SIGTERM) -> int | None:
        return stop_process(self.proc, sig)

    def log(self) -> str:
        return read_log(self.log_path)


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
