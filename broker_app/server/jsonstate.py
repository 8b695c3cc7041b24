"""Small JSON state files written atomically (tmp file, fsync, rename, fsync dir).

Used for broker metadata that is not a log: topics, producer-id blocks, committed group offsets.
A reader gets the previous or the next version of a file, never a torn one. A corrupt file is an
error naming the file (the broker refuses to start rather than forget topics silently).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


class StateFileError(Exception):
    pass


def write_json_atomic(path: Path, data: Any) -> None:
    tmp = path.with_name(path.name + ".tmp")
    payload = json.dumps(data, indent=1, sort_keys=True).encode()
    with open(tmp, "wb") as f:
        f.write(payload)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def read_json(path: Path, default: Any) -> Any:
    if not path.exists():
        return default
    try:
        return json.loads(path.read_bytes())
    except (ValueError, UnicodeDecodeError) as e:
        raise StateFileError(f"{path}: not valid JSON: {e}") from e
