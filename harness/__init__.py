"""highwater harness: the Jepsen-style cluster, client, generator, nemesis, checker, store."""
