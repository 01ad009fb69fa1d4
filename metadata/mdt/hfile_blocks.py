"""HFile v3 blocks: the trailer, block headers, checksums and inflating,
read one at a time or a stretch at a time ahead of a scan (on worker
threads, by the compiled helper where it is built). `HFileIndex` adds the
block index on top, `HFileReader` the cells."""

from __future__ import annotations

import os
import struct
import threading
import zlib
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TypeVar, cast

import numpy as np
from isal import igzip_lib  # ISA-L's inflate: twice zlib's speed on these blocks

from metadata.errors import HudiFormatError
from metadata.mdt import native
from metadata.mdt.hfile_cells import IntArray, walk_cells
from metadata.mdt.hfile_format import (
    CHECKSUM_CRC32,
    CHECKSUM_CRC32C,
    CODEC_GZ,
    CODEC_NAMES,
    CODEC_NONE,
    DATA_MAGIC,
    HEADER_SIZE,
    TRAILER_MAGIC,
    TRAILER_SIZE,
    BlockHeader,
    Trailer,
    block_checksums,
    decode_varint,
)
from metadata.storage.storage import Storage
from metadata.util.read_ahead import read_ahead

_ISAL_ERROR = cast(type[Exception], igzip_lib.IsalError)  # its stub calls the class an instance

ReadAt = Callable[[int, int], bytes]
Reader = TypeVar("Reader", bound="HFileBlocks")

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


@dataclass(frozen=True)
class IndexEntry:
    first_row: bytes
    offset: int
    on_disk_size: int


class HFileBlocks:
    """An HFile's bytes as blocks: read, checked and inflated."""

    def __init__(self, read_at: ReadAt, size: int, path: str, on_close: Callable[[], None] | None = None) -> None:
        self._read_at = read_at
        self._on_close = on_close
        self.size = size
        self.path = path
        self.blocks_read = 0
        self._lock = threading.Lock()
        self._count_lock = threading.Lock()
        # groups of blocks being inflated ahead of a scan that will ask for them (`prefetch_covering`), by their offsets
        self._ahead: dict[tuple[int, ...], Future[list[tuple[bytes, IntArray | None]]]] = {}
        self._ahead_lock = threading.Lock()
        self.trailer = self._read_trailer()
        codec = self.trailer.compression_codec
        if codec not in (CODEC_GZ, CODEC_NONE):
            raise HudiFormatError(path, f"HFile compression codec {CODEC_NAMES.get(codec, codec)} is not supported (GZ and NONE are)")
        # what follows each cell's value, from the file info (`HFileIndex` reads it on open)
        self.includes_tags = False
        self.includes_mvcc = True

    # Opening -----------------------------------------------------------------------------
    @classmethod
    def from_bytes(cls: type[Reader], data: bytes, path: str = "<memory>") -> Reader:
        return cls(lambda offset, length: data[offset : offset + length], len(data), path)

    @classmethod
    def open(cls: type[Reader], storage: Storage, relative: str) -> Reader:
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

    # Inflating ahead -------------------------------------------------------------------------
    def _fixed_tail(self) -> int | None:
        """What follows every cell's value for the quick walk: a one-byte MVCC
        vint or nothing; None with tags (of their own length: walked exactly)."""
        return None if self.includes_tags else 1 if self.includes_mvcc else 0

    def blocks_covering(self, prefixes: list[bytes] | None) -> list[IndexEntry]:
        raise NotImplementedError  # the block index's (`HFileIndex`)

    def prefetch_covering(self, prefixes: list[bytes] | None) -> None:
        """Start inflating the blocks a loose scan of these prefixes
        (`scan_chunks(prefixes, check=False)`) will read, on the reading
        threads, behind what they are already doing: a caller that knows its
        next scan keeps them busy across its scans. The same thread then
        scans; a group asked for twice is inflated once."""
        for group in _groups(self.blocks_covering(prefixes), PREFETCH_GROUP):
            key = tuple(entry.offset for entry in group)
            with self._ahead_lock:  # a reader is shared by the plans running at once (a service's)
                if len(self._ahead) >= PREFETCH_GROUPS:
                    return  # a scan that never came (a failed plan) holds no more than this
                if key not in self._ahead:
                    self._ahead[key] = _decompress_pool().submit(self._payloads, group)

    def _inflated(self, entries: list[IndexEntry]) -> Iterator[tuple[bytes, IntArray | None]]:
        """Payloads of these data blocks, in order, each with its quick walk
        (`walk_cells`; None when it does not fit); worker threads read,
        inflate and walk groups of blocks ahead (a group per task keeps the
        hand-offs, each waiting for the GIL, few), unless a prefetch started
        them all already."""
        keys = [tuple(entry.offset for entry in group) for group in _groups(entries, PREFETCH_GROUP)]
        with self._ahead_lock:  # taken whole or not at all: another plan's scan of the same blocks may take them first
            ahead = [self._ahead.pop(key) for key in keys] if keys and all(key in self._ahead for key in keys) else None
        if ahead is not None:
            for started in ahead:
                yield from started.result()
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

