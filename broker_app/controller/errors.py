"""The controller's rejection type; error codes come from broker_app.protocol.error_codes.

`Errors` is re-exported here so controller code and its tests keep one import site, while the
numbers themselves have a single source shared with the broker.
"""

from __future__ import annotations

from broker_app.protocol.error_codes import Errors

__all__ = ["ControllerError", "Errors"]


class ControllerError(Exception):
    """A request the controller rejects: a Kafka error code plus a message naming the culprit."""

    def __init__(self, error: Errors, message: str) -> None:
        super().__init__(message)
        self.error = error
