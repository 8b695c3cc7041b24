"""Connection limits for the network edges (max.connections, per IP, idle timeout), sans-I/O.

ConnectionLimits (Kafka's names): `max.connections`, `max.connections.per.ip`,
`connections.max.idle.ms`. ConnectionCounter.admit(ip) says whether one more connection from
`ip` is allowed (and counts it); release(ip) when it closes. Kafka's defaults for the two
counts are unlimited (Int.MaxValue) and rely on the operator's fd ulimit; here max.connections
defaults to half of this process's soft RLIMIT_NOFILE so that log files always keep fds
(a difference from Kafka, documented in the README's "Hostile input" section).

Rejections are logged through broker_app/reject_log.py (rate-limited WARNING lines).
"""

from __future__ import annotations

import resource
from dataclasses import dataclass

INT32_MAX = 2**31 - 1
DEFAULT_CONNECTIONS_MAX_IDLE_MS = 600_000  # connections.max.idle.ms (Kafka: 10 min)


def default_max_connections() -> int:
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft <= 0:
        return INT32_MAX
    return max(soft // 2, 16)


@dataclass(frozen=True)
class ConnectionLimits:
    max_connections: int = INT32_MAX  # max.connections
    max_connections_per_ip: int = INT32_MAX  # max.connections.per.ip
    connections_max_idle_ms: int = DEFAULT_CONNECTIONS_MAX_IDLE_MS  # connections.max.idle.ms


class ConnectionCounter:
    def __init__(self, limits: ConnectionLimits) -> None:
        self.limits = limits
        self.total = 0
        self.by_ip: dict[str, int] = {}

    def admit(self, ip: str) -> str | None:
        """Count a new connection from `ip`; or the reason it is refused (nothing counted)."""
        if self.total >= self.limits.max_connections:
            return f"max.connections={self.limits.max_connections} reached"
        if self.by_ip.get(ip, 0) >= self.limits.max_connections_per_ip:
            return f"max.connections.per.ip={self.limits.max_connections_per_ip} reached for {ip}"
        self.total += 1
        self.by_ip[ip] = self.by_ip.get(ip, 0) + 1
        return None

    def release(self, ip: str) -> None:
        self.total -= 1
        n = self.by_ip.get(ip, 0) - 1
        if n > 0:
            self.by_ip[ip] = n
        else:
            self.by_ip.pop(ip, None)
