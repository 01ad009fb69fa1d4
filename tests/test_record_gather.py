"""A column's fields gathered at its records by the compiled calls
(`_cells.locate_fields`, `_cells.fill_fields`) against the Arrow path
(`record_gather.reference`): the same arrays on random decoded records
(present in every row, in a range, scattered or in none; text that is not
UTF-8 left to the Arrow path, which refuses it), and the runs of equal
names (`_cells.span_runs`) against numpy."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metadata.mdt import native, record_gather
from metadata.mdt.decoded import Decoded
from metadata.mdt.hfile_cells import PADDING
from metadata.mdt.record_gather import Field, PathField, RowText, Spans, Taken, gather, reference

compiled = pytest.mark.skipif(native.cells is None, reason="the compiled module was not built (no C compiler at install)")

TEXTS = st.one_of(st.text(max_size=12).map(lambda t: t.encode("utf-8")), st.binary(max_size=6))


@st.composite
def decoded_records(draw: st.DrawFn) -> tuple[Decoded, np.ndarray, Spans]:
    """Records with a text, a number, a float and a boolean path, each present in all, a range, some or none of them."""
    count = draw(st.integers(0, 40))
    texts = [draw(TEXTS) for _ in range(count)]
    buffer = b"".join(texts) + bytes(PADDING)
    lengths = np.array([len(t) for t in texts], dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64) if count else np.zeros(0, dtype=np.int64)

    def present() -> np.ndarray:
        shape = draw(st.sampled_from(["all", "range", "some", "none"]))
        if shape == "all":
            return np.arange(count, dtype=np.int64)
        if shape == "range":
            first = draw(st.integers(0, count))
            return np.arange(first, draw(st.integers(first, count)), dtype=np.int64)
        if shape == "some":
            return np.array(sorted(draw(st.sets(st.integers(0, max(count - 1, 0)), max_size=count))) if count else [], dtype=np.int64)
        return np.zeros(0, dtype=np.int64)

    decoded = Decoded(count, np.frombuffer(buffer, dtype=np.uint8))
    rows = present()
    decoded.present["text"], decoded.spans["text"] = rows, (starts[rows], lengths[rows])
    for path, table, values in (("long", decoded.ints, st.integers(-(2**63), 2**63 - 1)), ("double", decoded.floats, st.floats()),
                                ("flag", decoded.bools, st.booleans())):
        rows = present()
        decoded.present[path] = rows
        dtype = {"long": np.int64, "double": np.float64, "flag": np.bool_}[path]
        table[path] = np.array([draw(values) for _ in rows], dtype=dtype)
    chosen = np.array(sorted(draw(st.sets(st.integers(0, max(count - 1, 0)), max_size=count))) if count else [], dtype=np.int64)
    return decoded, chosen, Spans(decoded.buffer, starts, lengths)


FIELDS: list[Any] = [lambda spans: RowText(spans), lambda _: PathField("text", Taken.TEXT), lambda _: PathField("text", Taken.TEXT_OR_NULL),
                     lambda _: PathField("text", Taken.BINARY), *(lambda _, p=path: PathField(p, Taken.VALUES) for path in ("long", "double", "flag", "missing")),
                     lambda _: PathField("missing", Taken.TEXT)]


def _reference_or_refusal(decoded: Decoded, rows: np.ndarray, field: Field) -> pa.Array | None:
    try:
        return reference(decoded, rows, field)
    except pa.ArrowInvalid:  # not UTF-8
        return None


@compiled
@settings(max_examples=400)
@given(decoded_records(), st.lists(st.sampled_from(range(len(FIELDS))), min_size=1, max_size=5))
def test_the_compiled_gather_gives_what_arrow_gives_or_leaves_it(case: tuple[Decoded, np.ndarray, Spans], picked: list[int]) -> None:
    decoded, rows, spans = case
    fields = [FIELDS[i](spans) for i in picked]
    expected = [_reference_or_refusal(decoded, rows, field) for field in fields]
    got = record_gather._compiled(decoded, rows, fields)
    if any(e is None for e in expected):  # text that is not UTF-8: the compiled gather leaves it, and gather refuses it
        assert got is None
        with pytest.raises(pa.ArrowInvalid):
            gather(decoded, rows, fields)
        return
    assert got is not None
    for array, want in zip(got, expected):
        array.validate(full=True)
        assert array.type == want.type and array.null_count == want.null_count
        assert array.to_pylist() == want.to_pylist() or _same_floats(array, want)


def _same_floats(array: pa.Array, want: pa.Array) -> bool:
    """NaN compares unequal to itself: floats compared by their bits."""
    if not pa.types.is_floating(array.type):
        return False
    return bool(np.array_equal(array.to_numpy(zero_copy_only=False).view(np.int64), want.to_numpy(zero_copy_only=False).view(np.int64)))


@compiled
def test_positions_outside_a_field_are_refused() -> None:
    decoded = Decoded(3, np.zeros(16 + PADDING, dtype=np.uint8))
    decoded.present["long"], decoded.ints["long"] = np.arange(3, dtype=np.int64), np.arange(3, dtype=np.int64)
    with pytest.raises(ValueError, match="not ascending"):
        record_gather._compiled(decoded, np.array([2, 1], dtype=np.int64), [PathField("long", Taken.VALUES)])
    spans = Spans(decoded.buffer, np.array([0, 4], dtype=np.int64), np.array([4, 4], dtype=np.int64))
    with pytest.raises(ValueError, match="outside a field"):
        record_gather._compiled(decoded, np.array([0, 2], dtype=np.int64), [RowText(spans)])
    past = Spans(decoded.buffer, np.array([0, len(decoded.buffer)], dtype=np.int64), np.array([4, 4], dtype=np.int64))
    with pytest.raises(ValueError, match="outside its buffers"):
        record_gather._compiled(decoded, np.array([0, 1], dtype=np.int64), [RowText(past)])


@compiled
@settings(max_examples=300)
@given(st.lists(st.sampled_from([b"", b"a", b"b", b"ab", b"\xff"]), max_size=60))
def test_runs_of_equal_names_begin_where_numpy_finds_them(names: list[bytes]) -> None:
    assert native.cells is not None
    buffer = np.frombuffer(b"".join(names) + bytes(PADDING), dtype=np.uint8)
    lengths = np.array([len(n) for n in names], dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64) if names else np.zeros(0, dtype=np.int64)
    firsts = np.frombuffer(native.cells.span_runs(buffer, starts, lengths), dtype=np.int64)
    assert firsts.tolist() == [i for i in range(len(names)) if i == 0 or names[i] != names[i - 1]]
    if names:
        with pytest.raises(ValueError, match="past their buffer"):
            native.cells.span_runs(buffer, starts + len(buffer), lengths + 1)


@compiled
def test_text_that_is_not_utf8_is_left_to_arrow_which_refuses_it() -> None:
    names = [b"ok", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xc0\xaf"]  # a surrogate, past U+10FFFF, an overlong "/"
    buffer = np.frombuffer(b"".join(names) + bytes(PADDING), dtype=np.uint8)
    lengths = np.array([len(n) for n in names], dtype=np.int64)
    spans = Spans(buffer, np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64), lengths)
    decoded = Decoded(len(names), buffer)
    assert record_gather._compiled(decoded, np.array([0], dtype=np.int64), [RowText(spans)]) is not None
    for bad in (1, 2, 3):
        rows = np.array([0, bad], dtype=np.int64)
        assert record_gather._compiled(decoded, rows, [RowText(spans)]) is None
        with pytest.raises(pa.ArrowInvalid):
            gather(decoded, rows, [RowText(spans)])
