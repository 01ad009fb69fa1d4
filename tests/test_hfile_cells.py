"""Columnar HFile scans (`HFileReader.scan_chunks`) against the per-cell
reference (`scan_prefixes`): random rows and prefixes, small blocks so that
prefixes start, span and end inside blocks, both the quick cell walk and
the exact one, and damaged blocks named by file."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metadata.errors import HudiFormatError
from metadata.mdt import hfile_blocks, hfile_reader
from metadata.mdt.hfile_cells import at_ascending, walk_cells
from metadata.mdt.hfile_reader import HFileReader
from metadata.mdt.write.hfile_writer import HFileWriter

ALPHABET = "ab/=é"


def _reader(cells: list[tuple[bytes, bytes]], block_size: int) -> HFileReader:
    writer = HFileWriter(block_size=block_size, max_root_entries=8)
    writer.add_all(cells)
    return HFileReader.from_bytes(writer.finish({b"schema": b"{}"}), "memory.hfile")


def _columnar(reader: HFileReader, prefixes: list[bytes] | None, chunk_bytes: int) -> list[tuple[bytes, bytes]]:
    out = []
    for chunk in reader.scan_chunks(prefixes, chunk_bytes):
        out += list(zip(chunk.rows().to_pylist(), chunk.value_list()))
    return out


@settings(max_examples=150, deadline=None)
@given(rows=st.sets(st.text(ALPHABET, min_size=1, max_size=6), min_size=1, max_size=300),
       prefixes=st.lists(st.text(ALPHABET, max_size=3), min_size=1, max_size=4),
       block_size=st.sampled_from([64, 256, 4096]), chunk_bytes=st.sampled_from([1, 700, 1 << 20]),
       exact=st.booleans(), seed=st.integers(0, 2**16))
def test_columnar_scan_equals_per_cell_scan(rows: set[str], prefixes: list[str], block_size: int, chunk_bytes: int, exact: bool,
                                            seed: int) -> None:
    rng = random.Random(seed)
    cells = sorted((r.encode(), rng.randbytes(rng.randint(0, 40))) for r in rows)
    reader = _reader(cells, block_size)
    wanted = [p.encode() for p in prefixes]
    with pytest.MonkeyPatch.context() as patch:
        if exact:  # the exact walk, as for files with tags or long MVCC versions
            patch.setattr(hfile_blocks, "walk_cells", lambda payload, tail: None)
        assert _columnar(reader, wanted, chunk_bytes) == list(reader.scan_prefixes(wanted))
        assert _columnar(reader, None, chunk_bytes) == cells


def test_a_value_length_past_its_block_is_named() -> None:
    cells = [(f"k{i:03d}".encode(), b"v" * 10) for i in range(50)]
    writer = HFileWriter(block_size=4096)
    writer.add_all(cells)
    data = bytearray(writer.finish({b"schema": b"{}"}))
    reader = HFileReader.from_bytes(bytes(data), "memory.hfile")
    payload = reader._block(reader.data_index[0].offset, (b"DATABLK*",))[1]
    damaged = bytearray(payload)
    damaged[4:8] = (10_000).to_bytes(4, "big")  # the first cell's value length
    with pytest.raises(HudiFormatError, match="runs past its block") as caught:
        tail = reader._fixed_tail()
        walk = None if tail is None else walk_cells(bytes(damaged), tail)  # None: the quick walk does not fit, the exact one names it
        reader._chunk([hfile_reader._Block(reader.data_index[0].offset, bytes(damaged), walk, None)])
    assert "memory.hfile" in str(caught.value)


@settings(max_examples=150, deadline=None)
@given(rows=st.sets(st.text(ALPHABET, min_size=1, max_size=6), min_size=60, max_size=300),
       lookups=st.lists(st.text(ALPHABET, max_size=4), min_size=1, max_size=4),
       block_size=st.sampled_from([64, 128]), max_root_entries=st.sampled_from([2, 3, 5]), seed=st.integers(0, 2**16))
def test_lookups_in_a_two_level_index_read_only_the_leaves_they_walk(rows: set[str], lookups: list[str], block_size: int,
                                                                     max_root_entries: int, seed: int) -> None:
    rng = random.Random(seed)
    cells = sorted((r.encode(), rng.randbytes(rng.randint(0, 40))) for r in rows)
    writer = HFileWriter(block_size=block_size, max_root_entries=max_root_entries)
    writer.add_all(cells)
    data = writer.finish({b"schema": b"{}"})
    assert HFileReader.from_bytes(data).trailer.num_data_index_levels == 2
    for lookup in (x.encode() for x in lookups):
        fresh = HFileReader.from_bytes(data, "memory.hfile")  # no flat index: leaves are read as the lookup walks
        expected = [c for c in cells if c[0].startswith(lookup)]
        assert list(fresh.scan_prefix(lookup)) == expected
        assert fresh.get(lookup) == dict(cells).get(lookup)
        assert _columnar(HFileReader.from_bytes(data, "memory.hfile"), [lookup, lookup + b"a"], 1 << 20) == expected
        flat = HFileReader.from_bytes(data, "memory.hfile")
        flat.data_index  # noqa: B018 - the whole index first: the other way
        assert list(flat.scan_prefix(lookup)) == expected
        assert _columnar(flat, [lookup], 1 << 20) == expected
        if not expected:
            assert len(fresh._leaves) <= 2  # a missing key costs at most its leaf and the next one


@pytest.mark.parametrize("damage", ["count past the block", "offsets backwards"])
def test_a_leaf_index_block_whose_offsets_do_not_fit_is_named(damage: str) -> None:
    """A leaf index block with valid checksums but entry offsets that do not fit
    it: a lookup (lazy leaf) and a whole-index read both name the file and offset."""

    def bad_leaf(entries: list[tuple[bytes, int, int]]) -> bytes:
        payload = bytearray(good_leaf(entries))
        if damage == "count past the block":
            payload[0:4] = (10**6).to_bytes(4, "big")
        else:  # the second entry starts before the first ends
            payload[8:12] = (3).to_bytes(4, "big")
        return bytes(payload)

    good_leaf = HFileWriter._leaf_payload
    cells = [(f"row{i:04d}".encode(), b"v" * 20) for i in range(400)]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(HFileWriter, "_leaf_payload", staticmethod(bad_leaf))
        writer = HFileWriter(block_size=64, max_root_entries=4)
        writer.add_all(cells)
        data = writer.finish({b"schema": b"{}"})
    with pytest.raises(HudiFormatError, match=r"damaged\.hfile at offset \d+: index block's entry offsets do not fit it"):
        HFileReader.from_bytes(data, "damaged.hfile").get(b"row0200")
    with pytest.raises(HudiFormatError, match=r"damaged\.hfile at offset \d+: index block's entry offsets do not fit it"):
        HFileReader.from_bytes(data, "damaged.hfile").data_index  # noqa: B018


@settings(max_examples=200, deadline=None)
@given(rows=st.sets(st.binary(min_size=1, max_size=6), min_size=1, max_size=200),
       prefixes=st.lists(st.binary(max_size=4), min_size=1, max_size=6), seed=st.integers(0, 2**16))
def test_rows_with_any_prefix_equals_one_prefix_at_a_time(rows: set[bytes], prefixes: list[bytes], seed: int) -> None:
    """Prefixes of mixed widths, ending in NUL bytes or not (numpy's byte strings drop trailing NULs)."""
    rng = random.Random(seed)
    cells = sorted((r, rng.randbytes(rng.randint(0, 8))) for r in rows)
    chunk = next(iter(_reader(cells, 4096).scan_chunks(None)))
    expected = np.zeros(len(chunk), dtype=bool)
    for prefix in prefixes:
        expected |= chunk.rows_with_prefix(prefix)
    assert chunk.rows_with_any_prefix(prefixes).tolist() == expected.tolist()


@settings(max_examples=150, deadline=None)
@given(rows=st.sets(st.binary(min_size=1, max_size=5).map(lambda b: b.replace(b"\x00", b"\x01")), min_size=1, max_size=300),
       prefixes=st.lists(st.binary(max_size=3), min_size=1, max_size=6), block_size=st.sampled_from([64, 256, 4096]),
       seed=st.integers(0, 2**16))
def test_blocks_covering_prefixes_are_the_blocks_a_checked_scan_reads(rows: set[bytes], prefixes: list[bytes], block_size: int,
                                                                      seed: int) -> None:
    """The binary searches of a loose scan choose the blocks the per-prefix walk does (0xFF bytes included: no successor),
    in numpy for prefixes without NUL bytes, in Python for those with one."""
    rng = random.Random(seed)
    reader = _reader(sorted((r, rng.randbytes(rng.randint(0, 40))) for r in rows), block_size)
    prefixes = prefixes + [b"\xff", rng.choice(sorted(rows)) + b"\xff"]
    assert reader.blocks_covering(prefixes) == [entry for entry, _ in reader.blocks_for(prefixes)]
    without_nul = [p.replace(b"\x00", b"\x01") for p in prefixes]
    one_width = [p.ljust(3, b"\x01")[:3] for p in without_nul]  # successors made in place, unless one ends in 0xFF
    for query in (without_nul, one_width, one_width[:-2]):
        assert reader.blocks_covering(query) == reader._blocks_covering_in_python(query) == [
            entry for entry, _ in reader.blocks_for(query)]
    loose = [row for chunk in reader.scan_chunks(prefixes, check=False) for row in chunk.rows().to_pylist()]
    assert set(loose) >= {row for row, _ in reader.scan_prefixes(prefixes)}


def test_blocks_covering_with_nul_bytes_in_index_rows_walks_in_python() -> None:
    """Rows holding NUL bytes sort apart in numpy's byte strings: the block index is searched a prefix at a time."""
    rows = sorted({bytes([a, b, c]) for a in (0, 1, 2) for b in (0, 7, 255) for c in (0, 9)})
    reader = _reader([(r, b"v" * 30) for r in rows], 64)
    assert reader._index_row_array() is None
    for prefixes in ([b"\x01"], [b"\x00\x00", b"\x02\xff"], [b"\x01\x07\x00", b"\x02"]):
        assert reader.blocks_covering(prefixes) == [entry for entry, _ in reader.blocks_for(prefixes)]


@settings(max_examples=100, deadline=None)
@given(rows=st.sets(st.text(ALPHABET, min_size=1, max_size=6), min_size=1, max_size=300),
       first=st.lists(st.text(ALPHABET, max_size=3), min_size=1, max_size=4),
       second=st.lists(st.text(ALPHABET, max_size=3), min_size=1, max_size=4),
       block_size=st.sampled_from([64, 256]), seed=st.integers(0, 2**16))
def test_a_prefetched_loose_scan_reads_what_a_plain_one_does(rows: set[str], first: list[str], second: list[str], block_size: int,
                                                              seed: int) -> None:
    """Blocks inflated ahead (`prefetch_covering`) are taken by the scan they were started for, whole; a scan of other
    prefixes reads its own blocks as if nothing were ahead."""
    rng = random.Random(seed)
    reader = _reader(sorted((r.encode(), rng.randbytes(rng.randint(0, 40))) for r in rows), block_size)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(hfile_blocks, "INFLATE_GROUP", 3)  # many groups, even in small files
        patch.setattr(hfile_blocks, "PREFETCH_GROUP", 2)
        scans = [[p.encode() for p in first], [p.encode() for p in second]]
        plain = [[(r, v) for chunk in reader.scan_chunks(s, 700, check=False) for r, v in zip(chunk.rows().to_pylist(), chunk.value_list())]
                 for s in scans]
        for scan in scans:
            reader.prefetch_covering(scan)
        ahead = [[(r, v) for chunk in reader.scan_chunks(s, 700, check=False) for r, v in zip(chunk.rows().to_pylist(), chunk.value_list())]
                 for s in scans]
        assert ahead == plain
        if scans[0] == scans[1] or reader.blocks_covering(scans[0]) == reader.blocks_covering(scans[1]):
            assert not reader._ahead  # every group started was taken


def test_prefetching_holds_no_more_than_its_cap() -> None:
    reader = _reader([(f"k{i:04d}".encode(), b"v" * 30) for i in range(2000)], 64)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(hfile_blocks, "PREFETCH_GROUP", 1)
        patch.setattr(hfile_blocks, "PREFETCH_GROUPS", 5)
        reader.prefetch_covering([b"k"])
        assert len(reader._ahead) == 5
        assert [r for chunk in reader.scan_chunks([b"k0"], check=False) for r in chunk.rows().to_pylist()][:2] == [b"k0000", b"k0001"]


def test_plans_at_once_prefetching_and_scanning_one_reader_each_get_their_cells() -> None:
    """A service's plans share a reader: scans of the same blocks, each after its own prefetch, at once. One scan takes
    the groups started ahead whole or reads its own; none fails on a group another took (it did: a KeyError naming
    the group's block offsets, answered as a refused plan)."""
    import sys
    import threading

    reader = _reader([(f"k{i:04d}".encode(), b"v" * 30) for i in range(3000)], 1024)
    scan = [b"k10", b"k20"]  # a few groups of blocks: all of them are started ahead
    expected = [r for chunk in reader.scan_chunks(scan, check=False) for r in chunk.rows().to_pylist()]
    assert 2 < len(reader.blocks_covering(scan)) <= 2 * hfile_blocks.PREFETCH_GROUPS
    failures: list[BaseException] = []
    unequal: list[int] = []

    def plan_like(number: int) -> None:
        try:
            for _ in range(200):
                reader.prefetch_covering(scan)
                found = [r for chunk in reader.scan_chunks(scan, check=False) for r in chunk.rows().to_pylist()]
                if found != expected:
                    unequal.append(number)
        except BaseException as exc:  # noqa: BLE001 - said below
            failures.append(exc)

    switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # threads change hands as often as they can: the race shows in a few rounds
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(hfile_blocks, "PREFETCH_GROUP", 2)
            threads = [threading.Thread(target=plan_like, args=(n,)) for n in range(6)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
    finally:
        sys.setswitchinterval(switch)
    assert failures == [] and unequal == []


def test_blocks_read_by_the_group_equal_blocks_read_one_by_one() -> None:
    """A group of blocks lying end to end is read at once; every cell is what reading them one by one gives."""
    cells = [(f"k{i:05d}".encode(), bytes([i % 251]) * (i % 40)) for i in range(3000)]
    reader = _reader(cells, 256)
    grouped = [(r, v) for chunk in reader.scan_chunks(None) for r, v in zip(chunk.rows().to_pylist(), chunk.value_list())]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(hfile_blocks, "INFLATE_GROUP", 1)
        one_by_one = [(r, v) for chunk in reader.scan_chunks(None) for r, v in zip(chunk.rows().to_pylist(), chunk.value_list())]
    assert grouped == one_by_one == cells


def test_a_group_of_blocks_in_two_stretches_is_read_with_a_read_each() -> None:
    """A loose scan of two key ranges apart gives a group two stretches of blocks lying end to end: each is read at
    once, and the cells are those reading the blocks one by one gives."""
    cells = [(f"{p}{i:05d}".encode(), b"v" * 30) for p in "abc" for i in range(300)]
    reader = _reader(cells, 256)
    reads: list[str] = []
    read = reader._read

    def counted(offset: int, length: int, what: str) -> bytes:
        reads.append(what)
        return read(offset, length, what)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(hfile_blocks, "INFLATE_GROUP", 10_000)  # every block in one group
        patch.setattr(reader, "_read", counted)
        loose = [r for chunk in reader.scan_chunks([b"a", b"c"], check=False) for r in chunk.rows().to_pylist()]
        assert reads.count("data blocks") == 2 and "DATABLK* block" not in reads  # no block read on its own
        patch.setattr(hfile_blocks, "INFLATE_GROUP", 1)
        assert [r for chunk in reader.scan_chunks([b"a", b"c"], check=False) for r in chunk.rows().to_pylist()] == loose
    assert {row for row, _ in cells if row[:1] in (b"a", b"c")} <= set(loose)
    assert sum(r[:1] == b"b" for r in loose) < 100  # of the range between, only what the stretches' edge blocks hold


def test_a_block_header_disagreeing_with_its_index_entry_is_named() -> None:
    """Inside a group read at once, a block whose header gives another size than its index entry is read alone, and
    what is wrong with it is named with its offset."""
    writer = HFileWriter(block_size=256)
    writer.add_all([(f"k{i:05d}".encode(), b"v" * 30) for i in range(2000)])
    data = bytearray(writer.finish({b"schema": b"{}"}))
    reader = HFileReader.from_bytes(bytes(data), "grouped.hfile")
    damaged_at = reader.data_index[5].offset
    size_field = damaged_at + 8  # the header's on-disk size without header, after the 8-byte magic
    data[size_field : size_field + 4] = (int.from_bytes(data[size_field : size_field + 4], "big") + 7).to_bytes(4, "big")
    with pytest.raises(HudiFormatError, match=rf"grouped\.hfile at offset {damaged_at}: ") as caught:
        list(HFileReader.from_bytes(bytes(data), "grouped.hfile").scan_chunks(None))
    assert "block" in str(caught.value)


@settings(max_examples=200)
@given(st.lists(st.integers(0, 40), unique=True, max_size=20), st.booleans())
def test_values_at_ascending_positions_are_the_gather(positions: list[int], own: bool) -> None:
    """A view where the positions are one unbroken range, a gather elsewhere: the same values either way; a result
    asked to own its values shares no memory with the array it came from."""
    values = np.arange(100, 141, dtype=np.int64)
    index = np.array(sorted(positions), dtype=np.int64)
    found = at_ascending(values, index, own=own)
    assert found.tolist() == values[index].tolist()
    if own:
        assert not np.shares_memory(found, values)
    if len(index) and index[-1] - index[0] == len(index) - 1 and not own:
        assert np.shares_memory(found, values)  # one unbroken range: no copy
