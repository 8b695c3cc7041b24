"""File corruption for the `corrupt-file` action: bit flips or truncation of one file of a
stopped broker's data dir (a segment, its offset index, or a checkpoint).

Contract (pure, unit-testable): `pick(names, kind)` chooses the file of that kind among a
partition directory's file names: the newest segment (`.log`) or index (`.index`), i.e. the
active one that recovery reads, or the named checkpoint. `damage(data, how, n, rng)` returns the
damaged bytes and what was done: "flip" flips one random bit in each of `n` distinct random
bytes (a torn or rotted sector); "truncate" cuts the last `n` bytes off (a lost tail). The RNG
is the step's (targets.step_rng), so a run with the same seed damages the same bits.
`Cluster.corrupt_file` reads the file out of the stopped container (docker get_archive), damages
it and writes it back (put_archive); a running container is refused: a live broker would keep
its own copy in memory and overwrite the file.
"""

from __future__ import annotations

import random

KINDS = ("segment", "index", "leader-epoch-checkpoint", "replication-offset-checkpoint")
HOWS = ("flip", "truncate")
_SUFFIX = {"segment": ".log", "index": ".index"}


class CorruptError(ValueError):
    """The file to damage does not exist or cannot be damaged as asked."""


def pick(names: list[str], kind: str) -> str:
    """The file name of `kind` among a directory's names (see the module docstring)."""
    if kind in _SUFFIX:
        found = sorted(n for n in names if n.endswith(_SUFFIX[kind]))
        if not found:
            raise CorruptError(f"no {kind} file ({_SUFFIX[kind]}) among {sorted(names)}")
        return found[-1]
    if kind not in names:
        raise CorruptError(f"no {kind} among {sorted(names)}")
    return kind


def damage(data: bytes, how: str, n: int, rng: random.Random) -> tuple[bytes, str]:
    if not data:
        raise CorruptError("the file is empty: nothing to damage")
    if how == "truncate":
        cut = min(n, len(data))
        return data[:len(data) - cut], f"cut the last {cut} of {len(data)} bytes"
    if how != "flip":
        raise CorruptError(f"how must be one of {HOWS}, got {how!r}")
    out = bytearray(data)
    where = sorted(rng.sample(range(len(data)), min(n, len(data))))
    flips = []
    for pos in where:
        bit = rng.randrange(8)
        out[pos] ^= 1 << bit
        flips.append(f"{pos}.{bit}")
    return bytes(out), f"flipped bit(s) byte.bit {', '.join(flips)} of {len(data)} bytes"
