"""The container cluster's port plan (harness/cluster/topology.py): one Toxiproxy proxy per
directed link, controllers included, every listen port distinct, and the addresses each
process is started with pointing at its own proxies."""

from __future__ import annotations

import pytest

from harness.cluster.topology import (
    CONTROLLER_PROXY_BASE,
    MAX_BROKERS,
    MAX_CONTROLLERS,
    QUORUM_PROXY_BASE,
    TOXIPROXY,
    Topology,
    TopologyError,
    controller_id,
    controller_index,
    controller_name,
    controller_node_id,
    is_controller,
)
from harness.net import Net


@pytest.mark.parametrize("controllers", [0, 1, 3, 5])
def test_every_directed_link_has_its_own_proxy(controllers: int) -> None:
    t = Topology(3, controllers)
    links = t.link_map()
    brokers, ctls = t.broker_names, t.controller_names
    assert ctls == [f"controller-{c}" for c in range(1, controllers + 1)]
    expected = ({("client", b) for b in brokers}
                | {(a, b) for a in brokers for b in brokers if a != b}
                | {(b, c) for b in brokers for c in ctls}
                | {(a, b) for a in ctls for b in ctls if a != b})
    assert set(links) == expected
    ports = [link.listen_port for link in links.values()]
    assert len(set(ports)) == len(ports)
    assert len({link.proxy for link in links.values()}) == len(links)
    for (src, dst), link in links.items():
        assert link.upstream == f"{dst}:{9093 if is_controller(dst) else 9092}"
        assert link.proxy == f"{src}-to-{dst}"
    assert t.nodes == [*brokers, *ctls, "client"]


def test_the_largest_cluster_keeps_port_plans_apart() -> None:
    t = Topology(MAX_BROKERS, MAX_CONTROLLERS)
    ports = [link.listen_port for link in t.links()]
    assert len(set(ports)) == len(ports)
    quorum = [p for p in ports if QUORUM_PROXY_BASE <= p < QUORUM_PROXY_BASE + 1000]
    to_controllers = [p for p in ports if CONTROLLER_PROXY_BASE <= p < CONTROLLER_PROXY_BASE + 1000]
    assert len(quorum) == MAX_CONTROLLERS * (MAX_CONTROLLERS - 1)
    assert len(to_controllers) == MAX_BROKERS * MAX_CONTROLLERS
    assert max(ports) < 65536


def test_processes_dial_only_their_own_proxies() -> None:
    t = Topology(3, 3)
    links = t.link_map()
    # Broker 2's controller.quorum.bootstrap.servers: its proxy to each controller.
    assert t.controller_bootstrap(2) == ",".join(
        f"{TOXIPROXY}:{links[('broker-2', f'controller-{c}')].listen_port}" for c in (1, 2, 3))
    # Controller 2's voters: the others at its proxies to them, itself at its own address.
    # Voter ids are the controllers' node ids, 3000 + c (unique beside the broker ids).
    assert t.voters(2) == (
        f"3001@{TOXIPROXY}:{links[('controller-2', 'controller-1')].listen_port},"
        "3002@controller-2:9093,"
        f"3003@{TOXIPROXY}:{links[('controller-2', 'controller-3')].listen_port}")
    assert t.controller_address(3, 1) == f"{TOXIPROXY}:{CONTROLLER_PROXY_BASE + 31}"
    assert t.voters(1).startswith("3001@controller-1:9093,3002@toxiproxy:31012,")
    assert controller_index(controller_node_id(7)) == 7 and controller_index(3) is None


def test_link_faults_can_name_controller_pairs() -> None:
    net = Net("127.0.0.1", 8474, Topology(3, 3).link_map())
    assert net.linked("controller-1", "controller-2")
    assert net.linked("broker-3", "controller-1") and net.linked("controller-1", "broker-3")
    assert not net.linked("client", "controller-1")  # clients talk to brokers only
    assert {"controller-1", "controller-2", "controller-3"} <= set(net.nodes)


def test_names_and_bad_sizes() -> None:
    assert controller_name(3) == "controller-3" and controller_id("controller-3") == 3
    for bad in ("controller", "controller-0", "controller-10", "broker-1"):
        assert not is_controller(bad)
        with pytest.raises(TopologyError, match="not a controller name"):
            controller_id(bad)
    with pytest.raises(TopologyError, match="controllers=10"):
        Topology(3, 10)
    with pytest.raises(TopologyError, match="controllers=True"):
        Topology(3, True)  # type: ignore[arg-type]
    with pytest.raises(TopologyError, match="unknown node 'controller-4'"):
        Topology(3, 3).check_node("controller-4")
    assert Topology(3, 3).check_node("controller-2") == "controller-2"


def test_the_compose_files_match_the_topology() -> None:
    import json
    from pathlib import Path

    import yaml

    compose = Path(__file__).resolve().parents[3] / "compose"
    t = Topology(3, 3)
    assert json.loads((compose / "toxiproxy.json").read_text()) == t.populate()
    services = yaml.safe_load((compose / "docker-compose.yml").read_text())["services"]
    for c in t.controller_ids:
        cmd = services[controller_name(c)]["command"]
        assert cmd[cmd.index("--node-id") + 1] == str(controller_node_id(c))
        assert cmd[cmd.index("--controller-quorum-voters") + 1] == t.voters(c)
    for b in t.broker_ids:
        cmd = services[f"broker-{b}"]["command"]
        assert cmd[cmd.index("--controller-quorum-bootstrap-servers") + 1] \
            == t.controller_bootstrap(b)
        peers = [cmd[i + 1] for i, a in enumerate(cmd) if a == "--peer"]
        assert peers == [f"{j}={t.peer_address(b, j)}" for j in t.broker_ids if j != b]


def test_cluster_commands_wire_the_quorum_through_the_proxies() -> None:
    from harness.cluster.cluster import Cluster
    from harness.run.observed import ADMIN_PORT, ObservedCluster

    c = ObservedCluster("unit", brokers=3, controllers=3, controller_args=["--kafka-version",
                                                                          "4.1"])
    assert c.node_names() == ["controller-1", "controller-2", "controller-3",
                              "broker-1", "broker-2", "broker-3"]
    cmd = c.controller_command(2)
    assert cmd[cmd.index("--node-id") + 1] == "3002"
    assert cmd[cmd.index("--controller-quorum-voters") + 1] == c.topology.voters(2)
    assert cmd[-2:] == ["--admin-port", str(ADMIN_PORT)] and "4.1" in cmd
    c._client_ports = {f"broker-{i}": 40000 + i for i in (1, 2, 3)}
    b = c.broker_command(3)
    assert b[b.index("--controller-quorum-bootstrap-servers") + 1] \
        == c.topology.controller_bootstrap(3)
    assert "--controller" not in b
    assert [b[k + 1] for k, arg in enumerate(b) if arg == "--peer"] == [
        f"{j}={c.topology.peer_address(3, j)}" for j in (1, 2)]
    # controller=True is a quorum of one; neither: brokers alone.
    assert Cluster("unit", brokers=1, controller=True).node_names() == ["controller-1",
                                                                        "broker-1"]
    assert Cluster("unit", brokers=1).node_names() == ["broker-1"]
