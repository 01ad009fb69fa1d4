"""Data blocks checked, inflated and walked by one compiled call a stretch
(`_cells.inflate_blocks`, with libdeflate's decompressor) against the Python
path (`HFileReader._stretch_payloads` and `walk_cells`): the same payloads and
walks on every fixture's metadata table and on what our writer writes, and
damaged or unusual blocks left to the Python path, which names them."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metadata.errors import HudiFormatError
from metadata.mdt import native
from metadata.mdt.hfile_blocks import _stretches
from metadata.mdt.hfile_cells import walk_cells
from metadata.mdt.hfile_format import CHECKSUM_CRC32C, HEADER_SIZE, BlockHeader, block_checksums
from metadata.mdt.hfile_reader import HFileReader
from tests.conftest import requires_fixtures
from tests.test_hfile_checksums import _cells, _write

inflates = pytest.mark.skipif(not native.inflates_blocks(), reason="the compiled module or the deflate package is not installed")


def test_the_compiled_inflate_is_there_where_the_compiled_module_is() -> None:
    """`deflate` is a dependency: wherever the compiled module was built, blocks inflate through it."""
    if native.cells is None:
        pytest.skip("the compiled module was not built (no C compiler at install)")
    assert native.inflates_blocks()


def _hfile(count: int, block_size: int, compress: bool = True, seed: int = 5) -> bytes:
    return _write(_cells(count, seed), block_size, compress)


def _python_path(reader: HFileReader) -> list[tuple[bytes, np.ndarray | None]]:
    tail = reader._fixed_tail()
    return [(payload, None if tail is None else walk_cells(payload, tail))
            for stretch in _stretches(reader.data_index) for payload in reader._stretch_payloads(stretch)]


def _native_path(reader: HFileReader) -> list[tuple[bytes, np.ndarray | None]] | None:
    """Each stretch read once and handed to the compiled call, as `_payloads` does (None: a stretch it left)."""
    found: list[tuple[bytes, np.ndarray | None]] = []
    for stretch in _stretches(reader.data_index):
        span = reader._stretch_span(stretch)
        inflated = None if span is None else reader._inflated_natively(span, stretch, reader._fixed_tail())
        if inflated is None:
            return None
        found += inflated
    return found


def _assert_same(native_path: list[tuple[bytes, np.ndarray | None]], python_path: list[tuple[bytes, np.ndarray | None]]) -> None:
    assert len(native_path) == len(python_path)
    for (payload, walk), (expected_payload, expected_walk) in zip(native_path, python_path):
        assert payload == expected_payload
        assert (walk is None) == (expected_walk is None)
        if walk is not None:
            assert np.array_equal(walk, expected_walk)


@inflates
@requires_fixtures
def test_fixture_blocks_inflate_as_the_python_path_reads_them(fixture_root: Path) -> None:
    """Every HFile of every fixture's metadata table (HBase's writer and Hudi's own)."""
    hfiles = sorted(fixture_root.glob("**/.hoodie/metadata/**/*.hfile"))
    assert hfiles
    natively = 0
    for path in hfiles:
        reader = HFileReader.from_bytes(path.read_bytes(), str(path))
        if not reader.data_index:
            continue
        found = _native_path(reader)
        if found is not None:
            natively += 1
            _assert_same(found, _python_path(reader))
    assert natively >= len(hfiles) // 2, f"{natively} of {len(hfiles)} HFiles inflated natively"


@inflates
@pytest.mark.parametrize("compress", [True, False])
@pytest.mark.parametrize("block_size", [1024, 64 * 1024, 1 << 20])
def test_our_blocks_inflate_as_the_python_path_reads_them(block_size: int, compress: bool) -> None:
    reader = HFileReader.from_bytes(_hfile(5000, block_size, compress))
    opened = reader.blocks_read  # the index and file info blocks
    found = _native_path(reader)
    assert found is not None
    assert reader.blocks_read == opened + len(reader.data_index)
    _assert_same(found, _python_path(reader))
    chunks = list(reader.scan_chunks(None))
    assert sum(len(chunk) for chunk in chunks) == 5000


def _first_block(data: bytes) -> tuple[int, BlockHeader]:
    offset = HFileReader.from_bytes(data).data_index[0].offset
    return offset, BlockHeader.parse(data, offset)


def _inflate_first(data: bytes) -> object:
    reader = HFileReader.from_bytes(data)
    entry = reader.data_index[0]
    assert native.cells is not None
    return native.cells.inflate_blocks(data[entry.offset : entry.offset + entry.on_disk_size], np.zeros(1, dtype=np.int64),
                                       np.array([entry.on_disk_size], dtype=np.int64), 1, 1)


@inflates
def test_a_block_that_fails_its_checksum_is_left_to_the_python_path() -> None:
    data = bytearray(_hfile(2000, 4096))
    offset, _ = _first_block(bytes(data))
    data[offset + HEADER_SIZE + 5] ^= 0x01
    assert _inflate_first(bytes(data)) is None
    with pytest.raises(HudiFormatError, match="fails its checksum") as raised:
        list(HFileReader.from_bytes(bytes(data)).scan_chunks(None))
    assert f"offset {offset}" in str(raised.value)


@inflates
def test_a_block_that_does_not_inflate_is_left_to_the_python_path() -> None:
    """Its checksums summed again over the damaged bytes: only the inflate can tell."""
    data = bytearray(_hfile(2000, 4096))
    offset, header = _first_block(bytes(data))
    end = offset + header.on_disk_data_size_with_header
    data[end - 12] ^= 0xFF  # inside the deflate stream, before gzip's own CRC and length
    sums = block_checksums(bytes(data[offset:end]), header.bytes_per_checksum, header.checksum_type)
    data[end : end + len(sums)] = sums
    assert _inflate_first(bytes(data)) is None
    with pytest.raises(HudiFormatError, match="does not decompress|decompressed to"):
        list(HFileReader.from_bytes(bytes(data)).scan_chunks(None))


@inflates
def test_blocks_whose_header_disagrees_are_left_to_the_python_path() -> None:
    data = _hfile(2000, 4096)
    offset, header = _first_block(data)
    wrong_magic = bytearray(data)
    wrong_magic[offset : offset + 8] = b"LEAFIDX2"
    assert _inflate_first(bytes(wrong_magic)) is None
    wrong_size = bytearray(data)
    struct.pack_into(">i", wrong_size, offset + 12, header.uncompressed_size_without_header + 1)
    assert _inflate_first(bytes(wrong_size)) is None
    crc32 = bytearray(data)
    crc32[offset + 24] = 1  # CRC32 checksums (no writer we read uses them): summed by the Python path
    assert _inflate_first(bytes(crc32)) is None
    assert native.cells is not None
    assert native.cells.inflate_blocks(data, np.array([offset], dtype=np.int64), np.array([len(data)], dtype=np.int64), 1, 1) is None


@inflates
def test_scans_without_the_compiled_inflate_read_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    data = _hfile(5000, 16 * 1024)
    with_it = [(chunk.key_list(), chunk.value_list()) for chunk in HFileReader.from_bytes(data).scan_chunks(None)]
    monkeypatch.setattr(native, "inflates_blocks", lambda: False)
    without = [(chunk.key_list(), chunk.value_list()) for chunk in HFileReader.from_bytes(data).scan_chunks(None)]
    assert with_it == without
    assert sum(len(keys) for keys, _ in with_it) == 5000


@inflates
def test_a_read_of_one_block_takes_the_python_path_and_leaves_libdeflate_unloaded(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[bool] = []
    monkeypatch.setattr(native, "inflates_blocks", lambda: asked.append(True) or True)
    reader = HFileReader.from_bytes(_hfile(40, 64 * 1024))
    assert len(reader.data_index) == 1
    assert sum(len(chunk) for chunk in reader.scan_chunks(None)) == 40
    assert not asked  # a lister's first partition reads one block: 2 ms of loading spared
    many = HFileReader.from_bytes(_hfile(5000, 16 * 1024))
    assert sum(len(chunk) for chunk in many.scan_chunks(None)) == 5000
    assert asked


_STRETCH = _hfile(300, 2048, seed=11)  # a few blocks lying end to end


def _python_stretch(data: bytes) -> list[tuple[bytes, np.ndarray | None]] | None:
    """The Python path over the blocks of `_STRETCH` (None: it refuses them)."""
    reader = HFileReader.from_bytes(_STRETCH)
    reader._read_at = lambda offset, length: data[offset : offset + length]  # the damaged bytes, with the index as written
    try:
        return _python_path(reader)
    except HudiFormatError:
        return None


def _resummed(data: bytearray, offset: int) -> None:
    """The checksums of the block at `offset` summed again over its (damaged) bytes, when its header still says how."""
    header = BlockHeader.parse(bytes(data), offset)
    end = offset + header.on_disk_data_size_with_header
    if header.checksum_type != CHECKSUM_CRC32C or header.bytes_per_checksum <= 0 or not offset + HEADER_SIZE <= end <= len(data):
        return
    sums = block_checksums(bytes(data[offset:end]), header.bytes_per_checksum, header.checksum_type)
    if end + len(sums) <= len(data):
        data[end : end + len(sums)] = sums


@inflates
@settings(max_examples=400)
@given(st.integers(0, 2**31 - 1), st.integers(1, 255), st.booleans())
def test_a_flipped_byte_is_read_as_the_python_path_reads_it_or_left_to_it(position: int, flip: int, resum: bool) -> None:
    """Any byte of the blocks flipped (and, half the time, the block's
    checksums summed again, so that the damage reaches the inflate and the
    header's checks): the compiled call gives what the Python path gives, or
    None, and never blocks the Python path refuses."""
    reader = HFileReader.from_bytes(_STRETCH)
    entries = reader.data_index
    first, end = entries[0].offset, entries[-1].offset + entries[-1].on_disk_size
    damaged = bytearray(_STRETCH)
    at = first + position % (end - first)
    damaged[at] ^= flip
    if resum:
        _resummed(damaged, max(entry.offset for entry in entries if entry.offset <= at))
    assert native.cells is not None
    found = native.cells.inflate_blocks(bytes(damaged[first:end]), np.array([e.offset - first for e in entries], dtype=np.int64),
                                        np.array([e.on_disk_size for e in entries], dtype=np.int64), 1, reader._fixed_tail())
    expected = _python_stretch(bytes(damaged))
    if found is None:
        return
    assert expected is not None, "the compiled call read blocks the Python path refuses"
    _assert_same([(payload, None if walk is None else np.frombuffer(walk, dtype=np.int64).reshape(-1, 2)) for payload, walk in found], expected)
