"""harness.testing: a highwater cluster in a user's own test suite.

    from harness.testing import HighwaterCluster

    with HighwaterCluster(brokers=3) as hw:
        hw.create_topic("orders", replication_factor=3, min_insync_replicas=2)
        ...  # the application's own clients on hw.bootstrap_servers, faults on hw
        assert hw.check(history)["lost-write"] == 0

The pytest plugin (harness/testing/plugin.py, registered as `highwater`) gives the fixtures
`highwater_cluster` and `highwater_cluster_factory`; docs/testing-your-app.md has a worked
example.
"""

from harness.testing.cluster import HighwaterCluster
from harness.testing.history import History

__all__ = ["HighwaterCluster", "History"]
