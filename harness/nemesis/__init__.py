"""The nemesis: a plan's faults carried out on a running cluster, containers or simulated
(core: the schedule; handlers: what each action kind does and undoes)."""

from harness.nemesis.core import Event, FiredStep, Nemesis, check_supported
from harness.nemesis.handlers import (
    HANDLERS,
    UNSUPPORTED,
    NemesisError,
    handler_for,
    node_name,
)

__all__ = ["HANDLERS", "UNSUPPORTED", "Event", "FiredStep", "Nemesis", "NemesisError",
           "check_supported", "handler_for", "node_name"]
