"""ObservedCluster: a Cluster whose brokers and controller also serve the admin `GET /state`.

Contract: like harness.cluster.Cluster, plus every broker and the controller run with
`--admin-port ADMIN_PORT`, published on 127.0.0.1 of the host, and `admin_endpoints()` maps
"broker-<id>"/"controller-<id>" to its current 127.0.0.1:<port>. The admin port is published
directly, not through Toxiproxy, on purpose: the harness must still see a node it cut off.
A restarted container may get another host port, so endpoints are re-read (cached until an
address stops answering, then refreshed at most once per REFRESH_S).
`skew_clock(node, ms, strobe_period_ms)` sets a broker's clock seam (admin `POST /clock`, the
`clock` nemesis); `reset_skewed_clocks()` sets every node it skewed back to 0 (heal-all). A
restarted broker starts with its clock unskewed.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from typing import Any

from harness.cluster import Cluster, ClusterError
from harness.cluster.topology import CONTROLLER

ADMIN_PORT = 9095
REFRESH_S = 1.0
CLOCK_TIMEOUT_S = 5.0


class ObservedCluster(Cluster):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._admin: dict[str, str] = {}
        self._admin_read_at = 0.0
        self._admin_lock = threading.Lock()
        self._skewed: set[str] = set()

    def broker_command(self, i: int) -> list[str]:
        return [*super().broker_command(i), "--admin-port", str(ADMIN_PORT)]

    def controller_command(self, c: int) -> list[str]:
        return [*super().controller_command(c), "--admin-port", str(ADMIN_PORT)]

    def extra_ports(self, role: str) -> list[int]:
        return [ADMIN_PORT] if role in ("broker", CONTROLLER) else []

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

    def skew_clock(self, node: str, offset_ms: int, strobe_period_ms: int = 0) -> dict[str, Any]:
        """POST /clock on the node's admin port; returns the clock it now reports."""
        addr = self.admin_endpoints(refresh=True).get(node)
        if addr is None:
            raise ClusterError(f"{node}: no admin port to skew its clock (is it running?)")
        url = f"http://{addr}/clock?offset_ms={offset_ms}&strobe_period_ms={strobe_period_ms}"
        req = urllib.request.Request(url, data=b"", method="POST")
        try:
            with urllib.request.urlopen(req, timeout=CLOCK_TIMEOUT_S) as resp:
                answer = json.loads(resp.read())
        except (urllib.error.URLError, OSError, ValueError) as exc:
            raise ClusterError(f"{node}: POST /clock failed: {exc}") from exc
        if offset_ms:
            self._skewed.add(node)
        else:
            self._skewed.discard(node)
        return answer

    def reset_skewed_clocks(self) -> None:
        for node in sorted(self._skewed):
            try:
                self.skew_clock(node, 0)
            except ClusterError:
                self._skewed.discard(node)  # down: it restarts unskewed
