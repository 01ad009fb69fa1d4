"""The compiled helpers on, or off as where they were not built, for tests
that check both paths give one answer."""

from __future__ import annotations

import contextlib
from unittest import mock

import pytest

from metadata.mdt import native

PATHS = ["compiled", "fallback"]


def on_path(path: str) -> contextlib.AbstractContextManager[object]:
    """The compiled helpers (skipped where they were not built), or the numpy and Arrow fallback."""
    if path == "fallback":
        return mock.patch.object(native, "cells", None)
    if native.cells is None:
        pytest.skip("the compiled module was not built here (no C compiler): the fallback answers")
    return contextlib.nullcontext()
