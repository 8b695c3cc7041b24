"""Kafka's rules for a topic's name and configs, shared by the controller (CreateTopics,
AlterConfigs) and the broker (a Metadata request naming an illegal topic). TopicError carries
the Kafka error code and a message naming the offending value."""

from __future__ import annotations

import re

from broker_app.protocol.error_codes import Errors
from broker_app.server.configs import ConfigError, validate_topic_configs

_LEGAL_TOPIC = re.compile(r"^[a-zA-Z0-9._-]+$")
MAX_TOPIC_NAME = 249  # Kafka's Topic.MAX_NAME_LENGTH


class TopicError(Exception):
    def __init__(self, error_code: int, message: str) -> None:
        super().__init__(message)
        self.error_code = error_code


def validate_topic_name(name: str | None) -> None:
    if not name or name in (".", ".."):
        raise TopicError(Errors.INVALID_TOPIC_EXCEPTION, f"invalid topic name {name!r}")
    if len(name) > MAX_TOPIC_NAME:
        raise TopicError(
            Errors.INVALID_TOPIC_EXCEPTION,
            f"topic name of {len(name)} characters exceeds {MAX_TOPIC_NAME}",
        )
    if not _LEGAL_TOPIC.match(name):
        raise TopicError(
            Errors.INVALID_TOPIC_EXCEPTION,
            f"topic name {name!r} has characters outside [a-zA-Z0-9._-]",
        )


def validate_configs(configs: dict[str, str | None]) -> dict[str, str]:
    """CreateTopics' configs checked against the one catalogue (server/configs.py)."""
    try:
        return validate_topic_configs(configs)
    except ConfigError as e:
        raise TopicError(e.error_code, str(e)) from None
