"""The compiled cell walker and record decoder (`metadata/mdt/_cells.c`)
against their Python references: `walk_cells_in_python` for the walk, the
numpy decoder (`decode_spans_with_numpy`) for the records. Random blocks and
records, every fixture's metadata table, and damaged bytes, which both must
refuse with the same message."""

from __future__ import annotations

import json
import shutil
import struct
import sysconfig
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from metadata import HudiTable
from metadata.errors import HudiFormatError
from metadata.mdt import columnar, hfile_cells
from metadata.mdt.columnar import decode_many, decode_spans, decode_spans_with_numpy
from metadata.mdt.decoded import Decoded, Unsupported
from metadata.mdt.files_columns import entries_of_sizes, live_entries
from metadata.mdt.hfile_cells import PADDING, walk_cells, walk_cells_in_python
from metadata.mdt.hfile_format import block_checksums
from metadata.mdt.key_query import KeyQuery
from metadata.mdt.record_builders import files_record
from metadata.mdt.record_encoding import encode_record
from metadata.mdt.record_program import NotCompiled, compile_schema
from metadata.mdt.record_schema import record_schema_json
from metadata.mdt.records import decode_record, live_files, parse_schema_cached
from tests.conftest import requires_fixtures, table_path
from tests.test_columnar_decode import files_records, stats_records
from tests.test_metadata_table import MDT_FIXTURES

compiled = pytest.mark.skipif(columnar._native is None, reason="the compiled module was not built (no C compiler at install)")


def test_the_compiled_module_is_built_where_a_c_compiler_is() -> None:
    """Installed where a C compiler is (CI included), the compiled walk and decoder are there: their tests below run."""
    if shutil.which(sysconfig.get_config_var("CC").split()[0] if sysconfig.get_config_var("CC") else "cc") is None:
        pytest.skip("no C compiler here: the install leaves the compiled module out, and the Python walk and numpy decoder run")
    assert hfile_cells._native is not None and columnar._native is not None


# The cell walk ---------------------------------------------------------------------------------
def _cell(key: bytes, value: bytes, tail: int) -> bytes:
    return struct.pack(">ii", len(key), len(value)) + key + value + b"\x00" * tail


@compiled
@settings(max_examples=300)
@given(st.lists(st.tuples(st.binary(min_size=2, max_size=30), st.binary(max_size=40)), max_size=40), st.sampled_from([0, 1, 2]),
       st.sampled_from([0, 1, 2]), st.binary(max_size=12), st.integers(0, 2**31 - 1))
def test_compiled_walk_equals_the_python_walk(cells: list[tuple[bytes, bytes]], tail: int, walked_with: int, garbage: bytes,
                                              seed: int) -> None:
    """Blocks of cells with `tail` bytes after each value, walked assuming `walked_with` (a wrong guess must give None
    both ways), some with garbage after them or a byte flipped."""
    block = b"".join(_cell(k, v, tail) for k, v in cells)
    rng = np.random.default_rng(seed)
    damaged = bytearray(block)
    if damaged:
        damaged[int(rng.integers(len(damaged)))] ^= int(rng.integers(1, 256))
    for payload in (block, block + garbage, bytes(damaged)):
        python = walk_cells_in_python(payload, walked_with)
        native = walk_cells(payload, walked_with)
        assert (native is None) == (python is None)
        if native is not None:
            assert native[:, 0].tolist() == python
            # each value starts after its cell's two lengths and its key
            assert native[:, 1].tolist() == [start + 8 + struct.unpack_from(">i", payload, start)[0] for start in python]
    if walked_with == tail:
        starts = walk_cells(block, tail)
        assert starts is not None and len(starts) == len(cells)


@compiled
def test_compiled_walk_refuses_lengths_that_cannot_be() -> None:
    assert walk_cells(struct.pack(">ii", 1, 0) + b"k", 0) is None  # a key shorter than its row length
    assert walk_cells(struct.pack(">ii", 2, -1) + b"kk", 0) is None
    assert walk_cells(struct.pack(">ii", 2**31 - 1, 2**31 - 1) + b"kk", 1) is None  # runs far past the block
    assert walk_cells(b"", 0) is not None and len(walk_cells(b"", 0)) == 0  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        hfile_cells._native.walk_cells(b"", -1)  # type: ignore[union-attr]


# The span gather ---------------------------------------------------------------------------------
def _binary_or_refusal(call: Any, *args: Any) -> Any:
    try:
        return call(*args).to_pylist()
    except ValueError as exc:
        return f"ValueError: {exc}"


@compiled
@settings(max_examples=300, deadline=None)
@given(data=st.binary(max_size=60), spans=st.lists(st.tuples(st.integers(-2, 64), st.integers(-1, 12)), max_size=12),
       in_order=st.booleans(), release=st.booleans())
def test_compiled_gather_equals_the_arrow_spans(data: bytes, spans: list[tuple[int, int]], in_order: bool, release: bool) -> None:
    """Spans in buffer order (gathered in one pass) or not (the general path), overlapping, empty, or running outside the
    buffer: the same binary array or the same refusal as numpy and Arrow give."""
    if in_order:
        spans = sorted(spans)
    buffer = np.frombuffer(data + bytes(PADDING), dtype=np.uint8)
    starts = np.array([s for s, _ in spans], dtype=np.int64)
    lengths = np.array([n for _, n in spans], dtype=np.int64)
    expected = _binary_or_refusal(hfile_cells.spans_to_binary_with_arrow, buffer, starts, lengths) if spans else []
    assert _binary_or_refusal(hfile_cells.spans_to_binary, buffer, starts, lengths) == expected
    if spans and not isinstance(expected, str):
        offsets, copied = bytearray(4 * (len(spans) + 1)), bytearray(int(lengths.sum()))
        if hfile_cells._native.gather_spans(buffer, starts, lengths, offsets, copied, release):  # type: ignore[union-attr]
            assert np.frombuffer(offsets, dtype=np.int32).tolist() == np.concatenate([[0], np.cumsum(lengths)]).tolist()
            assert bytes(copied) == b"".join(bytes(buffer[s : s + n]) for s, n in spans)
        else:
            assert (np.diff(starts) < 0).any()  # only spans out of buffer order are left to the general path


# The record decoder ----------------------------------------------------------------------------
def _canonical(decoded: Decoded) -> dict[str, Any]:
    """A decoding with map and array entries named by (their record, their place in it), not by their numbering
    (which the decoders choose differently), every path's values listed by those names."""
    names: dict[str, list[tuple[int, ...]]] = {"": [(r,) for r in range(decoded.count)]}
    for space in sorted(decoded.entries, key=lambda s: s.count("{}")):
        parent = space[: space[:-2].rfind("{}") + 2] if "{}" in space[:-2] else ""
        owners = decoded.owners.get(space, np.zeros(0, dtype=np.int64))
        rows = decoded.present.get(space, np.zeros(0, dtype=np.int64))
        named = [()] * decoded.entries[space]
        ordinal: dict[int, int] = {}
        for row, owner in sorted(zip(rows.tolist(), owners.tolist())):
            named[row] = (*names[parent][owner], ordinal.setdefault(owner, 0))
            ordinal[owner] += 1
        names[space] = named
    out: dict[str, Any] = {"count": decoded.count, "entries": dict(decoded.entries)}
    buffer = decoded.buffer.tobytes()
    for path, rows in decoded.present.items():
        space = path[: path.rfind("{}") + 2] if "{}" in path else ""
        if path in decoded.spans:
            starts, lengths = decoded.spans[path]
            values: list[Any] = [buffer[s : s + n] for s, n in zip(starts.tolist(), lengths.tolist())]
        elif path in decoded.owners:
            values = [names[path[: path[:-2].rfind("{}") + 2] if "{}" in path[:-2] else ""][o] for o in decoded.owners[path].tolist()]
        else:
            values = (decoded.ints.get(path) if path in decoded.ints else
                      decoded.bools.get(path) if path in decoded.bools else decoded.floats[path]).tolist()  # type: ignore[union-attr]
        out[path] = sorted(zip((names[space if path not in decoded.owners else path][r] for r in rows.tolist()), values), key=repr)
    return out


def _buffer(values: list[bytes]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    lengths = np.array([len(v) for v in values], dtype=np.int64)
    starts = np.cumsum(lengths) - lengths
    return np.frombuffer(b"".join([*values, bytes(PADDING)]), dtype=np.uint8), starts, lengths


def _both(values: list[bytes], schema_json: str) -> tuple[Any, Any]:
    """What each decoder makes of the records: its canonical decoding, or the error it raised."""
    parsed = parse_schema_cached(schema_json)
    results = []
    for decode in (decode_spans, decode_spans_with_numpy):
        try:
            results.append(_canonical(decode(*_buffer(values), parsed)))
        except (ValueError, Unsupported) as exc:
            results.append((type(exc).__name__, str(exc)))
    return results[0], results[1]


@compiled
@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(stats_records() | files_records())
def test_compiled_decoder_equals_numpy_on_random_records(case: tuple[int, list[tuple[str, dict[str, Any]]]]) -> None:
    version, records = case
    schema_json = record_schema_json(version)
    native, numpy_ = _both([encode_record(r, schema_json) for _, r in records], schema_json)
    assert isinstance(native, dict) and native == numpy_


@compiled
@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(stats_records() | files_records(), st.data())
def test_compiled_decoder_refuses_damaged_records_as_numpy_does(case: tuple[int, list[tuple[str, dict[str, Any]]]],
                                                                 data: st.DataObject) -> None:
    """Records cut short, grown by a byte or with a byte changed: the same decoding or the same refusal."""
    version, records = case
    schema_json = record_schema_json(version)
    values = [encode_record(r, schema_json) for _, r in records]
    n = data.draw(st.integers(0, len(values) - 1))
    value = bytearray(values[n])
    how = data.draw(st.sampled_from(["cut", "grow", "flip"]))
    at = data.draw(st.integers(0, len(value) - 1))
    if how == "cut":
        del value[at:]
    elif how == "grow":
        value.insert(at, data.draw(st.integers(0, 255)))
    else:
        value[at] ^= data.draw(st.integers(1, 255))
    values[n] = bytes(value)
    native, numpy_ = _both(values, schema_json)
    if isinstance(numpy_, tuple) and numpy_[0] == "Unsupported":
        return  # numpy leaves it to the reference (a long map); the compiled decoder may read it (checked below)
    assert native == numpy_


@compiled
@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(stats_records() | files_records(), st.data())
def test_compiled_decoder_keeps_the_paths_read_as_numpy_decodes_them(case: tuple[int, list[tuple[str, dict[str, Any]]]],
                                                                     data: st.DataObject) -> None:
    """With the paths a caller reads (`read`), the others are stepped over, not kept: the paths read come out as the
    numpy decoder makes them, the others not at all, and a map's entries are still numbered."""
    version, records = case
    schema_json = record_schema_json(version)
    parsed = parse_schema_cached(schema_json)
    values = [encode_record(r, schema_json) for _, r in records]
    whole = _canonical(decode_spans_with_numpy(*_buffer(values), parsed))
    paths = sorted(p for p in whole if p not in ("count", "entries"))
    prefixes = sorted({*paths, *(p.split("|")[0].split(".")[0] for p in paths)})
    read = tuple(data.draw(st.lists(st.sampled_from(prefixes), min_size=1, max_size=4, unique=True)))
    native = _canonical(decode_spans(*_buffer(values), parsed, read))
    kept = {p for p in paths if p.startswith(read) or p.endswith("{}")}
    assert {p for p in native if p not in ("count", "entries")} == kept, read
    assert all(native[p] == whole[p] for p in kept), read
    assert native["count"] == whole["count"] and native["entries"] == whole["entries"]


@compiled
def test_compiled_decoder_reads_the_long_maps_numpy_leaves_to_the_reference() -> None:
    schema_json = record_schema_json(9)
    entries = {f"{n}.parquet": (10 + n, n % 7 == 0) for n in range(columnar.LOCKSTEP_ENTRIES + 1)}
    values = [encode_record(files_record("p", entries), schema_json)]
    with pytest.raises(Unsupported):
        decode_spans_with_numpy(*_buffer(values), parse_schema_cached(schema_json))
    found = live_entries(pa.array(["p"], pa.string()), decode_many(values, parse_schema_cached(schema_json)))
    assert found.equals(entries_of_sizes({"p": live_files(decode_record("p", values[0], schema_json, "test"))}))
    assert found.num_rows == len(entries) - len(range(0, len(entries), 7))


@compiled
def test_a_map_claiming_more_entries_than_its_bytes_is_left_to_numpy() -> None:
    """A count no record could hold (2**40 entries in a few bytes) does not make the compiled decoder loop or allocate."""
    schema = parse_schema_cached('{"type": "record", "name": "R", "fields": [{"name": "m", "type": {"type": "array", "items": "null"}}]}')
    value = bytes([0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x40, 0])  # zigzag varint of 2**40, then the end of the array
    with pytest.raises(Unsupported):
        decode_spans(*_buffer([value]), schema)
    lowest = bytes([0xFF] * 9 + [0x01])  # a count of -2**63, which has no positive: both decoders give numpy's answer
    schema_json = '{"type": "record", "name": "R", "fields": [{"name": "m", "type": {"type": "array", "items": "null"}}]}'
    native, numpy_ = _both([lowest + b"\x00"], schema_json)
    assert native == numpy_


@compiled
def test_a_schema_nested_deeper_than_the_flat_layout_is_decoded_by_numpy() -> None:
    """The compiled decoder lays its program out flat up to a depth (`FLAT_DEPTH`, 64); deeper, it leaves the records
    to the numpy decoder rather than refusing them."""
    schema: dict[str, Any] = {"type": "record", "name": "R70", "fields": [{"name": "v", "type": ["null", "long"]}]}
    for depth in range(69, -1, -1):
        schema = {"type": "record", "name": f"R{depth}", "fields": [{"name": "f", "type": schema}]}
    schema_json = json.dumps(schema)
    values = [b"\x02\x0a", b"\x00"]  # v = 5, then v = null
    native, numpy_ = _both(values, schema_json)
    assert isinstance(native, dict) and native == numpy_
    assert native[".".join(["f"] * 70 + ["v|long"])] == [((0,), 5)]


def test_recursive_schemas_are_not_compiled() -> None:
    recursive = parse_schema_cached('{"type": "record", "name": "Node", "fields": [{"name": "next", "type": ["null", "Node"]}]}')
    with pytest.raises(NotCompiled):
        compile_schema(recursive)


def _chunks_of_every_partition(path: str) -> list[tuple[list[bytes], str]]:
    """Every metadata partition's base-file cells, a chunk at a time: its record values and writer schema."""
    mdt = HudiTable.open(path).metadata_table
    assert mdt is not None
    found = []
    for partition in mdt.table.config.metadata_partitions:
        for cells in mdt.reader.read_split(partition, KeyQuery())[0]:
            for chunk in cells.chunks():
                found.append((chunk.value_list(), cells.schema_json))
    return found


@compiled
@requires_fixtures
def test_compiled_decoder_equals_numpy_on_fixture_tables(fixture_root: Path) -> None:
    """Every metadata partition of every fixture with a metadata table (some keep all their records in log blocks)."""
    compared: dict[str, int] = {}
    for stem in MDT_FIXTURES:
        for values, schema_json in _chunks_of_every_partition(table_path(fixture_root, stem)):
            native, numpy_ = _both(values, schema_json)
            assert isinstance(native, dict) and native == numpy_, stem
            compared[stem] = compared.get(stem, 0) + len(values)
    assert len(compared) >= len(MDT_FIXTURES) // 2, compared


def test_the_compiled_helpers_can_be_switched_off() -> None:
    """HUDI_BRIDGE_NATIVE=0: the Python walk and the numpy decoder, as where nothing was compiled."""
    import os
    import subprocess
    import sys

    code = "from metadata.mdt import native, hfile_cells, columnar; print(native.cells, hfile_cells._native, columnar._native)"
    shown = subprocess.run([sys.executable, "-c", code], env={**os.environ, "HUDI_BRIDGE_NATIVE": "0"}, capture_output=True, text=True,
                           check=True).stdout.split()
    assert shown == ["None", "None", "None"]


# The chunk layout ------------------------------------------------------------------------------
def _vint_tail(rng: np.random.Generator) -> bytes:
    """An MVCC tail byte: mostly a one-byte vint, sometimes the first byte of a longer one (the quick layout must refuse it)."""
    return bytes([int(rng.choice([0, 5, 0x7F, 0x90, 0xFF, 0x80, 0x8F]))])


@compiled
@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(st.tuples(st.integers(0, 12), st.binary(max_size=20), st.binary(max_size=30)), max_size=12), max_size=6),
       st.sampled_from([0, 1]), st.integers(0, 2**31 - 1))
def test_compiled_layout_equals_the_numpy_layout(blocks: list[list[tuple[int, bytes, bytes]]], tail: int, seed: int) -> None:
    """Blocks of cells (a row length in each key that may not fit it, MVCC tails that may not be one byte) laid end to
    end: the compiled layout gives the numpy layout's cells, its None, or leaves the refusal to it."""
    rng = np.random.default_rng(seed)
    payloads = []
    for cells in blocks:
        payloads.append(b"".join(struct.pack(">iih", len(rest) + 2, len(value), row) + rest + value + (_vint_tail(rng) if tail else b"")
                                 for row, rest, value in cells))
    walks = [walk_cells(p, tail) for p in payloads]
    assert all(w is not None for w in walks)
    compiled_laid = hfile_cells._native.lay_out(payloads, walks, tail, PADDING)  # type: ignore[union-attr]
    try:
        numpy_chunk = hfile_cells.lay_out_with_numpy(payloads, walks, tail, "f")  # type: ignore[arg-type]
    except HudiFormatError:
        assert compiled_laid is None  # left to numpy, which names the cell
        return
    if numpy_chunk is None:
        assert compiled_laid is None
        return
    chunk = hfile_cells.lay_out_blocks(payloads, walks, tail, "f")  # type: ignore[arg-type]
    assert compiled_laid is not None and chunk is not None
    assert bytes(chunk.data) == bytes(numpy_chunk.data) == b"".join(payloads) + bytes(PADDING)
    for column in ("row_start", "row_length", "value_start", "value_length"):
        assert getattr(chunk, column).tolist() == getattr(numpy_chunk, column).tolist(), column
    assert chunk.rows().to_pylist() == numpy_chunk.rows().to_pylist()


@compiled
def test_compiled_layout_leaves_bad_cells_to_numpy() -> None:
    """A multi-byte MVCC tail: None both ways (walked exactly after); a row longer than its key: numpy refuses it by offset."""
    good = struct.pack(">iih", 3, 1, 1) + b"k" + b"v" + b"\x00"
    long_tail = struct.pack(">iih", 3, 1, 1) + b"k" + b"v" + b"\x88"
    assert hfile_cells.lay_out_blocks([good, long_tail], [walk_cells(good, 1), walk_cells(long_tail, 1)], 1, "f") is None  # type: ignore[list-item]
    bad_row = struct.pack(">iih", 3, 1, 5) + b"k" + b"v" + b"\x00"
    with pytest.raises(HudiFormatError, match="cell row of 5 bytes does not fit its key of 3"):
        hfile_cells.lay_out_blocks([good, bad_row], [walk_cells(good, 1), walk_cells(bad_row, 1)], 1, "f")  # type: ignore[list-item]
    with pytest.raises(ValueError):
        hfile_cells._native.lay_out([good], [], 1, PADDING)  # type: ignore[union-attr]


# The block checksums ---------------------------------------------------------------------------
@compiled
@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=3000), st.integers(1, 600), st.integers(0, 7))
def test_compiled_checksums_equal_google_crc32c(data: bytes, per: int, skip: int) -> None:
    """Each chunk's CRC32C, big-endian, end to end, from bytes or a view at any offset: as google_crc32c sums them
    (where the CPU has no crc32 instruction the compiled part answers None and google_crc32c sums them)."""
    import google_crc32c

    view = memoryview(data)[min(skip, len(data)):]
    expected = b"".join(struct.pack(">I", google_crc32c.value(bytes(view[i : i + per]))) for i in range(0, len(view), per))
    summed = hfile_cells._native.crc32c_chunks(view, per)  # type: ignore[union-attr]
    assert summed is None or summed == expected
    assert block_checksums(view, per) == expected


@compiled
def test_long_payloads_walk_and_sum_as_short_ones() -> None:
    """Above a mebibyte the compiled walk and checksums let the GIL go (below it they keep it: a block's take a
    microsecond); either way the answer is the same as the reference's, from bytes or a view."""
    import google_crc32c

    rng = np.random.default_rng(39)
    cells = [(bytes(rng.integers(0, 256, 20, dtype=np.uint8)), bytes(rng.integers(0, 256, 90, dtype=np.uint8))) for _ in range(12_000)]
    block = b"".join(_cell(k, v, 1) for k, v in cells)
    assert len(block) > 2**20
    for payload in (block, memoryview(block)[: 119 * 8_000]):  # above and below the threshold (cells of 119 bytes)
        starts = walk_cells(payload, 1)
        assert starts is not None and starts[:, 0].tolist() == walk_cells_in_python(payload, 1)
        per = 16_384
        expected = b"".join(struct.pack(">I", google_crc32c.value(bytes(payload[i : i + per]))) for i in range(0, len(payload), per))
        summed = hfile_cells._native.crc32c_chunks(payload, per)  # type: ignore[union-attr]
        assert summed is None or summed == expected


@compiled
def test_compiled_checksums_refuse_a_chunk_size_that_cannot_be() -> None:
    with pytest.raises(ValueError):
        hfile_cells._native.crc32c_chunks(b"abc", 0)  # type: ignore[union-attr]
