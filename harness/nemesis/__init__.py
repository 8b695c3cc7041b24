"""The nemesis: a plan's faults carried out on a running cluster (core: the schedule;
handlers: what each action kind does and undoes)."""

from harness.nemesis.core import Event, Nemesis, check_supported
from harness.nemesis.handlers import (
    HANDLERS,
    UNSUPPORTED,
    NemesisError,
    elect_preferred,
    handler_for,
    node_name,
)

__all__ = ["HANDLERS", "UNSUPPORTED", "Event", "Nemesis", "NemesisError", "check_supported",
           "elect_preferred", "handler_for", "node_name"]
