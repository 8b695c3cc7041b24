"""Replication core (sans-I/O): Partition, ISR/HW, ReplicaManager, DelayedProduce, Purgatory."""
