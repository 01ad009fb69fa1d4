"""What a test needs from the machine (jars, servers, virtualenvs that
scripts/setup.sh --test installs): absent, it skips saying why, except in CI,
where it must run and fails instead."""

from __future__ import annotations

import os

import pytest


def require(reason: str | None, what: str) -> None:
    """Go on when `reason` (why it cannot run) is None; otherwise skip, or fail in CI naming `what`."""
    if reason is None:
        return
    if os.environ.get("CI"):
        pytest.fail(f"CI must run {what}: {reason}")
    pytest.skip(reason)
