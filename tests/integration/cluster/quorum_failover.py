"""Time to a new active controller, repeated (issue 13): 3 local controller processes in a
Raft quorum; kill the active one N times, restarting it each time so the quorum stays at 3,
and print each time from the signal to another controller reporting `active` in /state.

    flock /tmp/hw-heavy.lock env PYTHONPATH=. .venv/bin/python \\
        -m tests.integration.cluster.quorum_failover --kills 10 [--signal TERM] \\
        [--election-timeout-ms 1000 --fetch-timeout-ms 2000]

A measurement, not a test: figures only (SIGKILL waits for the fetch timeout; SIGTERM makes
the active controller resign with EndQuorumEpoch first). Every wait is bounded (30 s).
"""

from __future__ import annotations

import argparse
import json
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from typing import Any

IDS = (3000, 3001, 3002)
WAIT_S = 30.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Quorum:
    def __init__(self, election_ms: int, fetch_ms: int) -> None:
        self.ports = {i: (free_port(), free_port()) for i in IDS}
        self.voters = ",".join(f"{i}@127.0.0.1:{self.ports[i][0]}" for i in IDS)
        self.root = tempfile.mkdtemp(prefix="quorum-failover-")
        self.timeouts = (str(election_ms), str(fetch_ms))
        self.procs: dict[int, subprocess.Popen[bytes]] = {}

    def start(self, i: int) -> None:
        port, admin = self.ports[i]
        with open(f"{self.root}/controller-{i}.log", "ab") as log:
            self.procs[i] = subprocess.Popen(
                [sys.executable, "-m", "broker_app.controller.main", "--node-id", str(i),
                 "--port", str(port), "--admin-port", str(admin),
                 "--data-dir", f"{self.root}/controller-{i}",
                 "--controller-quorum-voters", self.voters,
                 "--controller-quorum-election-timeout-ms", self.timeouts[0],
                 "--controller-quorum-fetch-timeout-ms", self.timeouts[1],
                 "--log-level", "WARNING"],
                stdout=subprocess.DEVNULL, stderr=log)

    def state(self, i: int) -> dict[str, Any] | None:
        try:
            url = f"http://127.0.0.1:{self.ports[i][1]}/state"
            with urllib.request.urlopen(url, timeout=1) as r:
                return json.loads(r.read())["quorum"]
        except (OSError, ValueError):
            return None

    def active(self, exclude: int | None = None) -> tuple[int, dict[str, Any]] | None:
        for i in IDS:
            if i != exclude and self.procs[i].poll() is None:
                s = self.state(i)
                if s is not None and s["active"]:
                    return i, s
        return None

    def wait_active(self, exclude: int | None = None) -> tuple[int, dict[str, Any]]:
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline:
            found = self.active(exclude)
            if found is not None:
                return found
            time.sleep(0.01)
        raise TimeoutError(f"no active controller within {WAIT_S} s (logs in {self.root})")

    def stop_all(self) -> None:
        for p in self.procs.values():
            p.kill()
            p.wait(timeout=WAIT_S)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kills", type=int, default=10)
    ap.add_argument("--signal", choices=("KILL", "TERM"), default="KILL")
    ap.add_argument("--election-timeout-ms", type=int, default=1000)
    ap.add_argument("--fetch-timeout-ms", type=int, default=2000)
    args = ap.parse_args()
    q = Quorum(args.election_timeout_ms, args.fetch_timeout_ms)
    sig = signal.SIGKILL if args.signal == "KILL" else signal.SIGTERM
    times: list[float] = []
    try:
        for i in IDS:
            q.start(i)
        q.wait_active()
        for n in range(args.kills):
            old, before = q.wait_active()
            q.procs[old].send_signal(sig)
            t0 = time.monotonic()
            new, after = q.wait_active(exclude=old)
            times.append((time.monotonic() - t0) * 1000)
            print(f"kill {n + 1}: {old} -> {new}, epoch {before['epoch']} -> {after['epoch']}: "
                  f"{times[-1]:.0f} ms", flush=True)
            q.procs[old].wait(timeout=WAIT_S)
            q.start(old)
            deadline = time.monotonic() + WAIT_S
            while (s := q.state(old)) is None or s["leader_id"] != new \
                    or s["high_watermark"] is None:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"controller {old} did not rejoin: {s}")
                time.sleep(0.05)
    finally:
        q.stop_all()
    times.sort()
    print(f"{args.kills} x SIG{args.signal}, election {args.election_timeout_ms} ms, fetch "
          f"{args.fetch_timeout_ms} ms: min {times[0]:.0f}, median {times[len(times) // 2]:.0f}, "
          f"max {times[-1]:.0f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
