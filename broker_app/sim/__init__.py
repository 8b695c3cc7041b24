"""The deterministic simulator: brokers and a controller built from the production classes, on a
virtual clock and a simulated network (issue 11). Entry point: cluster.SimCluster."""
