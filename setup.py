"""The compiled part of the project; everything else is declared in pyproject.toml.

broker_app.storage._recordwalk is LogValidator's per-record walk in C (the Python reference
stays in log_validator.py and is used when the module is absent). Built against CPython's
limited API for 3.11 (abi3), so the wheel that `highwater images build` makes on the host
installs into the images' Debian python3.11 whatever its patch release. Needs a C compiler
(gcc); `pip install -e .` builds it in place next to its source.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from setuptools import Extension, setup

SOURCE = "broker_app/storage/_recordwalk.c"
# The source's hash is compiled in, so a test can tell a stale in-place build from the source.
_SHA = hashlib.sha256((Path(__file__).parent / SOURCE).read_bytes()).hexdigest()

setup(
    ext_modules=[
        Extension(
            "broker_app.storage._recordwalk",
            sources=[SOURCE],
            define_macros=[("HW_SOURCE_SHA", f'"{_SHA}"')],
            extra_compile_args=["-O2", "-std=gnu11"],
            py_limited_api=True,
        )
    ],
    options={"bdist_wheel": {"py_limited_api": "cp311"}},
)
