"""The columnar metadata-record decoder against the per-record reference:
random column_stats records of every statistic type and table version, and
every fixture's and a builder table's metadata table."""

from __future__ import annotations

from datetime import date, datetime, time, timezone
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from metadata import HudiTable
from metadata.formats.stats_table import max_field, min_field
from metadata.mdt.columnar import GROUP_RECORDS, LOCKSTEP_ENTRIES, decode_many
from metadata.mdt.decoded import Decoded, Unsupported
from metadata.mdt.file_stats import ColumnRange
from metadata.mdt.files_columns import entries_of_sizes, live_entries
from metadata.mdt.keys import ID_LENGTH, column_stats_key
from metadata.mdt.record_builders import files_record, range_record
from metadata.mdt.record_encoding import encode_record
from metadata.mdt.record_gather import Spans
from metadata.mdt.record_schema import record_schema_json
from metadata.mdt.records import decode_record, live_files, live_sizes, parse_schema_cached
from metadata.mdt.stats_columns import FlatStats, _records_by_column, in_file_order
from metadata.mdt.stats_pivot import pivot
from tests.conftest import requires_fixtures, table_path
from tests.test_metadata_table import MDT_FIXTURES

TYPES: dict[str, tuple[pa.DataType, st.SearchStrategy[Any]]] = {
    "bool": (pa.bool_(), st.booleans()),
    "int32": (pa.int32(), st.integers(-(2**31), 2**31 - 1)),
    "int64": (pa.int64(), st.integers(-(2**63), 2**63 - 1)),
    "float32": (pa.float32(), st.floats(width=32, allow_nan=False)),
    "float64": (pa.float64(), st.floats(allow_nan=False)),
    "string": (pa.string(), st.text(max_size=20)),
    "binary": (pa.binary(), st.binary(max_size=20)),
    "date": (pa.date32(), st.dates(date(1900, 1, 1), date(2200, 1, 1))),
    "timestamp": (pa.timestamp("us", tz="UTC"), st.datetimes(datetime(1900, 1, 1), datetime(2200, 1, 1), timezones=st.just(timezone.utc))),
    "time": (pa.time64("us"), st.times()),
    "decimal": (pa.decimal128(12, 3), st.decimals(-(10**8), 10**8, places=3, allow_nan=False, allow_infinity=False)),
}


@st.composite
def stats_records(draw: st.DrawFn) -> tuple[int, list[tuple[str, dict[str, Any]]]]:
    version = draw(st.sampled_from([6, 8, 9]))
    records = []
    for n in range(draw(st.integers(1, 25))):
        kind = draw(st.sampled_from(sorted(TYPES)))
        dtype, values = TYPES[kind]
        low = draw(st.none() | values)
        high = draw(values) if low is not None else None
        stats = ColumnRange(f"file-{n}.parquet", f"c_{kind}", dtype, low, high, draw(st.integers(0, 10**6)), draw(st.integers(0, 10**9)),
                            draw(st.integers(0, 10**9)), 0)
        key = column_stats_key(stats.column, f"p={n % 3}", stats.file_name)
        records.append((key, range_record(key, stats, version, partition_stats=draw(st.booleans()), deleted=draw(st.booleans()))))
    return version, records


COLUMN_TYPES = {f"c_{kind}": dtype for kind, (dtype, _) in TYPES.items()}
PARTITIONS = ["p=0", "p=1", "p=2"]


def key_spans(keys: list[str]) -> Spans:
    """The keys past their column id, as spans of one buffer (as a chunk of cells holds them)."""
    encoded = [k.encode("utf-8") for k in keys]
    lengths = np.array([len(k) for k in encoded], dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    return Spans(np.frombuffer(b"".join(encoded) + bytes(16), dtype=np.uint8), starts + ID_LENGTH, lengths - ID_LENGTH)


def _both(version: int, records: list[tuple[str, dict[str, Any]]], types: dict[str, pa.DataType] = COLUMN_TYPES,
          partitions: list[str] = PARTITIONS) -> tuple[pa.Table, pa.Table]:
    """The stats tables the columnar path and the per-record reference make of the records."""
    schema_json = record_schema_json(version)
    keys = [k for k, _ in records]
    values = [encode_record(r, schema_json) for _, r in records]
    columnar, reference = FlatStats(types), FlatStats(types)
    try:
        columnar.add_decoded(key_spans(keys), decode_many(values, parse_schema_cached(schema_json)))
    except Unsupported:
        for key, value in zip(keys, values):
            columnar.add_record(key, decode_record(key, value, schema_json, "test"))
    for key, value in zip(keys, values):
        reference.add_record(key, decode_record(key, value, schema_json, "test"))
    columns = sorted(types)
    tables = [pivot(flat, columns, partitions, True, types) for flat in (columnar, reference)]
    assert tables[0] is not None and tables[1] is not None
    return in_file_order(tables[0]), in_file_order(tables[1])


@pytest.mark.parametrize("compiled", [True, False], ids=["compiled", "numpy"])
@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(stats_records(), st.sampled_from([1, 2, 7, GROUP_RECORDS]))
def test_columnar_equals_reference_on_random_stats_records(compiled: bool, case: tuple[int, list[tuple[str, dict[str, Any]]]],
                                                           group: int) -> None:
    with pytest.MonkeyPatch.context() as patch:  # records decoded in groups of this many (numpy), or compiled
        patch.setattr("metadata.mdt.columnar.GROUP_RECORDS", group)
        if not compiled:
            for module in ("columnar", "record_gather", "stats_columns"):
                patch.setattr(f"metadata.mdt.{module}._native", None)
        columnar, reference = _both(*case)
    assert columnar.equals(reference), (columnar.to_pylist(), reference.to_pylist())


def test_every_statistic_type_is_decoded_to_its_value() -> None:
    samples = {"decimal": Decimal("-12.345"), "time": time(1, 2, 3, 4), "date": date(2024, 2, 29),
               "timestamp": datetime(2024, 1, 1, 5, tzinfo=timezone.utc), "float32": 1.5, "binary": b"\x00\xff",
               "int64": -(2**40), "string": "é", "bool": True}
    types = {kind: TYPES[kind][0] for kind in samples}
    for version in (6, 8, 9):
        records = []
        for kind, value in samples.items():
            stats = ColumnRange("f.parquet", kind, TYPES[kind][0], value, value, 0, 1)
            key = column_stats_key(kind, "p=0", "f.parquet")
            records.append((key, range_record(key, stats, version)))
        columnar, reference = _both(version, records, types)
        assert columnar.equals(reference)
        row = columnar.to_pylist()[0]
        assert {kind: row[min_field(kind)] for kind in samples} == samples, version


def test_bounds_that_do_not_fit_the_column_type_are_missing_both_ways() -> None:
    """An int64 bound in an int32 column: the reference nulls it (no statistics), so must the columnar path."""
    types = {"c": pa.int32()}
    records = []
    for n, (low, high) in enumerate([(1, 2), (-(2**40), 5), (3, 2**35)]):
        stats = ColumnRange(f"f{n}.parquet", "c", pa.int64(), low, high, 0, 1)
        key = column_stats_key("c", "p=0", stats.file_name)
        records.append((key, range_record(key, stats, 9)))
    columnar, reference = _both(9, records, types)
    assert columnar.equals(reference)
    assert columnar.column(min_field("c")).to_pylist() == [1, None, 3]
    assert columnar.column(max_field("c")).to_pylist() == [2, 5, None]


def test_records_with_long_maps_are_left_to_the_reference_by_numpy() -> None:
    """The numpy decoder leaves long maps to the reference (the compiled one reads them: tests/test_compiled_cells.py)."""
    schema_json = record_schema_json(9)
    values = [encode_record(files_record("p", {f"{n}.parquet": (10, False) for n in range(LOCKSTEP_ENTRIES + 1)}), schema_json)]
    with pytest.MonkeyPatch.context() as patch, pytest.raises(Unsupported):
        patch.setattr("metadata.mdt.columnar._native", None)
        decode_many(values, parse_schema_cached(schema_json))
    stats = ColumnRange("f.parquet", "c", pa.string(), "abc", "abd", 0, 1)
    value = encode_record(range_record("k", stats, 9), schema_json)
    with pytest.raises(ValueError, match="runs past|does not end"):
        decode_many([value[:-6]], parse_schema_cached(schema_json))


def _stats_both_ways(path: str) -> int:
    table = HudiTable.open(path)
    mdt = table.metadata_table
    assert mdt is not None
    columns = sorted(c for c in mdt.column_types() if "." not in c)
    compared = 0
    for kind in ("column_stats", "partition_stats"):
        if kind not in table.config.metadata_partitions:
            continue
        results = []
        for columnar in (True, False):
            mdt.columnar = columnar
            mdt.stats_cache.clear()
            results.append(getattr(mdt, kind)(columns))
        assert results[0].equals(results[1]), (path, kind)
        compared += results[0].num_rows
    return compared


@requires_fixtures
@pytest.mark.parametrize("stem", MDT_FIXTURES)
def test_columnar_equals_reference_on_fixture_tables(fixture_root: Path, stem: str) -> None:
    assert _stats_both_ways(table_path(fixture_root, stem)) > 0


def test_columnar_equals_reference_with_log_updates_and_deletes(tmp_path: Path) -> None:
    from metadata.mdt.write.writer import MetadataTableWriter
    from tests.test_index_writer import _builder, _rows

    path = tmp_path / "t"
    for version in (6, 8):
        builder = _builder(path / str(version), version, "MERGE_ON_READ")
        builder.write(_rows(0, 9, "sf"))
        MetadataTableWriter(str(path / str(version))).build()
        builder.write(_rows(2, 4, "sf"))  # log files: their stats records sit in MDT log blocks
        builder.write(_rows(20, 3, "nyc"))
        builder.clean()
        MetadataTableWriter(str(path / str(version)), compact_after=100).sync()
        assert _stats_both_ways(str(path / str(version))) > 0


@pytest.mark.parametrize("columnar", [True, False])
def test_stats_values_that_do_not_decode_name_the_hfile(tmp_path: Path, columnar: bool) -> None:
    from metadata.errors import HudiFormatError
    from metadata.mdt.hfile_reader import HFileReader
    from metadata.mdt.write.hfile_writer import HFileWriter
    from metadata.mdt.write.writer import MetadataTableWriter
    from tests.test_index_writer import _builder, _rows

    path = tmp_path / "t"
    _builder(path, 8, "COPY_ON_WRITE").write(_rows(0, 9, "sf"))
    MetadataTableWriter(str(path)).build(columns=["fare"])
    for base in (path / ".hoodie/metadata/column_stats").glob("*.hfile"):
        reader = HFileReader.from_bytes(base.read_bytes(), str(base))
        cells = list(reader.scan_prefixes([b""]))
        writer = HFileWriter()
        writer.add_all((row, value[:-5]) for row, value in cells)  # every record cut short
        base.write_bytes(writer.finish({b"schema": (reader.schema_json() or "").encode()}))
    mdt = HudiTable.open(str(path)).metadata_table
    assert mdt is not None
    mdt.columnar = columnar
    with pytest.raises(HudiFormatError, match=r"column_stats/col-stats-.*\.hfile"):
        mdt.column_stats(["fare"])


# Files records ---------------------------------------------------------------------------------
@st.composite
def files_records(draw: st.DrawFn) -> tuple[int, list[tuple[str, dict[str, Any]]]]:
    """Random files (and __all_partitions__) records, maps of 0 to 30 entries, some tombstones."""
    version = draw(st.sampled_from([6, 8, 9]))
    records = []
    for n in range(draw(st.integers(1, 12))):
        entries = draw(st.dictionaries(st.text(alphabet="abé_.0", min_size=1, max_size=8),
                                       st.tuples(st.integers(0, 2**40), st.booleans()), max_size=30))
        records.append((f"p={n}", files_record(f"p={n}", entries, all_partitions=draw(st.booleans()))))
    return version, records


@pytest.mark.parametrize("compiled", [True, False], ids=["compiled", "numpy"])
@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(files_records(), st.sampled_from([1, 2, 7, GROUP_RECORDS]))
def test_columnar_files_equal_reference_on_random_records(compiled: bool, case: tuple[int, list[tuple[str, dict[str, Any]]]],
                                                          group: int) -> None:
    version, records = case
    schema_json = record_schema_json(version)
    keys_ = [k for k, _ in records]
    values = [encode_record(r, schema_json) for _, r in records]
    with pytest.MonkeyPatch.context() as patch:  # records (and their map entries) decoded in groups of this many (numpy), or compiled
        patch.setattr("metadata.mdt.columnar.GROUP_RECORDS", group)
        if not compiled:
            patch.setattr("metadata.mdt.columnar._native", None)
        columnar = live_entries(pa.array(keys_, pa.string()), decode_many(values, parse_schema_cached(schema_json)))
    reference = entries_of_sizes({k: live_files(decode_record(k, v, schema_json, "test")) for k, v in zip(keys_, values)})
    assert columnar.equals(reference)
    assert entries_of_sizes({k: live_sizes(k, v, schema_json, "test") for k, v in zip(keys_, values)}).equals(reference)


def _file_tables_both_ways(path: str) -> int:
    """The files partition read columnar (every chunk, however small) and one record at a time give one table."""
    table = HudiTable.open(path)
    mdt = table.metadata_table
    assert mdt is not None
    partitions = mdt.partitions()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("metadata.mdt.metadata_table.COLUMNAR_RECORDS", 0)
        columnar = mdt.file_table(partitions)
        patch.setattr("metadata.mdt.metadata_table.COLUMNAR_RECORDS", 10**9)
        reference = mdt.file_table(partitions)
    assert columnar.equals(reference), path
    assert mdt.files_for(partitions) == {p: live_files(r) for p, r in _reference_files(mdt, partitions).items()}
    return columnar.num_rows


def _reference_files(mdt: Any, partitions: list[str]) -> dict[str, Any]:
    from metadata.mdt.key_query import KeyQuery
    from metadata.table.partition_path import to_metadata_partition

    records = mdt.reader.read("files", KeyQuery(keys=[to_metadata_partition(p) for p in partitions]))
    return {p: records.get(to_metadata_partition(p)) for p in partitions}


@requires_fixtures
@pytest.mark.parametrize("stem", MDT_FIXTURES)
def test_columnar_files_equal_reference_on_fixture_tables(fixture_root: Path, stem: str) -> None:
    assert _file_tables_both_ways(table_path(fixture_root, stem)) > 0


def test_columnar_files_equal_reference_with_log_updates_and_deletes(tmp_path: Path) -> None:
    from metadata.mdt.write.writer import MetadataTableWriter
    from tests.test_index_writer import _builder, _rows

    for version in (6, 8):
        path = tmp_path / str(version)
        builder = _builder(path, version, "MERGE_ON_READ")
        for n in range(6):
            builder.write(_rows(n * 10, 9, f"city{n % 3}"))
        MetadataTableWriter(str(path)).build()
        builder.write(_rows(2, 4, "city0"))  # log files: files records in MDT log blocks
        builder.clean()
        MetadataTableWriter(str(path), compact_after=100).sync()
        assert _file_tables_both_ways(str(path)) > 0


@settings(max_examples=200, deadline=None)
@given(names=st.lists(st.one_of(st.none(), st.sampled_from(["a", "b", "fare", "é", "x" * 40, "x" * 41, ""])), min_size=1, max_size=300),
       runs=st.booleans(), with_stats=st.integers(0, 3))
def test_records_by_column_group_as_their_names_say(names: list[str | None], runs: bool, with_stats: int) -> None:
    """Each column's records, found by comparing names in place (short names, few runs) or by Arrow (long names,
    many runs), are the records whose name it is; a missing name is ""; records without stats are not counted."""
    if runs:
        names = sorted(names, key=lambda n: (n is None, n or ""))  # keys sort by column id: a column is one run
    encoded = [b"" if n is None else n.encode() for n in names]
    buffer = np.frombuffer(b"".join(encoded) + bytes(16), dtype=np.uint8)
    lengths = np.array([len(e) for e in encoded], dtype=np.int64)
    starts = np.cumsum(lengths) - lengths
    named = np.array([n is not None for n in names])
    decoded = Decoded(len(names), buffer, present={"name": np.flatnonzero(named)},
                      spans={"name": (starts[named], lengths[named])})
    records = np.array([i for i in range(len(names)) if i % 4 >= with_stats or i == 0], dtype=np.int64)  # those with stats
    expected: dict[str, list[int]] = {}
    for i in records.tolist():
        expected.setdefault(names[i] or "", []).append(i)
    found = _records_by_column(decoded, "name", records)
    assert [(column, chosen.tolist()) for column, chosen in found] == list(expected.items())


@settings(max_examples=200, deadline=None)
@given(present=st.lists(st.booleans(), min_size=1, max_size=60), picked=st.lists(st.booleans(), min_size=60, max_size=60))
def test_values_at_records_equal_spreading_then_taking(present: list[bool], picked: list[bool]) -> None:
    """A path's values and bytes at some records (null where absent) are what spreading them over every record and
    taking those gives, with the path present in every record, some or none."""
    count = len(present)
    rows = np.flatnonzero(present)
    texts = [f"v{i}".encode() * (i % 3) for i in rows.tolist()]
    lengths = np.array([len(t) for t in texts], dtype=np.int64)
    decoded = Decoded(count, np.frombuffer(b"".join(texts) + bytes(16), dtype=np.uint8),
                      present={"n": rows, "s": rows}, ints={"n": rows * 7}, spans={"s": (np.cumsum(lengths) - lengths, lengths)})
    records = np.flatnonzero(picked[:count])
    taken = pa.array(records, pa.int64())
    assert decoded.values_at("n", records).to_pylist() == decoded.scatter("n", pa.array(rows * 7, pa.int64())).take(taken).to_pylist()
    assert decoded.binary_at("s", records).to_pylist() == decoded.binary_array("s").take(taken).to_pylist()


@settings(max_examples=200, deadline=None)
@given(count=st.integers(1, 60), span=st.tuples(st.integers(0, 60), st.integers(0, 60)),
       picked=st.lists(st.booleans(), min_size=60, max_size=60))
def test_values_at_a_path_present_in_one_range_of_records(count: int, span: tuple[int, int], picked: list[bool]) -> None:
    """A path present in one unbroken range of records (a union branch of one column's records), located without a
    search: the records asked for inside it, around it or both."""
    first, stop = min(span[0], count), min(max(span), count)
    rows = np.arange(first, stop, dtype=np.int64)
    decoded = Decoded(count, np.zeros(16, dtype=np.uint8), present={"n": rows}, ints={"n": rows * 7})
    records = np.flatnonzero(picked[:count])
    expected = [r * 7 if first <= r < stop else None for r in records.tolist()]
    assert decoded.values_at("n", records).to_pylist() == expected
