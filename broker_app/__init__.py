"""highwater broker: the system under test, a Kafka-protocol broker with Kafka-style replication."""
