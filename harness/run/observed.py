"""ObservedCluster: a Cluster whose brokers and controller also serve the admin `GET /state`.

Contract: like harness.cluster.Cluster, plus every broker and the controller run with
`--admin-port ADMIN_PORT`, published on 127.0.0.1 of the host, and `admin_endpoints()` maps
"broker-<id>"/"controller" to its current 127.0.0.1:<port>. The admin port is published
directly, not through Toxiproxy, on purpose: the harness must still see a node it cut off.
A restarted container may get another host port, so endpoints are re-read (cached until an
address stops answering, then refreshed at most once per REFRESH_S).
"""

from __future__ import annotations

import threading
import time
from typing import Any

from harness.cluster import Cluster
from harness.cluster.topology import CONTROLLER

ADMIN_PORT = 9095
REFRESH_S = 1.0


class ObservedCluster(Cluster):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._admin: dict[str, str] = {}
        self._admin_read_at = 0.0
        self._admin_lock = threading.Lock()

    def broker_command(self, i: int) -> list[str]:
        return [*super().broker_command(i), "--admin-port", str(ADMIN_PORT)]

    def controller_command(self) -> list[str]:
        return [*super().controller_command(), "--admin-port", str(ADMIN_PORT)]

    def extra_ports(self, role: str) -> dict[str, Any]:
        if role in ("broker", CONTROLLER):
            return {f"{ADMIN_PORT}/tcp": ("127.0.0.1", None)}
        return {}

    def admin_endpoints(self, refresh: bool = False) -> dict[str, str]:
        """node -> 127.0.0.1:<published admin port>, for the nodes whose container runs."""
        with self._admin_lock:
            stale = time.monotonic() - self._admin_read_at > REFRESH_S
            if refresh and stale or not self._admin:
                found = {}
                for node in self.node_names():
                    try:
                        addr = self.published(node, ADMIN_PORT)
                    except Exception:  # container gone or docker busy: not observable now
                        addr = None
                    if addr:
                        found[node] = addr
                self._admin = found
                self._admin_read_at = time.monotonic()
            return dict(self._admin)
