"""HFile v3 reader (the metadata table's base file format).

Reads the trailer and the load-on-open section once, then fetches only the
data blocks a key or key prefix can be in: the data index is binary searched
on row bytes (unsigned), as Hudi's HoodieHBaseKVComparator orders them.
"""

from __future__ import annotations

import os
import struct
import threading
import zlib
from bisect import bisect_left, bisect_right
from collections import OrderedDict
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Literal, cast

import numpy as np
import numpy.typing as npt
from isal import igzip_lib  # ISA-L's inflate: twice zlib's speed on these blocks

from metadata.errors import HudiFormatError
from metadata.mdt import native
from metadata.mdt.hfile_cells import ZEROS, CellChunk, IntArray, lay_out_blocks, walk_cells
from metadata.mdt.hfile_format import (
    CHECKSUM_CRC32,
    CHECKSUM_CRC32C,
    CODEC_GZ,
    CODEC_NAMES,
    CODEC_NONE,
    DATA_MAGIC,
    FILE_INFO_MAGIC,
    HEADER_SIZE,
    INTERMEDIATE_INDEX_MAGIC,
    LEAF_INDEX_MAGIC,
    ROOT_INDEX_MAGIC,
    TRAILER_MAGIC,
    TRAILER_SIZE,
    BlockHeader,
    Trailer,
    block_checksums,
    decode_file_info,
    decode_varint,
    decode_writable_vint,
    row_of_key,
)
from metadata.storage.storage import Storage
from metadata.util.read_ahead import read_ahead

_ISAL_ERROR = cast(type[Exception], igzip_lib.IsalError)  # its stub calls the class an instance

ReadAt = Callable[[int, int], bytes]

MAX_TAGS_KEY = b"hfile.MAX_TAGS_LEN"
KEY_VALUE_VERSION_KEY = b"KEY_VALUE_VERSION"
BLOCK_CACHE_SIZE = 64
# Uncompressed block bytes per CellChunk of a columnar scan. Chunks of 4 MiB peaked 25 MiB lower in a cold 1M
# plan (445 to 453 MiB against 470 to 480) in the same time, but a 10M plan took 26 to 28 s against 19 to 21 s.
# Since blocks inflate without the GIL (`inflate_blocks`), 8 MiB against 16: a cold 1M plan in the same time
# (1.30 s against 1.31, 8 alternating rounds) 10 MiB lower (470 to 491 MiB against 485 to 500); 10M 13.3 to
# 13.5 s against 12.8 to 13.2, 8 MiB lower.
CHUNK_BYTES = 8 * 1024 * 1024
# Inflating runs beside the thread that walks and decodes the blocks: one core is left to it.
_DECOMPRESS_WORKERS = max(1, min(4, (os.cpu_count() or 1) - 1))
INFLATE_GROUP = 16  # data blocks (about 1 MiB) a worker reads and inflates per task
# Groups inflated ahead of the reader: more than a chunk's worth, so the workers
# keep inflating while the reader walks and decodes a chunk instead of idling.
INFLATE_AHEAD = 24
COVERINGS_KEPT = 4  # prefix lists whose blocks a reader keeps (`blocks_covering`)
# Blocks a worker inflates per task ahead of a scan not yet asked for (`prefetch_covering`: a streamed plan's next
# run), and how many such groups a reader holds at most (about 64 MiB). Larger than a read's groups: the compiled
# inflate takes the GIL once a task, and a run is read whole. 64 against 16: a cold 1M plan 0.97x (8 alternating
# rounds: 1.225 s against 1.258 s; peaks 478 to 487 MiB against 470 to 487), a 10M plan the same (13.8 to 14.0 s).
PREFETCH_GROUP = 64
PREFETCH_GROUPS = 16
# Blocks a read takes at least for the compiled inflate (`inflate_blocks`): alone, a block hands the GIL over as
# often on the Python path, which also spares a small read loading libdeflate (2 ms: a lister's first partition
# reads one block, 11.4 ms against 13.2 ms, medians of 7 new processes).
NATIVE_INFLATE_FROM = 2
# A block larger than this, by its header, is refused unread: Hudi writes blocks of about 1 MiB (a single large cell
# makes one larger), and an honest header can otherwise declare what a small block inflates to, up to 2 GiB.
# HUDI_BRIDGE_MAX_BLOCK_BYTES raises it. The compiled reader keeps its own fixed bound (_cells.c, MAX_PLAIN_PAYLOAD).
MAX_BLOCK_BYTES = int(os.environ.get("HUDI_BRIDGE_MAX_BLOCK_BYTES", str(256 * 1024 * 1024)))
_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _groups(entries: list[IndexEntry], size: int | None = None) -> list[list[IndexEntry]]:
    """Data blocks cut into the groups a worker reads and inflates per task (of INFLATE_GROUP unless told)."""
    size = size or INFLATE_GROUP
    return [entries[i : i + size] for i in range(0, len(entries), size)]


def _decompress_pool() -> ThreadPoolExecutor:
    """Shared threads that read and inflate blocks ahead of a columnar scan (reads and inflation release the GIL)."""
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(_DECOMPRESS_WORKERS, thread_name_prefix="hfile-inflate")
        return _pool


def gunzip_at_most(data: bytes | memoryview, limit: int) -> bytes:
    """gzip members inflated one after another, stopping at `limit` bytes of
    output: a block that inflates past its declared size is refused by its
    length, never inflated whole (a small block can inflate to gigabytes)."""
    out = bytearray()
    rest = bytes(data)
    while rest.strip(b"\0") and len(out) < limit:
        member = zlib.decompressobj(wbits=31)
        out += member.decompress(rest, limit - len(out))
        if member.unconsumed_tail:
            break  # the limit is reached: the caller sees the length
        if not member.eof:
            raise zlib.error("a gzip member ends early")
        rest = member.unused_data
    return bytes(out)


def _stretches(entries: list[IndexEntry]) -> list[list[IndexEntry]]:
    """The entries cut where a block does not start where the one before it ends."""
    stretches: list[list[IndexEntry]] = []
    for entry in entries:
        if stretches and stretches[-1][-1].offset + stretches[-1][-1].on_disk_size == entry.offset:
            stretches[-1].append(entry)
        else:
            stretches.append([entry])
    return stretches


def covering_prefixes(prefixes: list[bytes]) -> list[bytes]:
    """Sorted distinct prefixes without those a shorter one covers."""
    kept: list[bytes] = []
    for prefix in sorted(set(prefixes)):
        if not (kept and prefix.startswith(kept[-1])):
            kept.append(prefix)
    return kept


def prefix_successor(prefix: bytes) -> bytes | None:
    """The least row after every row that starts with `prefix` (None: there is none)."""
    stripped = prefix.rstrip(b"\xff")
    return stripped[:-1] + bytes([stripped[-1] + 1]) if stripped else None


@dataclass(frozen=True)
class IndexEntry:
    first_row: bytes
    offset: int
    on_disk_size: int


@dataclass(frozen=True)
class _Block:
    """An inflated data block: its offset, payload, quick walk (None: walk it
    exactly) and the key prefixes its rows are checked against (None: all kept)."""

    offset: int
    payload: bytes
    walk: IntArray | None
    checks: list[bytes] | None


@dataclass(frozen=True)
class _IndexBlock:
    """A non-root index block: entries located by its secondary offsets, each
    cut out only when asked for."""

    payload: bytes
    secondary: tuple[int, ...]  # where each entry starts, then where the last ends (from `base`)
    base: int

    def __len__(self) -> int:
        return len(self.secondary) - 1

    def entry(self, i: int) -> IndexEntry:
        start, end = self.base + self.secondary[i], self.base + self.secondary[i + 1]
        block_offset, size = struct.unpack_from(">qi", self.payload, start)
        return IndexEntry(self.payload[start + 12 : end], block_offset, size)

    def row(self, i: int) -> bytes:
        return row_of_key(self.payload[self.base + self.secondary[i] + 12 : self.base + self.secondary[i + 1]])

    def entries(self) -> list[IndexEntry]:
        return [self.entry(i) for i in range(len(self))]


class HFileReader:
    def __init__(self, read_at: ReadAt, size: int, path: str, on_close: Callable[[], None] | None = None) -> None:
        self._read_at = read_at
        self._on_close = on_close
        self.size = size
        self.path = path
        self.blocks_read = 0
        self._lock = threading.Lock()
        self._count_lock = threading.Lock()
        self._block_cache: OrderedDict[int, tuple[list[bytes], list[bytes]]] = OrderedDict()
        # groups of blocks being inflated ahead of a scan that will ask for them (`prefetch_covering`), by their offsets
        self._ahead: dict[tuple[int, ...], Future[list[tuple[bytes, IntArray | None]]]] = {}
        self.trailer = self._read_trailer()
        codec = self.trailer.compression_codec
        if codec not in (CODEC_GZ, CODEC_NONE):
            raise HudiFormatError(path, f"HFile compression codec {CODEC_NAMES.get(codec, codec)} is not supported (GZ and NONE are)")
        self._load_on_open()
        self._data_index: list[IndexEntry] | None = None
        self._leaves: dict[int, _IndexBlock] = {}  # two-level index: leaf blocks read so far
        self._root_rows: list[bytes] | None = None
        self._row_array: npt.NDArray[np.bytes_] | Literal[False] | None = None  # `_index_row_array` (False: not usable)
        # the blocks of the last few prefix lists: a streamed run asks for its blocks to read them ahead, then to read them
        self._covering: OrderedDict[tuple[bytes, ...], list[IndexEntry]] = OrderedDict()
        self._covering_lock = threading.Lock()

    # Opening -----------------------------------------------------------------------------
    @classmethod
    def from_bytes(cls, data: bytes, path: str = "<memory>") -> HFileReader:
        return cls(lambda offset, length: data[offset : offset + length], len(data), path)

    @classmethod
    def open(cls, storage: Storage, relative: str) -> HFileReader:
        """Random-access reader on a file in a Storage (reads on demand)."""
        handle = storage.open_ranges(relative)
        lock = threading.Lock()

        def read_at(offset: int, length: int) -> bytes:
            with lock:
                return handle.read_at(length, offset)

        try:
            return cls(read_at, handle.size(), storage.full_path(relative), on_close=handle.close)
        except BaseException:
            handle.close()
            raise

    def close(self) -> None:
        """Release the file handle (readers made from bytes hold none)."""
        if self._on_close is not None:
            self._on_close()
            self._on_close = None

    def _read(self, offset: int, length: int, what: str) -> bytes:
        if offset < 0 or length < 0 or offset + length > self.size:
            raise HudiFormatError(self.path, f"{what} ({length} bytes) runs past the end of the file ({self.size} bytes)", offset=offset)
        data = self._read_at(offset, length)
        if len(data) != length:
            raise HudiFormatError(self.path, f"short read of {what}", offset=offset)
        return data

    def _read_trailer(self) -> Trailer:
        if self.size < TRAILER_SIZE:
            raise HudiFormatError(self.path, f"file of {self.size} bytes is smaller than an HFile v3 trailer ({TRAILER_SIZE})")
        start = self.size - TRAILER_SIZE
        data = self._read(start, TRAILER_SIZE, "trailer")
        if data[:8] != TRAILER_MAGIC:
            raise HudiFormatError(self.path, f"HFile trailer magic missing (found {data[:8]!r})", offset=start)
        (version,) = struct.unpack(">i", data[-4:])
        major, minor = version & 0x00FFFFFF, (version >> 24) & 0xFF
        if major != 3:
            raise HudiFormatError(self.path, f"HFile major version {major} is not supported (only 3)", offset=self.size - 4)
        try:
            length, pos = decode_varint(data, 8)
            trailer = Trailer.parse_proto(data[pos : pos + length])
        except (ValueError, IndexError, struct.error) as exc:
            raise HudiFormatError(self.path, f"HFile trailer does not decode ({exc})", offset=start) from None
        trailer.major_version, trailer.minor_version = major, minor
        return trailer

    def _block(self, offset: int, expected_magic: tuple[bytes, ...]) -> tuple[BlockHeader, bytes, int]:
        """(header, uncompressed payload, offset after the block)."""
        header_bytes = self._read(offset, HEADER_SIZE, "block header")
        header = self._header(header_bytes, offset, expected_magic)
        raw = self._read(offset + HEADER_SIZE, header.on_disk_size_without_header, f"{header.magic.decode()} block")
        payload = self._payload(header, header_bytes + raw, offset)
        return header, payload, offset + HEADER_SIZE + header.on_disk_size_without_header

    def _header(self, header_bytes: bytes | memoryview, offset: int, expected_magic: tuple[bytes, ...]) -> BlockHeader:
        header = BlockHeader.parse(header_bytes)
        if header.magic not in expected_magic:
            raise HudiFormatError(
                self.path, f"expected a {' or '.join(m.decode() for m in expected_magic)} block, found {header.magic!r}", offset=offset
            )
        payload_size = header.on_disk_data_size_with_header - HEADER_SIZE
        if payload_size < 0 or payload_size > header.on_disk_size_without_header:
            raise HudiFormatError(self.path, f"block sizes disagree ({header})", offset=offset)
        if header.uncompressed_size_without_header > MAX_BLOCK_BYTES:
            raise HudiFormatError(self.path, f"block declares {header.uncompressed_size_without_header} bytes inflated, more than "
                                  f"{MAX_BLOCK_BYTES} (HUDI_BRIDGE_MAX_BLOCK_BYTES); not inflated", offset=offset)
        return header

    def _payload(self, header: BlockHeader, block: bytes | memoryview, offset: int) -> bytes:
        """A block's payload from its bytes on disk (header first): checked, then inflated."""
        self._verify_checksums(header, block, offset)
        with self._count_lock:
            self.blocks_read += 1
        return self._decompress(block[HEADER_SIZE : header.on_disk_data_size_with_header], header, offset)

    def _inflated_natively(self, span: bytes, entries: list[IndexEntry], tail: int | None) -> list[tuple[bytes, IntArray | None]] | None:
        """The payloads and walks of a stretch of data blocks read as `span`,
        by one compiled call (`_cells.inflate_blocks`: checksums, inflate and
        walk with the GIL let go once); None where it is not built or a block
        is not plain (the Python path then reads the same bytes, and names a
        damaged block)."""
        codec = self.trailer.compression_codec
        if codec not in (CODEC_NONE, CODEC_GZ) or not native.inflates_blocks():
            return None
        assert native.cells is not None
        first = entries[0].offset
        inflated = native.cells.inflate_blocks(span, np.array([entry.offset - first for entry in entries], dtype=np.int64),
                                               np.array([entry.on_disk_size for entry in entries], dtype=np.int64),
                                               0 if codec == CODEC_NONE else 1, -1 if tail is None else tail)
        if inflated is None:
            return None
        with self._count_lock:
            self.blocks_read += len(entries)
        return [(payload, None if walk is None else np.frombuffer(walk, dtype=np.int64).reshape(-1, 2)) for payload, walk in inflated]

    def _stretch_span(self, entries: list[IndexEntry]) -> bytes | None:
        """A stretch of blocks lying end to end read at once; None when its
        index entries say sizes that cannot be (each block is then read on its own)."""
        first, last = entries[0], entries[-1]
        end = last.offset + last.on_disk_size
        if end > self.size or any(e.on_disk_size < HEADER_SIZE for e in entries):
            return None
        return self._read(first.offset, end - first.offset, "data blocks")

    def _stretch_payloads(self, entries: list[IndexEntry], span: bytes | None = None) -> list[bytes]:
        """Blocks lying end to end, read at once (or given as `span`: as a
        writer leaves them, and on a local disk two reads a block cost more than
        inflating it); a block whose header does not say the size its index
        entry does is read on its own, which names the fault."""
        if span is None:
            if len(entries) == 1 or (span := self._stretch_span(entries)) is None:
                return [self._block(e.offset, (DATA_MAGIC,))[1] for e in entries]
        view, first = memoryview(span), entries[0].offset
        payloads = []
        for entry in entries:
            block = view[entry.offset - first : entry.offset - first + entry.on_disk_size]
            header = self._header(block, entry.offset, (DATA_MAGIC,))  # a wrong magic refuses as a read of this block alone
            if HEADER_SIZE + header.on_disk_size_without_header != entry.on_disk_size:
                payloads.append(self._block(entry.offset, (DATA_MAGIC,))[1])
            else:
                payloads.append(self._payload(header, block, entry.offset))
        return payloads

    def _verify_checksums(self, header: BlockHeader, block: bytes | memoryview, offset: int) -> None:
        if header.checksum_type not in (CHECKSUM_CRC32, CHECKSUM_CRC32C) or header.bytes_per_checksum <= 0:
            return  # checksum type 0: nothing to verify (Hudi 1.1's own writer)
        data_end = header.on_disk_data_size_with_header
        expected = block_checksums(block[:data_end], header.bytes_per_checksum, header.checksum_type)
        if block[data_end : data_end + len(expected)] != expected:
            raise HudiFormatError(self.path, f"{header.magic.decode()} block fails its checksum (damaged file)", offset=offset)

    def _decompress(self, raw: bytes | memoryview, header: BlockHeader, offset: int) -> bytes:
        if self.trailer.compression_codec == CODEC_NONE:
            payload = bytes(raw)
        else:
            try:
                # the inflater reads the gzip header and checks the CRC in C (gzip.decompress does both
                # in Python, holding the GIL the reading-ahead threads share); several members: gzip's way.
                # Its output is sized from the header (a byte more shows a longer block) and it lets the GIL
                # go once: zlib's interface grows its output from 16 KiB, taking the GIL back at each step
                inflater = igzip_lib.IgzipDecompressor(flag=igzip_lib.DECOMP_GZIP)
                payload = inflater.decompress(raw, header.uncompressed_size_without_header + 1)
                if inflater.unused_data or not inflater.eof:
                    payload = gunzip_at_most(raw, header.uncompressed_size_without_header + 1)
            except (OSError, EOFError, zlib.error, _ISAL_ERROR) as exc:
                raise HudiFormatError(self.path, f"GZ block does not decompress ({exc})", offset=offset) from None
        if len(payload) != header.uncompressed_size_without_header:
            raise HudiFormatError(
                self.path, f"block decompressed to {len(payload)} bytes, header says {header.uncompressed_size_without_header}", offset=offset
            )
        return payload

    def _load_on_open(self) -> None:
        offset = self.trailer.load_on_open_data_offset
        _, root, offset = self._block(offset, (ROOT_INDEX_MAGIC,))
        self._root_entries = self._parse_root_index(root, self.trailer.data_index_count)
        _, meta, offset = self._block(offset, (ROOT_INDEX_MAGIC,))
        self.meta_index = {e.first_row: e for e in self._parse_root_index(meta, self.trailer.meta_index_count)}
        _, info, _ = self._block(self.trailer.file_info_offset or offset, (FILE_INFO_MAGIC,))
        try:
            self.file_info = decode_file_info(info)
        except ValueError as exc:
            raise HudiFormatError(self.path, f"file info block does not decode ({exc})", offset=self.trailer.file_info_offset) from None
        self.includes_tags = MAX_TAGS_KEY in self.file_info
        version = self.file_info.get(KEY_VALUE_VERSION_KEY)
        self.includes_mvcc = version is None or (len(version) == 4 and struct.unpack(">i", version)[0] >= 1)

    def _parse_root_index(self, payload: bytes, count: int) -> list[IndexEntry]:
        entries = []
        pos = 0
        try:
            for _ in range(count):
                offset, size = struct.unpack_from(">qi", payload, pos)
                pos += 12
                length, pos = decode_writable_vint(payload, pos)
                entries.append(IndexEntry(payload[pos : pos + length], offset, size))
                pos += length
        except struct.error:
            raise HudiFormatError(self.path, f"root index block holds fewer than {count} entries") from None
        return entries

    def _parse_non_root_index(self, payload: bytes, offset: int) -> _IndexBlock:
        try:
            (count,) = struct.unpack_from(">i", payload, 0)
            secondary = struct.unpack_from(f">{count + 1}i", payload, 4) if count >= 0 else ()
        except struct.error:
            secondary = ()
        base = 4 + 4 * len(secondary)
        if not secondary or base + secondary[-1] > len(payload) or (np.diff(secondary) < 12).any():  # 12: a block's offset and size
            raise HudiFormatError(self.path, "index block's entry offsets do not fit it", offset=offset)
        return _IndexBlock(payload, secondary, base)

    def _leaf(self, i: int) -> _IndexBlock:
        """The i-th child of the root index of a two-level index, read once."""
        with self._lock:
            leaf = self._leaves.get(i)
        if leaf is None:
            entry = self._root_entries[i]
            _, payload, _ = self._block(entry.offset, (LEAF_INDEX_MAGIC,))
            leaf = self._parse_non_root_index(payload, entry.offset)
            with self._lock:
                self._leaves[i] = leaf
        return leaf

    # Index -------------------------------------------------------------------------------------
    @property
    def data_index(self) -> list[IndexEntry]:
        """Every data block with its first (possibly shortened) key, in order."""
        if self._data_index is None:
            entries = self._all_index_entries()
            with self._lock:
                if self._data_index is None:
                    self._index_rows = [row_of_key(e.first_row) for e in entries]
                    self._data_index = entries
        return self._data_index

    def _all_index_entries(self) -> list[IndexEntry]:
        if self.trailer.num_data_index_levels == 2:  # the leaves lookups have read are reused
            return [e for i in range(len(self._root_entries)) for e in self._leaf(i).entries()]
        entries = self._root_entries
        for _ in range(self.trailer.num_data_index_levels - 1):
            children: list[IndexEntry] = []
            for entry in entries:
                _, payload, _ = self._block(entry.offset, (INTERMEDIATE_INDEX_MAGIC, LEAF_INDEX_MAGIC))
                children.extend(self._parse_non_root_index(payload, entry.offset).entries())
            entries = children
        return entries

    def _blocks_from(self, row: bytes) -> Iterator[IndexEntry]:
        """The data blocks in order from the one that can hold `row` on. In a
        two-level index whose whole list nobody asked for yet, only the leaf
        index blocks walked are read, and of those only the keys a binary
        search compares are cut out (a lister's cold lookup of two keys)."""
        with self._lock:
            flat = self._data_index is not None
        if flat or self.trailer.num_data_index_levels != 2 or not self._root_entries:
            index = self.data_index
            for i in range(self._start_block(row), len(index)):
                yield index[i]
            return
        if self._root_rows is None:
            self._root_rows = [row_of_key(e.first_row) for e in self._root_entries]
        at_leaf = max(0, bisect_right(self._root_rows, row) - 1)
        leaf = self._leaf(at_leaf)
        at = bisect_right(range(len(leaf)), row, key=leaf.row) - 1
        if at < 0 and at_leaf > 0:  # the row sorts before this leaf's first key: the previous leaf's last block
            at_leaf -= 1
            leaf = self._leaf(at_leaf)
            at = len(leaf) - 1
        at = max(at, 0)
        while True:
            for i in range(at, len(leaf)):
                yield leaf.entry(i)
            at_leaf += 1
            if at_leaf >= len(self._root_entries):
                return
            leaf, at = self._leaf(at_leaf), 0

    def _data_block(self, entry: IndexEntry) -> tuple[list[bytes], list[bytes]]:
        """Rows and values of a data block, parsed once (LRU of recent blocks)."""
        with self._lock:
            cached = self._block_cache.get(entry.offset)
            if cached is not None:
                self._block_cache.move_to_end(entry.offset)
                return cached
        _, payload, _ = self._block(entry.offset, (DATA_MAGIC,))
        rows: list[bytes] = []
        values: list[bytes] = []
        for row, value in self._cells(payload, entry.offset):
            rows.append(row)
            values.append(value)
        with self._lock:
            self._block_cache[entry.offset] = (rows, values)
            while len(self._block_cache) > BLOCK_CACHE_SIZE:
                self._block_cache.popitem(last=False)
        return rows, values

    def _cells(self, payload: bytes, offset: int) -> Iterator[tuple[bytes, bytes]]:
        for start, value_start, value_length in self._cell_positions(payload, offset):
            (row_length,) = struct.unpack_from(">h", payload, start + 8)
            yield payload[start + 10 : start + 10 + row_length], payload[value_start : value_start + value_length]

    def _cell_positions(self, payload: bytes, offset: int) -> Iterator[tuple[int, int, int]]:
        """(start, value start, value length) of each cell, walking tags and MVCC versions exactly."""
        pos = 0
        end = len(payload)
        while pos < end:
            start = pos
            if pos + 8 > end:
                raise HudiFormatError(self.path, "data block ends inside a cell header", offset=offset)
            key_length, value_length = struct.unpack_from(">ii", payload, pos)
            pos += 8
            if key_length < 2 or value_length < 0 or pos + key_length + value_length > end:
                raise HudiFormatError(self.path, f"cell of key {key_length} and value {value_length} bytes runs past its block", offset=offset)
            (row_length,) = struct.unpack_from(">h", payload, pos)
            if row_length < 0 or row_length + 2 > key_length:
                raise HudiFormatError(self.path, f"cell row of {row_length} bytes does not fit its key of {key_length}", offset=offset)
            pos += key_length + value_length
            if self.includes_tags:
                (tags_length,) = struct.unpack_from(">h", payload, pos)
                pos += 2 + tags_length
            if self.includes_mvcc:
                _, pos = decode_writable_vint(payload, pos)
            yield start, start + 8 + key_length, value_length

    # Queries -------------------------------------------------------------------------------------
    @property
    def entry_count(self) -> int:
        return self.trailer.entry_count

    def schema_json(self) -> str | None:
        value = self.file_info.get(b"schema")
        return value.decode("utf-8") if value is not None else None

    def iter_all(self) -> Iterator[tuple[bytes, bytes]]:
        """Every (row, value) in key order (blocks are not cached: a scan reads each once)."""
        for entry in self.data_index:
            _, payload, _ = self._block(entry.offset, (DATA_MAGIC,))
            yield from self._cells(payload, entry.offset)

    def _start_block(self, row: bytes) -> int:
        self.data_index  # noqa: B018 - loads the index and the row list
        return max(0, bisect_right(self._index_rows, row) - 1)

    def scan_prefix(self, prefix: bytes) -> Iterator[tuple[bytes, bytes]]:
        """Cells whose row starts with `prefix`, reading only blocks that can hold them."""
        for entry in self._blocks_from(prefix):
            rows, values = self._data_block(entry)
            for j in range(bisect_left(rows, prefix), len(rows)):
                if not rows[j].startswith(prefix):
                    return
                yield rows[j], values[j]

    def scan_prefixes(self, prefixes: list[bytes]) -> Iterator[tuple[bytes, bytes]]:
        """Cells matching any prefix, in key order; each block is read at most once."""
        for prefix in covering_prefixes(prefixes):
            yield from self.scan_prefix(prefix)

    # Columnar scans ------------------------------------------------------------------------
    def blocks_for(self, prefixes: list[bytes] | None) -> list[tuple[IndexEntry, list[bytes] | None]]:
        """Data blocks that can hold rows starting with one of the prefixes
        (every block when None), in order, each with the prefixes its rows
        must be checked against; None when every row of it matches: its index
        row and the next block's both start with a prefix, and its rows lie
        between the two."""
        if prefixes is None:
            return [(entry, None) for entry in self.data_index]
        checks: dict[int, tuple[IndexEntry, list[bytes] | None]] = {}  # by block offset (blocks lie in key order)
        for prefix in covering_prefixes(prefixes):
            blocks = self._blocks_from(prefix)
            entry = next(blocks, None)
            row = row_of_key(entry.first_row) if entry is not None else b""
            while entry is not None:
                following = next(blocks, None)
                following_row = row_of_key(following.first_row) if following is not None else None
                if row.startswith(prefix) and following_row is not None and following_row.startswith(prefix):
                    checks[entry.offset] = (entry, None)
                else:
                    block_checks = checks.setdefault(entry.offset, (entry, []))[1]
                    if block_checks is not None:
                        block_checks.append(prefix)
                if following_row is None or not following_row.startswith(prefix):
                    break  # later blocks start past every row with the prefix
                entry, row = following, following_row
        return [checks[offset] for offset in sorted(checks)]

    def blocks_covering(self, prefixes: list[bytes] | None) -> list[IndexEntry]:
        """The data blocks that can hold a row starting with one of the
        prefixes (every block when None), each once, in order. A streamed plan
        asks for thousands of partitions' prefixes at once: each gives the
        blocks from the one holding where its rows would start to the last
        starting before every row past them, found by two binary searches of
        the block index, all prefixes at once in numpy."""
        index = self.data_index
        if prefixes is None:
            return list(index)
        if not prefixes or not index:
            return []
        asked = tuple(prefixes)
        with self._covering_lock:
            known = self._covering.get(asked)
        if known is not None:
            return list(known)
        found = self._blocks_covering(prefixes)
        with self._covering_lock:
            self._covering[asked] = found
            while len(self._covering) > COVERINGS_KEPT:
                self._covering.popitem(last=False)
        return list(found)

    def _blocks_covering(self, prefixes: list[bytes]) -> list[IndexEntry]:
        index = self.data_index
        rows = self._index_row_array()
        if rows is None or b"\x00" in b"".join(prefixes):  # numpy pads with NULs: such rows would sort apart from bytes
            return self._blocks_covering_in_python(prefixes)
        wanted = np.array(prefixes, dtype=np.bytes_)
        first = np.maximum(np.searchsorted(rows, wanted, side="right") - 1, 0)
        last = np.full(len(prefixes), len(index) - 1, dtype=np.int64)
        width = wanted.dtype.itemsize
        matrix = wanted.view(np.uint8).reshape(len(prefixes), width)
        if sum(map(len, prefixes)) == width * len(prefixes) and (matrix[:, -1] < 0xFF).all():  # one width (a run's keys): successors in place
            past = matrix.copy()
            past[:, -1] += 1
            last[:] = np.searchsorted(rows, past.view(wanted.dtype).ravel(), side="left") - 1
        else:
            successors = [prefix_successor(p) for p in prefixes]
            bounded = np.flatnonzero([s is not None for s in successors])
            if len(bounded):
                last[bounded] = np.searchsorted(rows, np.array([successors[i] for i in bounded.tolist()], dtype=np.bytes_), side="left") - 1
        stop = np.minimum(np.maximum(first, last) + 1, len(index))
        # the union of the ranges [first, stop): +1 where one opens, -1 where one closes
        depth = np.cumsum(np.bincount(first, minlength=len(index) + 1) - np.bincount(stop, minlength=len(index) + 1))
        return [index[i] for i in np.flatnonzero(depth[: len(index)] > 0).tolist()]

    def _index_row_array(self) -> npt.NDArray[np.bytes_] | None:
        """The block index's rows as one numpy bytes array, made once; None
        when a row holds a NUL byte."""
        if self._row_array is None:
            self.data_index  # noqa: B018 - loads the index and the row list
            rows = self._index_rows
            self._row_array = np.array(rows, dtype=np.bytes_) if rows and not any(b"\x00" in r for r in rows) else False
        return self._row_array if isinstance(self._row_array, np.ndarray) else None

    def _blocks_covering_in_python(self, prefixes: list[bytes]) -> list[IndexEntry]:
        """`blocks_covering` with bisect, a prefix at a time (the reference)."""
        index = self.data_index
        rows = self._index_rows
        found: set[int] = set()
        for prefix in covering_prefixes(prefixes):
            first = self._start_block(prefix)  # the block holding where the prefix's rows would start
            past = prefix_successor(prefix)
            last = len(index) - 1 if past is None else bisect_left(rows, past) - 1  # the last block starting before every row past them
            found.update(range(first, max(first, last) + 1))
        return [index[i] for i in sorted(found) if i < len(index)]

    def scan_chunks(self, prefixes: list[bytes] | None, chunk_bytes: int = CHUNK_BYTES, check: bool = True,
                    offsets: tuple[int, int] | None = None) -> Iterator[CellChunk]:
        """The cells whose rows start with one of the prefixes (all when None),
        in key order, as CellChunks of about `chunk_bytes` of blocks each.
        Without `check`, every cell of the blocks that can hold such rows
        (for a caller that filters rows itself). Blocks are read and
        inflated ahead by worker threads."""
        blocks: list[tuple[IndexEntry, list[bytes] | None]] = self.blocks_for(prefixes) if check else [
            (entry, None) for entry in self.blocks_covering(prefixes)]
        if offsets is not None:  # a shard of the file: the blocks starting in [start, stop)
            blocks = [(entry, checks) for entry, checks in blocks if offsets[0] <= entry.offset < offsets[1]]
        return self._chunks_of(blocks, chunk_bytes)

    def blocks_holding(self, rows: list[bytes]) -> list[IndexEntry]:
        """The data blocks that can hold these exact rows, each once, in
        order: one binary search per row in the block index (a 100,000-key
        lookup touches each block once, in one sorted pass)."""
        index = self.data_index
        found = sorted({max(0, bisect_right(self._index_rows, row) - 1) for row in rows}) if index else []
        return [index[i] for i in found]

    def scan_rows(self, rows: list[bytes], chunk_bytes: int = CHUNK_BYTES) -> Iterator[CellChunk]:
        """Every cell of the blocks that can hold these exact rows (the caller keeps the rows it wants)."""
        return self._chunks_of([(entry, None) for entry in self.blocks_holding(rows)], chunk_bytes)

    def _chunks_of(self, blocks: list[tuple[IndexEntry, list[bytes] | None]], chunk_bytes: int) -> Iterator[CellChunk]:
        pending: list[_Block] = []
        size = 0
        for (entry, checks), (payload, walk) in zip(blocks, self._inflated([entry for entry, _ in blocks])):
            pending.append(_Block(entry.offset, payload, walk, checks))
            size += len(payload)
            if size >= chunk_bytes:
                yield self._chunk(pending)
                pending, size = [], 0
        if pending:
            yield self._chunk(pending)

    def _chunk(self, blocks: list[_Block]) -> CellChunk:
        """The cells of inflated blocks as one chunk: walked quickly (as they
        were inflated), then checked together; walked exactly when the quick
        walk does not fit them."""
        tail = self._fixed_tail()
        walks = [b.walk for b in blocks if b.walk is not None]
        if tail is not None and len(walks) == len(blocks):
            chunk = lay_out_blocks([b.payload for b in blocks], walks, tail, self.path)
            if chunk is not None:
                return self._select(chunk, [len(w) for w in walks], [b.checks for b in blocks])
        return self._exact_chunk(blocks)

    def _fixed_tail(self) -> int | None:
        """What follows every cell's value for the quick walk: a one-byte MVCC
        vint or nothing; None with tags (of their own length: walked exactly)."""
        return None if self.includes_tags else 1 if self.includes_mvcc else 0

    def _exact_chunk(self, blocks: list[_Block]) -> CellChunk:
        starts: list[int] = []
        value_starts: list[int] = []
        value_lengths: list[int] = []
        counts = []
        shift = 0
        for block in blocks:
            payload = block.payload
            cells = list(self._cell_positions(payload, block.offset))
            for start, value_start, value_length in cells:
                starts.append(start + shift)
                value_starts.append(value_start + shift)
                value_lengths.append(value_length)
            counts.append(len(cells))
            shift += len(payload)
        chunk = CellChunk.from_layout(b"".join([*(b.payload for b in blocks), ZEROS]), np.asarray(starts, dtype=np.int64),
                                      np.asarray(value_starts, dtype=np.int64), np.asarray(value_lengths, dtype=np.int64), self.path)
        return self._select(chunk, counts, [b.checks for b in blocks])

    @staticmethod
    def _select(chunk: CellChunk, counts: list[int], checks: list[list[bytes] | None]) -> CellChunk:
        """The chunk's cells whose rows match their block's prefixes."""
        if all(c is None for c in checks):
            return chunk
        # A row matching any of the query's prefixes matches one its block was given (that prefix's rows reach into the block).
        checked = np.repeat(np.array([c is not None for c in checks]), counts)
        rows = np.flatnonzero(checked)
        keep = ~checked
        keep[rows] = chunk.take(rows).rows_with_any_prefix(sorted({p for c in checks if c is not None for p in c}))
        return chunk.take(np.flatnonzero(keep))

    def prefetch_covering(self, prefixes: list[bytes] | None) -> None:
        """Start inflating the blocks a loose scan of these prefixes
        (`scan_chunks(prefixes, check=False)`) will read, on the reading
        threads, behind what they are already doing: a caller that knows its
        next scan keeps them busy across its scans. The same thread then
        scans; a group asked for twice is inflated once."""
        for group in _groups(self.blocks_covering(prefixes), PREFETCH_GROUP):
            if len(self._ahead) >= PREFETCH_GROUPS:
                return  # a scan that never came (a failed plan) holds no more than this
            key = tuple(entry.offset for entry in group)
            if key not in self._ahead:
                self._ahead[key] = _decompress_pool().submit(self._payloads, group)

    def _inflated(self, entries: list[IndexEntry]) -> Iterator[tuple[bytes, IntArray | None]]:
        """Payloads of these data blocks, in order, each with its quick walk
        (`walk_cells`; None when it does not fit); worker threads read,
        inflate and walk groups of blocks ahead (a group per task keeps the
        hand-offs, each waiting for the GIL, few), unless a prefetch started
        them all already."""
        keys = [tuple(entry.offset for entry in group) for group in _groups(entries, PREFETCH_GROUP)]
        if keys and all(key in self._ahead for key in keys):
            for key in keys:
                yield from self._ahead.pop(key).result()
            return
        if len(entries) <= INFLATE_GROUP:
            yield from self._payloads(entries)
            return
        for payloads in read_ahead(_decompress_pool(), _groups(entries), self._payloads, INFLATE_AHEAD):
            yield from payloads

    def _payloads(self, entries: list[IndexEntry]) -> list[tuple[bytes, IntArray | None]]:
        """Data blocks' payloads and walks, a stretch at a time: read once, by
        the compiled call where it takes them, else by the Python path."""
        tail = self._fixed_tail()
        found: list[tuple[bytes, IntArray | None]] = []
        for stretch in _stretches(entries):
            span = self._stretch_span(stretch) if len(entries) >= NATIVE_INFLATE_FROM and native.inflates_blocks() else None
            inflated = None if span is None else self._inflated_natively(span, stretch, tail)
            found += inflated if inflated is not None else [
                (p, None if tail is None else walk_cells(p, tail)) for p in self._stretch_payloads(stretch, span)]
        return found

    def get(self, row: bytes) -> bytes | None:
        for found, value in self.scan_prefix(row):
            if found == row:
                return value
            if found > row:
                break
        return None
