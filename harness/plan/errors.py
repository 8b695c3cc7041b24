"""Errors raised by plan loading, condition parsing and target resolution.

`PlanError` renders as ONE line, "<file>:<line>: <field path>: <what is wrong>", so a bad
plan fails before anything starts with a message an editor can jump to. Values that came
from `--set key=value` have no line; they render as "<file>: --set key=value: <field>: ...".
"""

from __future__ import annotations


class PlanError(Exception):
    """A plan that does not parse or validate."""

    def __init__(
        self, file: str, line: int | None, field: str, message: str, origin: str | None = None
    ) -> None:
        self.file = file
        self.line = line  # 1-based; None when the value came from an override
        self.field = field
        self.message = message
        self.origin = origin  # e.g. "--set workload.acks=2"
        super().__init__(str(self))

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line is not None else self.file
        if self.origin:
            where = f"{where}: {self.origin}"
        field = f"{self.field}: " if self.field else ""
        # One line, always: YAML's own messages can span lines.
        return " ".join(f"{where}: {field}{self.message}".split())


class ConditionError(ValueError):
    """A condition that does not parse or type-check; `column` is 1-based within its text."""

    def __init__(self, message: str, column: int) -> None:
        self.message = message
        self.column = column
        super().__init__(f"column {column}: {message}")


class ResolutionError(RuntimeError):
    """A role target that cannot be resolved on the current cluster state (e.g. no leader)."""
