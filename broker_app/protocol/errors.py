"""Protocol-level errors raised while framing and decoding requests.

Each says what was wrong and where (which API, which byte offset), so the network edge can log
one line and decide between an error reply and closing the connection.
"""

from __future__ import annotations


class ProtocolError(Exception):
    """Base: the peer sent something this broker cannot interpret; the connection is closed."""


class FrameTooLarge(ProtocolError):
    def __init__(self, size: int, max_size: int) -> None:
        super().__init__(f"frame size {size} exceeds the maximum of {max_size} bytes")
        self.size = size
        self.max_size = max_size


class InvalidFrameSize(ProtocolError):
    def __init__(self, size: int) -> None:
        super().__init__(f"invalid frame size {size} (must be >= 0)")
        self.size = size


class MalformedRequest(ProtocolError):
    """The frame is complete but its header or body does not parse under the claimed schema."""


class UnsupportedRequest(ProtocolError):
    """Unknown api key or a version outside the advertised range (not ApiVersions)."""

    def __init__(self, api_key: int, api_version: int, correlation_id: int) -> None:
        super().__init__(
            f"unsupported api_key={api_key} api_version={api_version} "
            f"(correlation_id={correlation_id})"
        )
        self.api_key = api_key
        self.api_version = api_version
        self.correlation_id = correlation_id
