"""highwater harness: the Jepsen-style cluster, client, workload, nemesis, checker, store."""
