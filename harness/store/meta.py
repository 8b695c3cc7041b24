"""run.json: the run's own facts (seed, start time, argv, exit code and reason, nemesis
events...): one reader and one merging writer.

`read_meta(run_dir)` is {} when the file is absent (a run that died before writing it) and a
StoreError naming the file when it is not a JSON object; `write_meta(run_dir, **fields)` merges
the fields into it and replaces the file atomically (sorted keys, 1-space indent).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from harness.store.files import load_mapping

META_FILE = "run.json"


def read_meta(run_dir: str | Path) -> dict[str, Any]:
    return load_mapping(Path(run_dir) / META_FILE, json.loads) or {}


def write_meta(run_dir: str | Path, **fields: Any) -> dict[str, Any]:
    path = Path(run_dir) / META_FILE
    meta = {**read_meta(run_dir), **fields}
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(meta, indent=1, sort_keys=True), encoding="utf-8")
    os.replace(tmp, path)
    return meta
