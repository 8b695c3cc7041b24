"""Local processes the benchmarks, the fuzzer and the demo start on 127.0.0.1: a free port,
and a bounded wait until the process listens on it (or exits)."""

from __future__ import annotations

import socket
import subprocess
import time


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
