"""The vectorised images of arithmetic functions (all files at once) equal
the file-by-file ones exactly, overflow and date-range edges included."""

from __future__ import annotations

import random
from collections.abc import Callable
from datetime import date
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest

from expressions.functions import Add, Divide, Function, Multiply, image_all, image_all_arrays

_RNG_SEED = 11


def _bounds(draw: Callable[[], Any], rng: random.Random, files: int = 2000) -> tuple[list[Any], list[Any]]:
    lows: list[Any] = []
    highs: list[Any] = []
    for _ in range(files):
        if rng.random() < 0.05:  # a file without bounds
            lows.append(None)
            highs.append(None)
        else:
            low, high = sorted([draw(), draw()])
            lows.append(low)
            highs.append(high)
    return lows, highs


def _cases() -> list[tuple[Function, pa.DataType, str]]:
    cases: list[tuple[Function, pa.DataType, str]] = []
    for k in (3, -3, 0, 1, 2**40, -(2**40)):
        for dtype, draw in ((pa.int64(), "int64"), (pa.int32(), "int32")):
            cases += [(Add(k), dtype, draw), (Multiply(k), dtype, draw)]
    for k in (1.5, -2.25, Decimal("1.1"), 3):
        cases += [(Add(k), pa.float64(), "huge float"), (Multiply(k), pa.float64(), "float"), (Divide(k), pa.float64(), "float"),
                  (Divide(k), pa.int64(), "int64"), (Add(k), pa.int64(), "int64")]
    for k in (7, -7, 3_000_000, -3_000_000):
        cases.append((Add(k), pa.date32(), "date"))
    return cases


def _draw(kind: str, rng: random.Random) -> Callable[[], Any]:
    return {
        "int64": lambda: rng.choice([rng.randint(-(2**63), 2**63 - 1), rng.randint(-(2**31), 2**31), rng.randint(-100, 100)]),
        "int32": lambda: rng.choice([rng.randint(-(2**31), 2**31 - 1), rng.randint(-1000, 1000)]),
        "huge float": lambda: rng.uniform(-1e300, 1e300),
        "float": lambda: rng.uniform(-1e10, 1e10),
        "date": lambda: date.fromordinal(rng.randint(1, date.max.toordinal())),
    }[kind]


@pytest.mark.parametrize(("function", "dtype", "kind"), _cases(), ids=lambda v: str(v))
def test_vectorised_images_equal_file_by_file(function: Function, dtype: pa.DataType, kind: str) -> None:
    rng = random.Random(_RNG_SEED)
    lows, highs = _bounds(_draw(kind, rng), rng)
    images = image_all_arrays((function,), pa.array(lows, dtype), pa.array(highs, dtype), dtype)
    assert images is not None
    got = [None if low is None else (low, high) for low, high in zip(images[0].to_pylist(), images[1].to_pylist())]
    expected = [None if low is None else image_all((function,), low, high, dtype) for low, high in zip(lows, highs)]
    assert got == expected
    assert any(e is not None for e in expected)
