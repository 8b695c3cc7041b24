"""Who owns a run, whether it is still alive, and removing what dead runs left behind.

Contract:
- owner_label() names this process ("<host>:<pid>:<start ticks>"); a run whose owner process is
  gone (or was replaced by another process with the same pid) is dead. `highwater cluster up`
  labels its run "detached": it lives until `highwater cluster down`.
- CleanupGuard: while entered, SIGTERM (and SIGHUP) raise KeyboardInterrupt in the main thread,
  like Ctrl-C, so `with Cluster(...)` unwinds and removes everything; an atexit hook runs the
  cleanup too if the interpreter exits some other way. Handlers are restored on exit.
- clean(docker_client, include_detached=False, min_age_s=...) removes every container, network
  and volume labelled highwater.run whose run is dead, and returns the run ids it removed.
  Runs without an owner label (made by other tools) count as dead once older than min_age_s.
"""

from __future__ import annotations

import atexit
import os
import signal
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

from harness.cluster.topology import LABEL_CREATED, LABEL_OWNER, LABEL_RUN

DETACHED = "detached"
UNOWNED_MIN_AGE_S = 3600.0


def _start_ticks(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return "?"


def owner_label() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{_start_ticks(os.getpid())}"


def owner_alive(owner: str | None) -> bool | None:
    """True/False for an owner of this host; None when it cannot tell (another host, no label)."""
    if owner is None:
        return None
    if owner == DETACHED:
        return True
    try:
        host, pid_s, ticks = owner.rsplit(":", 2)
        pid = int(pid_s)
    except ValueError:
        return None
    if host != socket.gethostname():
        return None
    if not Path(f"/proc/{pid}").exists():
        return False
    # A recycled pid belongs to a process started at another time.
    return ticks == "?" or _start_ticks(pid) == ticks


class CleanupGuard:
    """Turns SIGTERM/SIGHUP into KeyboardInterrupt and runs `cleanup` at interpreter exit."""

    SIGNALS = (signal.SIGTERM, signal.SIGHUP)

    def __init__(self, cleanup: Callable[[], None]) -> None:
        self._cleanup = cleanup
        self._saved: dict[int, Any] = {}
        self._done = False

    def _raise(self, signum: int, _frame: FrameType | None) -> None:
        raise KeyboardInterrupt(f"signal {signal.Signals(signum).name}")

    def __enter__(self) -> CleanupGuard:
        atexit.register(self.run_once)
        # Signal handlers can only be installed from the main thread; elsewhere rely on atexit.
        if threading.current_thread() is threading.main_thread():
            for sig in self.SIGNALS:
                self._saved[sig] = signal.signal(sig, self._raise)
        return self

    def run_once(self) -> None:
        if not self._done:
            self._done = True
            self._cleanup()

    def __exit__(self, *exc: object) -> None:
        try:
            self.run_once()
        finally:
            for sig, handler in self._saved.items():
                signal.signal(sig, handler)
            self._saved.clear()
            atexit.unregister(self.run_once)


def _run_is_dead(labels: dict[str, str], include_detached: bool, min_age_s: float) -> bool:
    owner = labels.get(LABEL_OWNER)
    if owner == DETACHED:
        return include_detached
    alive = owner_alive(owner)
    if alive is not None:
        return not alive
    try:
        created = float(labels.get(LABEL_CREATED, "0"))
    except ValueError:
        created = 0.0
    return time.time() - created >= min_age_s


def clean(
    client: Any,
    *,
    include_detached: bool = False,
    min_age_s: float = UNOWNED_MIN_AGE_S,
    only_run: str | None = None,
    log: Callable[[str], None] = lambda _m: None,
) -> list[str]:
    """Remove containers, networks and volumes of dead runs (or of only_run, whatever its state)."""
    selector = f"{LABEL_RUN}={only_run}" if only_run else LABEL_RUN
    containers = client.containers.list(all=True, filters={"label": selector})
    networks = client.networks.list(filters={"label": selector})
    volumes = client.volumes.list(filters={"label": selector})
    # A run's fate is decided once, from any of its objects' labels (all carry the same ones).
    dead: dict[str, bool] = {}
    for obj_labels in [c.labels for c in containers] + [n.attrs.get("Labels") or {}
                                                        for n in networks]:
        run = obj_labels.get(LABEL_RUN, "")
        if run not in dead:
            dead[run] = only_run is not None or _run_is_dead(obj_labels, include_detached,
                                                             min_age_s)
    for v in volumes:
        run = (v.attrs.get("Labels") or {}).get(LABEL_RUN, "")
        dead.setdefault(run, only_run is not None)
    removed = sorted(run for run, is_dead in dead.items() if is_dead)
    for c in containers:
        if dead.get(c.labels.get(LABEL_RUN, "")):
            log(f"removing container {c.name}")
            _quiet(lambda c=c: c.remove(force=True, v=True))
    for v in volumes:
        if dead.get((v.attrs.get("Labels") or {}).get(LABEL_RUN, "")):
            log(f"removing volume {v.name}")
            _quiet(lambda v=v: v.remove(force=True))
    for n in networks:
        if dead.get((n.attrs.get("Labels") or {}).get(LABEL_RUN, "")):
            log(f"removing network {n.name}")
            _quiet(n.remove)
    return removed


def _quiet(fn: Callable[[], object]) -> None:
    """Cleanup goes on past one object that is already gone."""
    import docker.errors

    try:
        fn()
    except docker.errors.NotFound:
        pass
    except docker.errors.APIError as exc:
        if "removal of container" in str(exc) and "already in progress" in str(exc):
            return
        raise
