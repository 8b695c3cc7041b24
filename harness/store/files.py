"""What every run-dir file module shares: StoreError and reading a whole-file mapping."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any


class StoreError(Exception):
    pass


def load_mapping(path: Path, parse: Callable[[str], Any]) -> dict[str, Any] | None:
    """The file parsed as a mapping; None when absent; StoreError naming it when unreadable."""
    import yaml

    if not path.is_file():
        return None
    try:
        data = parse(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, yaml.YAMLError) as e:
        raise StoreError(f"{path}: cannot read: {e}") from e
    if data is not None and not isinstance(data, dict):
        raise StoreError(f"{path}: expected a mapping, got {type(data).__name__}")
    return data
