"""results.json (HISTORY.md): its one writer and one reader.

The checker builds the mapping (harness.checker.results); this module only owns the
file: `write_results` replaces it atomically (a reader never sees half a file) with the layout
HISTORY.md shows (2-space indent, trailing newline); `read_results` returns it, None when absent,
and raises StoreError naming the file when it is not a JSON object.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from harness.store.files import StoreError, load_mapping

RESULTS_FILE = "results.json"


def write_results(run_dir: str | Path, results: dict[str, Any]) -> Path:
    path = Path(run_dir) / RESULTS_FILE
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    return path


def read_results(run_dir: str | Path) -> dict[str, Any] | None:
    return load_mapping(Path(run_dir) / RESULTS_FILE, json.loads)


__all__ = ["RESULTS_FILE", "StoreError", "read_results", "write_results"]
