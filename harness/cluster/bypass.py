"""Does any connection bypass Toxiproxy? A bypass silently turns every network fault into a no-op.

Contract (pure, unit-testable): `parse_proc_net_tcp(text)` reads the kernel's /proc/net/tcp and
/proc/net/tcp6 tables (as `cat` of both prints them) into `Conn`s; `direct_peers(conns,
ports, proxy_ips)` names the peers ("ip:port") of the ESTABLISHED connections accepted on one
of `ports` (the node's Kafka listener) whose remote end is not one of `proxy_ips` (the
Toxiproxy container's addresses). Every client, peer and controller connection to a broker or
the controller must come from the proxy (harness.cluster.topology); the admin port is left
out on purpose: the state poller reaches it directly, so it still sees a node it cut off.
`Cluster.direct_connections()` applies this inside each running container; `highwater run`
records the result in run.json (`direct_connections`) while the workload's clients are
connected.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Collection, Iterable
from dataclasses import dataclass

ESTABLISHED = "01"


@dataclass(frozen=True)
class Conn:
    local_ip: str
    local_port: int
    remote_ip: str
    remote_port: int
    state: str  # the kernel's hex state code; "01" is ESTABLISHED


def _addr(hex_addr: str) -> tuple[str, int]:
    ip_hex, port_hex = hex_addr.split(":")
    raw = bytes.fromhex(ip_hex)
    # The kernel prints each 32-bit word in host (little-endian) order.
    words = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
    ip: ipaddress.IPv4Address | ipaddress.IPv6Address
    if len(words) == 4:
        ip = ipaddress.IPv4Address(words)
    else:
        ip6 = ipaddress.IPv6Address(words)
        ip = ip6.ipv4_mapped or ip6
    return str(ip), int(port_hex, 16)


def parse_proc_net_tcp(text: str) -> list[Conn]:
    out = []
    for line in text.splitlines():
        fields = line.split()
        # Data rows start with "<n>:"; the header rows ("sl local_address ...") do not.
        if len(fields) < 4 or not fields[0].endswith(":") or not fields[0][:-1].isdigit():
            continue
        try:
            (lip, lport), (rip, rport) = _addr(fields[1]), _addr(fields[2])
        except ValueError:
            continue
        out.append(Conn(lip, lport, rip, rport, fields[3]))
    return out


def direct_peers(conns: Iterable[Conn], ports: Collection[int], proxy_ips: Collection[str]
                 ) -> list[str]:
    return sorted({f"{c.remote_ip}:{c.remote_port}" for c in conns
                   if c.state == ESTABLISHED and c.local_port in ports
                   and c.remote_ip not in proxy_ips})


def proxied_count(conns: Iterable[Conn], ports: Collection[int], proxy_ips: Collection[str]
                  ) -> int:
    """How many accepted connections did come from the proxy: evidence the table was read
    while clients and peers were connected (an empty `direct` list alone proves nothing)."""
    return sum(1 for c in conns if c.state == ESTABLISHED and c.local_port in ports
               and c.remote_ip in proxy_ips)
