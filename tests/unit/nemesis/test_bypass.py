"""Reading a container's /proc/net/tcp{,6}: which accepted Kafka connections did not come
from Toxiproxy (a bypass would make every network fault a no-op for that connection)."""

from __future__ import annotations

from harness.cluster.bypass import Conn, direct_peers, parse_proc_net_tcp, proxied_count

# What `cat /proc/net/tcp /proc/net/tcp6` prints in a broker container (172.18.0.5): a
# listener, a connection from the proxy (172.18.0.2), one from the docker gateway (172.18.0.1,
# a bypass) on the Kafka port 9092 (0x2384), the state poller on the admin port 9095 (0x2387),
# and an IPv4-mapped connection from 172.18.0.9 in the tcp6 table.
TABLES = """\
  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000:2384 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1
   1: 050012AC:2384 020012AC:C350 01 00000000:00000000 00:00000000 00000000     0        0 2 1
   2: 050012AC:2384 010012AC:D431 01 00000000:00000000 00:00000000 00000000     0        0 3 1
   3: 050012AC:2387 010012AC:D432 01 00000000:00000000 00:00000000 00000000     0        0 4 1
   4: 050012AC:2384 020012AC:C351 06 00000000:00000000 00:00000000 00000000     0        0 0 3
  sl  local_address                         remote_address                        st tx_queue
   0: 0000000000000000FFFF0000050012AC:2384 0000000000000000FFFF0000090012AC:A001 01 00000000
"""


def test_parse_reads_both_tables_in_kernel_byte_order() -> None:
    conns = parse_proc_net_tcp(TABLES)
    assert conns[1] == Conn("172.18.0.5", 9092, "172.18.0.2", 50000, "01")
    assert conns[-1] == Conn("172.18.0.5", 9092, "172.18.0.9", 40961, "01")
    assert len(conns) == 6


def test_direct_peers_are_established_kafka_connections_not_from_the_proxy() -> None:
    conns = parse_proc_net_tcp(TABLES)
    assert direct_peers(conns, {9092}, {"172.18.0.2"}) == ["172.18.0.1:54321",
                                                           "172.18.0.9:40961"]
    assert proxied_count(conns, {9092}, {"172.18.0.2"}) == 1
    # All from the proxy (TIME_WAIT and the admin port do not count): nothing bypasses.
    assert direct_peers(conns, {9092}, {"172.18.0.2", "172.18.0.1", "172.18.0.9"}) == []
