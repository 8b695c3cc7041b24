"""harness.cluster: containers, network and lifecycle of a highwater cluster (Jepsen's `db`).

Cluster (cluster.py) starts Toxiproxy, an optional controller and N brokers on a fresh docker
network with a proxy on every link (topology.py); lifecycle.py owns cleanup and `highwater
clean`; diskfs.py is the FUSE layer under a broker's data dir for disk faults.
"""

from harness.cluster.cluster import Cluster, ClusterError, NodeInfo, new_run_id
from harness.cluster.lifecycle import clean
from harness.cluster.topology import Link, Topology, TopologyError

__all__ = ["Cluster", "ClusterError", "Link", "NodeInfo", "Topology", "TopologyError", "clean",
           "new_run_id"]
