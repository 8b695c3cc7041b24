"""The broker's admin endpoint (HTTP GET /state): per-partition replication state."""
