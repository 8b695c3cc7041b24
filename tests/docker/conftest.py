"""Shared fixtures for the docker tests: images built once per session, run ids tracked, and a
session-end check that no container or network of this session's runs is left behind.

Every cluster a test starts must use a run id from `run_id_factory`, so the final check knows
it: runs of other people's test sessions on the same machine are not this session's business.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator

import pytest
from hw_docker_util import leftovers

SESSION = uuid.uuid4().hex[:6]
_RUN_IDS: list[str] = []


@pytest.fixture(scope="session")
def cluster_images() -> dict[str, str]:
    from harness.images import ensure_images

    return ensure_images()


@pytest.fixture(scope="session")
def run_id_factory() -> Iterator[Callable[[str], str]]:
    def make(name: str) -> str:
        rid = f"t{SESSION}-{name}"
        _RUN_IDS.append(rid)
        return rid

    yield make
    # Belt and braces, then the real check: the clusters must have removed themselves.
    left = leftovers(_RUN_IDS)
    assert not left, f"docker objects left behind by this session: {left}"


def session_run_ids() -> list[str]:
    return list(_RUN_IDS)
