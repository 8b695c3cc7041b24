"""`highwater cluster up|status|down`: a cluster started by hand, left running between commands.

- up [--brokers N] [--controllers C | --controller] [--run-id ID] [--disk-faults]
  [--broker-arg ARG ...]: starts the cluster (C KRaft controllers controller-1..C in one Raft
  quorum, every link through its own proxy; --controller is C=1; neither: each broker alone,
  its own controller in its process), labelled owner=detached; prints the run id, the
  bootstrap address (through the proxies), the Toxiproxy API address and each node's own
  published port, then exits leaving it up. Ctrl-C during start-up removes what was made.
- status [--run-id ID]: every highwater run (or one), its containers, states and addresses.
- down [--run-id ID]: removes the run (without --run-id: the only detached run, if exactly one).
Exit codes: 0 ok, 1 error (message on stderr), 130 interrupted.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from harness.cluster.topology import LABEL_OWNER, LABEL_RUN


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="cluster_action", metavar="ACTION", required=True)
    up = sub.add_parser("up", help="start a cluster and leave it running")
    up.add_argument("--brokers", type=int, default=3)
    ctl = up.add_mutually_exclusive_group()
    ctl.add_argument("--controllers", type=int, default=None, metavar="C",
                     help="start a KRaft quorum of C controllers (1, 3, 5...; max 9)")
    ctl.add_argument("--controller", action="store_true", help="one controller (--controllers 1)")
    up.add_argument("--run-id", default=None, help="default: hw-<time>-<random>")
    up.add_argument("--disk-faults", action="store_true",
                    help="mount the FUSE disk-fault layer under each broker's data dir")
    up.add_argument("--broker-arg", action="append", default=[], metavar="ARG",
                    help="extra argument for every broker (repeat; e.g. --broker-arg=--flag)")
    up.add_argument("--json", action="store_true", help="print the addresses as JSON")
    status = sub.add_parser("status", help="show running clusters and how to reach them")
    status.add_argument("--run-id", default=None)
    down = sub.add_parser("down", help="remove a cluster")
    down.add_argument("--run-id", default=None)


def describe(cluster: Any) -> dict[str, Any]:
    return {
        "run_id": cluster.run_id,
        "bootstrap": cluster.bootstrap if cluster.addresses_known else None,
        "toxiproxy_api": cluster.toxiproxy_api if cluster.addresses_known else None,
        "nodes": [
            {"node": n.name, "role": n.role, "container": n.container, "status": n.status,
             "own_port": n.direct}
            for n in cluster.nodes()
        ],
    }


def _print(info: dict[str, Any]) -> None:
    print(f"run id:         {info['run_id']}")
    print(f"bootstrap:      {info['bootstrap']}   (every client byte crosses a proxy)")
    print(f"toxiproxy API:  http://{info['toxiproxy_api']}")
    for n in info["nodes"]:
        print(f"  {n['node']:<12} {n['status']:<9} {n['container']:<40} own port {n['own_port']}")


def _runs(client: Any) -> dict[str, str]:
    """run id -> owner label, for every labelled container."""
    runs: dict[str, str] = {}
    for c in client.containers.list(all=True, filters={"label": LABEL_RUN}):
        runs.setdefault(c.labels[LABEL_RUN], c.labels.get(LABEL_OWNER, "?"))
    return runs


def run(args: argparse.Namespace) -> int:
    from harness.cluster.cluster import Cluster, ClusterError, _docker
    from harness.cluster.lifecycle import DETACHED
    from harness.cluster.topology import TopologyError

    try:
        if args.cluster_action == "up":
            cluster = Cluster(args.run_id, brokers=args.brokers, controller=args.controller,
                              controllers=args.controllers,
                              broker_args=args.broker_arg, disk_faults=args.disk_faults,
                              detached=True)
            print(f"starting run {cluster.run_id} ...", file=sys.stderr, flush=True)
            cluster.up()
            cluster.detach()
            info = describe(cluster)
            if args.json:
                print(json.dumps(info, indent=2))
            else:
                _print(info)
                print(f"stop it with: highwater cluster down --run-id {cluster.run_id}")
            return 0
        client = _docker().client
        runs = _runs(client)
        if args.cluster_action == "status":
            wanted = [args.run_id] if args.run_id else sorted(runs)
            if not wanted:
                print("no highwater clusters")
            for rid in wanted:
                _print(describe(Cluster.attach(rid)))
                print(f"  owner: {runs.get(rid, '?')}")
            return 0
        run_id = args.run_id
        if run_id is None:
            detached = [r for r, owner in runs.items() if owner == DETACHED]
            if len(detached) != 1:
                raise ClusterError(
                    f"{len(detached)} detached clusters running ({', '.join(detached) or 'none'})"
                    "; name one with --run-id"
                )
            run_id = detached[0]
        Cluster.attach(run_id).down()
        print(f"removed run {run_id}")
        return 0
    except (ClusterError, TopologyError) as exc:
        print(f"highwater cluster: error: {exc}", file=sys.stderr)
        return 1
