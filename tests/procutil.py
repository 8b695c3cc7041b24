"""Process helpers shared by the integration fixtures (broker, controller, cluster, toxiproxy).

- free_port(): a currently free 127.0.0.1 TCP port;
- start_process(cmd, log_path): Popen in the repo root, stdout discarded, stderr appended to
  log_path (so a failing test can print the process's log);
- wait_listening(proc, ports, what, log): bounded wait (tenacity, 30 s) until every port accepts
  a TCP connection; raises RuntimeError with the log if the process exits first;
- stop_process(proc, sig, timeout, resume): send `sig` (after SIGCONT when resume, for paused
  processes), wait bounded, SIGKILL on timeout; returns the exit code (None if never started);
- read_log(path): the log text, "" when there is none.

Imported as `procutil`: tests/ is on sys.path because it is the root of the test packages.
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import socket
import subprocess
from collections.abc import Callable, Iterable
from pathlib import Path

from tenacity import retry, retry_if_exception_type, stop_after_delay, wait_fixed

REPO = Path(__file__).resolve().parents[1]


_HANDED_OUT: set[int] = set()


def free_port() -> int:
    """A free port below the kernel's ephemeral range (ip_local_port_range, 32768-60999 by
    default). A port from bind(0) is an ephemeral one, which an outgoing connection (one test
    controller dialling another) can take as its local port before the process it was picked
    for binds it (CI: a controller exited with 'address already in use'). Never the same
    port twice in one test session."""
    rng = random.SystemRandom()
    for _ in range(500):
        port = rng.randrange(10_000, 30_000)
        if port in _HANDED_OUT:
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        _HANDED_OUT.add(port)
        return port
    raise RuntimeError("no free port in 10000-29999 after 500 tries")


def start_process(cmd: list[str], log_path: Path) -> subprocess.Popen[bytes]:
    with open(log_path, "ab") as log:
        return subprocess.Popen(
            cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=log, env=os.environ.copy()
        )


@retry(
    stop=stop_after_delay(30),
    wait=wait_fixed(0.1),
    retry=retry_if_exception_type(OSError),
    reraise=True,
)
def wait_listening(
    proc: subprocess.Popen[bytes], ports: Iterable[int], what: str, log: Callable[[], str]
) -> None:
    if proc.poll() is not None:
        raise RuntimeError(f"{what} exited with {proc.returncode}:\n{log()}")
    for port in ports:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()


def stop_process(
    proc: subprocess.Popen[bytes] | None,
    sig: int = signal.SIGTERM,
    timeout: float = 15,
    resume: bool = False,
) -> int | None:
    if proc is None:
        return None
    if proc.poll() is not None:
        return proc.returncode
    with contextlib.suppress(ProcessLookupError):
        if resume:  # a SIGSTOPped process cannot act on SIGTERM
            proc.send_signal(signal.SIGCONT)
        proc.send_signal(sig)
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.wait(timeout=timeout)


def read_log(path: Path) -> str:
    with contextlib.suppress(OSError):
        return path.read_text(errors="replace")
    return ""
