"""Kafka wire protocol: framing, request/response codec (via kio), error codes."""
