"""Local processes the benchmarks, the fuzzer and the demo start on 127.0.0.1: a free port,
a bounded wait until the process listens on it (or exits), and a controller with brokers
(LocalCluster)."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_listening(port: int, proc: subprocess.Popen, timeout: float = 30.0,
                   what: str = "process") -> None:  # fmt: skip
    """Return once 127.0.0.1:`port` accepts a connection; RuntimeError if `proc` exits first,
    TimeoutError after `timeout` seconds (the process is left running: the caller owns it)."""
    deadline = time.monotonic() + timeout
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited early with code {proc.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if time.monotonic() >= deadline:
                raise TimeoutError(
                    f"{what}: nothing listening on 127.0.0.1:{port} after {timeout}s") from None
            time.sleep(0.05)


class LocalCluster:
    """One controller and `brokers` brokers as local processes on free 127.0.0.1 ports, each
    with its own data dir under `base` and its stderr in `base`/<name>.log; a context manager
    that stops every process it started (SIGTERM, then SIGKILL after a bound), whatever
    happened. `broker_args` go to every broker, `controller_args` to the controller; broker i
    (1-based) also gets `racks[i-1]` as --broker-rack when `racks` is given. The cluster is up
    once a Metadata request lists every broker (they answer clients only once unfenced)."""

    def __init__(self, base: Path, brokers: int = 3, *, broker_args: Sequence[str] = (),
                 controller_args: Sequence[str] = (), racks: Sequence[str] = (),
                 start_timeout: float = 60.0) -> None:  # fmt: skip
        self.base = base
        self.n = brokers
        self.broker_args = list(broker_args)
        self.controller_args = list(controller_args)
        self.racks = list(racks)
        self.start_timeout = start_timeout
        self.procs: list[subprocess.Popen] = []
        self.ports: list[int] = []

    @property
    def bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{p}" for p in self.ports)

    def _start(self, name: str, cmd: list[str], port: int) -> None:
        with open(self.base / f"{name}.log", "ab") as log:
            proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=log)
        self.procs.append(proc)
        wait_listening(port, proc, 30.0, name)

    def __enter__(self) -> LocalCluster:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        py = sys.executable
        self.base.mkdir(parents=True, exist_ok=True)
        cport = free_port()
        self._start("controller", [py, "-m", "broker_app.controller.main", "--port", str(cport),
                                   "--data-dir", str(self.base / "controller"),
                                   *self.controller_args], cport)  # fmt: skip
        for i in range(1, self.n + 1):
            port = free_port()
            self.ports.append(port)
            rack = ["--broker-rack", self.racks[i - 1]] if self.racks else []
            self._start(f"broker-{i}", [py, "-m", "broker_app.server.main", "--node-id", str(i),
                                        "--port", str(port), "--data-dir",
                                        str(self.base / f"broker-{i}"),
                                        "--controller", f"127.0.0.1:{cport}", *rack,
                                        *self.broker_args], port)  # fmt: skip
        self.wait_brokers()

    def wait_brokers(self) -> None:
        """Return once Metadata lists every broker; TimeoutError after start_timeout."""
        from confluent_kafka.admin import AdminClient

        admin = AdminClient({"bootstrap.servers": self.bootstrap})
        deadline = time.monotonic() + self.start_timeout
        while True:
            try:
                if len(admin.list_topics(timeout=5).brokers) == self.n:
                    return
            except Exception:  # noqa: BLE001 - KafkaException while brokers unfence
                pass
            if time.monotonic() >= deadline:
                raise TimeoutError(f"{self.n} brokers not all in Metadata after "
                                   f"{self.start_timeout}s (logs in {self.base})")  # fmt: skip
            time.sleep(0.5)

    def stop(self) -> None:
        """Brokers first, then the controller: a broker's controlled shutdown needs the
        controller to grant it (it stops anyway after its 3 s bound, but says so)."""
        for group in (self.procs[1:], self.procs[:1]):
            stop_processes(group)
        self.procs.clear()


def stop_processes(procs: Sequence[subprocess.Popen]) -> None:
    """SIGTERM every process still running, then wait for each (bounded); SIGKILL one that
    has not exited within 30 s."""
    for proc in procs:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
    for proc in procs:
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
