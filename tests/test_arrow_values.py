"""metadata.util.arrow_values builds what pyarrow's own conversion builds, and
refuses what it refuses, for the types the cold paths meet."""

from __future__ import annotations

import datetime
from decimal import Decimal
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metadata.util import arrow_values
from metadata.util.arrow_values import kept_rows

CASES: list[tuple[list[Any], pa.DataType]] = [
    ([1, None, -3, 2**62], pa.int64()),
    ([1, None, 7], pa.int32()),
    ([0, 255], pa.uint8()),
    ([1.5, None, float("inf"), -0.0, 1e-300], pa.float64()),
    ([1, 2.5], pa.float32()),
    ([True, None, False], pa.bool_()),
    (["a", None, "é", ""], pa.string()),
    (["x", None], pa.large_string()),
    ([b"\x00\x01", b""], pa.binary()),
    ([datetime.date(2024, 2, 29), None], pa.date32()),
    ([datetime.datetime(2024, 1, 2, 3, 4, 5, 6), None], pa.timestamp("us")),
    ([datetime.datetime(2024, 1, 2, 3, 4, 5), None], pa.timestamp("ms")),
    ([Decimal("1.25"), Decimal("-0.10"), None], pa.decimal128(10, 2)),
    ([None, None], pa.null()),
    ([], pa.int64()),
]


@pytest.mark.parametrize("values,kind", CASES, ids=[str(k) for _, k in CASES])
def test_arrays_and_scalars_equal_pyarrows_own(values: list[Any], kind: pa.DataType) -> None:
    ours = arrow_values.array(values, kind)
    assert ours.type == kind and ours.equals(pa.array(values, kind)), (ours, pa.array(values, kind))
    assert arrow_values.array(iter(values), kind).equals(ours)
    for value in values:
        assert arrow_values.scalar(value, kind).equals(pa.scalar(value, kind))


@pytest.mark.parametrize("values,kind", [([2**40], pa.int32()), ([1], pa.string()), (["2024-01-01"], pa.date32()), (["1"], pa.int64())])
def test_what_pyarrow_refuses_is_refused(values: list[Any], kind: pa.DataType) -> None:
    with pytest.raises((pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError)):
        pa.array(values, kind)
    with pytest.raises((pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError)):
        arrow_values.array(values, kind)


@pytest.mark.parametrize("values,kind", [([1.5], pa.int64()), ([True], pa.float64()), ([1], pa.decimal128(5, 1))])
def test_what_pyarrow_converts_leniently_converts_the_same(values: list[Any], kind: pa.DataType) -> None:
    assert arrow_values.array(values, kind).equals(pa.array(values, kind))


def test_numpy_round_trips_and_narrowing_is_checked() -> None:
    valid = np.array([True, False, True])
    built = arrow_values.from_numpy(np.array([1, 2, 3], np.int64), valid)
    assert built.to_pylist() == [1, None, 3]
    assert arrow_values.to_numpy(built, null=-1).tolist() == [1, -1, 3]
    assert arrow_values.to_numpy(pa.chunked_array([pa.array([True, None]), pa.array([False])])).tolist() == [True, False, False]
    assert np.isnan(arrow_values.to_numpy(pa.array([1.0, None]))[1])
    assert arrow_values.to_numpy(pa.array([1, 2, 3]).slice(1)).tolist() == [2, 3]
    with pytest.raises(pa.ArrowInvalid):
        arrow_values.array(np.array([1.5]), pa.int64())
    with pytest.raises(ValueError, match="needs a value"):
        arrow_values.to_numpy(pa.array([1, None]))


@settings(max_examples=200, deadline=None)
@given(keep=st.lists(st.booleans(), max_size=80), chunk=st.integers(1, 30))
def test_kept_rows_equal_a_filter(keep: list[bool], chunk: int) -> None:
    """Slices (few runs of kept rows) or a filter (many): the rows, in order, that `Table.filter` keeps."""
    count = len(keep)
    names = [f"file-{i}" for i in range(count)]
    table = pa.Table.from_batches([pa.record_batch({"name": names[i : i + chunk], "n": list(range(i, min(count, i + chunk)))})
                                   for i in range(0, count, chunk)], schema=pa.schema({"name": pa.string(), "n": pa.int64()}))
    mask = np.array(keep, dtype=np.bool_)
    kept = kept_rows(table, mask)
    assert kept.schema == table.schema
    assert kept.to_pydict() == table.filter(pa.array(mask, pa.bool_())).to_pydict()
