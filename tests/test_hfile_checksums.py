"""HFile block checksums: what we write is read by hudi-rs at any block size,
and a damaged block is named, not mis-decoded."""

from __future__ import annotations

import random
from pathlib import Path

import hudi
import pyarrow as pa
import pytest

from metadata.errors import HudiFormatError
from metadata.mdt.hfile_format import (
    BYTES_PER_CHECKSUM,
    CHECKSUM_CRC32C,
    HEADER_SIZE,
    BlockHeader,
    checksum_bytes_per_chunk,
    checksum_chunks,
)
from metadata.mdt.hfile_reader import HFileReader
from metadata.mdt.record_builders import files_record
from metadata.mdt.record_encoding import encode_record
from metadata.mdt.record_schema import METADATA_RECORD_SCHEMA_JSON
from metadata.mdt.records import decode_record
from metadata.mdt.write.hfile_writer import HFileWriter
from metadata.storage.storage import Storage
from metadata.table.config import BaseFileFormat, TableConfig, TableType
from tests.conftest import requires_fixtures

FILE_NAME = "files-0000-0_0-0-0_00000000000000000.hfile"


def _metadata_table_folder(root: Path) -> Path:
    """An MDT folder hudi-rs accepts: hoodie.properties and a `files` partition."""
    TableConfig.new(
        "t_metadata", TableType.MERGE_ON_READ, 8, record_key_fields=("key",), base_file_format=BaseFileFormat.HFILE,
        populate_meta_fields=False,
        extra={
            "hoodie.table.keygenerator.type": "HOODIE_TABLE_METADATA",
            "hoodie.compaction.payload.class": "org.apache.hudi.metadata.HoodieMetadataPayload",
            "hoodie.record.merge.mode": "CUSTOM",
            "hoodie.record.merge.strategy.id": "00000000-0000-0000-0000-000000000000",
        },
    ).write(Storage.open(str(root)))
    (root / "files").mkdir(parents=True, exist_ok=True)
    return root


def _cells(count: int, seed: int = 7) -> list[tuple[bytes, bytes]]:
    rnd = random.Random(seed)
    return [
        (f"p{i:08d}".encode(), encode_record(files_record("", {f"{rnd.getrandbits(64):016x}.parquet": (i, False)})))
        for i in range(count)
    ]


def _write(cells: list[tuple[bytes, bytes]], block_size: int, compress: bool = True) -> bytes:
    writer = HFileWriter(block_size=block_size, compress=compress)
    writer.add_all(cells)
    return writer.finish({b"schema": METADATA_RECORD_SCHEMA_JSON.encode()})


def _data_blocks(data: bytes) -> list[BlockHeader]:
    reader = HFileReader.from_bytes(data)
    return [BlockHeader.parse(data, entry.offset) for entry in reader.data_index]


def _read_with_hudi_rs(root: Path, data: bytes) -> pa.Table:
    (root / "files" / FILE_NAME).write_bytes(data)
    return hudi.HudiFileGroupReader(str(root)).read_file_slice_from_paths(f"files/{FILE_NAME}", [])


def _names(table: pa.Table) -> list[str]:
    return [next(iter(dict(entries))) for entries in table.column("filesystemMetadata").to_pylist()]


def _expected_names(cells: list[tuple[bytes, bytes]]) -> list[str]:
    return [next(iter(decode_record(k.decode(), v, METADATA_RECORD_SCHEMA_JSON, "test").files or {})) for k, v in cells]


@pytest.mark.slow
def test_hudi_rs_reads_a_million_records_at_every_block_size(tmp_path: Path) -> None:
    root = _metadata_table_folder(tmp_path / "metadata")
    cells = _cells(1_000_000)
    data = _write(cells, 64 * 1024)
    table = _read_with_hudi_rs(root, data)
    assert table.num_rows == 1_000_000
    assert table.column("key").to_pylist() == [k.decode() for k, _ in cells]
    sample = cells[:200_000]
    expected = _expected_names(sample)
    largest = 0
    for block_size in (1024, 16 * 1024, 64 * 1024, 256 * 1024, 1024 * 1024):
        data = _write(sample, block_size)
        headers = _data_blocks(data)
        assert all(h.checksum_type == CHECKSUM_CRC32C for h in headers)
        largest = max(largest, max(h.on_disk_size_without_header for h in headers))
        table = _read_with_hudi_rs(root, data)
        assert table.column("key").to_pylist() == [k.decode() for k, _ in sample], block_size
        assert _names(table) == expected, block_size
        assert list(HFileReader.from_bytes(data).iter_all()) == sample
    assert largest > 200 * 1024  # blocks from under 1 KiB to several hundred KiB on disk were read


def test_chunk_size_agrees_with_both_counting_rules() -> None:
    for size in range(1, 3 * BYTES_PER_CHECKSUM + 100):
        chunk = checksum_bytes_per_chunk(size)
        count = checksum_chunks(size, chunk)  # HBase: chunks of header + data
        assert checksum_chunks(size + 4 * count, chunk) == count, size  # hudi-rs: chunks of the whole block
    assert checksum_bytes_per_chunk(BYTES_PER_CHECKSUM - 100) == BYTES_PER_CHECKSUM
    assert checksum_bytes_per_chunk(BYTES_PER_CHECKSUM - 2) < BYTES_PER_CHECKSUM


def test_block_on_the_chunk_boundary_reads_in_hudi_rs(tmp_path: Path) -> None:
    """A gzip block whose checksums would cross 16 KiB: the case where the two
    counting rules disagree unless the block declares a smaller chunk."""
    root = _metadata_table_folder(tmp_path / "metadata")
    rnd = random.Random(3)
    noise = rnd.randbytes(40_000).hex()
    for length in range(27_500, 28_500):  # hex compresses to about 0.58 byte a character
        record = files_record("", {noise[:length]: (1, False)})
        data = _write([(b"k", encode_record(record))], 1 << 20)
        header = _data_blocks(data)[0]
        if header.bytes_per_checksum != BYTES_PER_CHECKSUM:
            break
    else:
        pytest.fail("no value length put a block on the 16 KiB checksum boundary")
    assert header.on_disk_data_size_with_header <= BYTES_PER_CHECKSUM < header.on_disk_data_size_with_header + 8
    table = _read_with_hudi_rs(root, data)
    assert table.num_rows == 1
    assert _names(table) == [noise[:length]]


@requires_fixtures
def test_damaged_block_fails_its_checksum(fixture_root: Path) -> None:
    hfiles = sorted(fixture_root.glob("quickstart_trips_table__mor__avro__v8_trips_8i3u1d/**/.hoodie/metadata/files/*.hfile"))
    assert hfiles, "the v8 fixture carries HBase-written HFiles"
    data = bytearray(hfiles[0].read_bytes())
    header = BlockHeader.parse(bytes(data), 0)
    assert header.checksum_type == CHECKSUM_CRC32C  # written by HBase's writer, checked on every read
    assert list(HFileReader.from_bytes(bytes(data)).iter_all())
    data[HEADER_SIZE + 5] ^= 0x01
    with pytest.raises(HudiFormatError, match="fails its checksum") as raised:
        list(HFileReader.from_bytes(bytes(data)).iter_all())
    assert "offset 0" in str(raised.value)


def test_our_checksums_are_verified_on_read() -> None:
    data = bytearray(_write(_cells(2000), 4096))
    assert list(HFileReader.from_bytes(bytes(data)).iter_all())
    offset = HFileReader.from_bytes(bytes(data)).data_index[1].offset
    header = BlockHeader.parse(bytes(data), offset)
    data[offset + header.on_disk_data_size_with_header] ^= 0xFF  # a checksum byte, not the data
    with pytest.raises(HudiFormatError, match="fails its checksum"):
        list(HFileReader.from_bytes(bytes(data)).iter_all())
