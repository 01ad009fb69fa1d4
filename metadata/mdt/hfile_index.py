"""The HFile's block index (root, intermediate and leaf index blocks) and
its load-on-open section: which data blocks can hold a row, a prefix or
thousands of prefixes at once, reading only the index blocks a lookup
walks."""

from __future__ import annotations

import struct
import threading
from bisect import bisect_left, bisect_right
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

from metadata.errors import HudiFormatError
from metadata.mdt.hfile_blocks import COVERINGS_KEPT, HFileBlocks, IndexEntry, ReadAt
from metadata.mdt.hfile_format import (
    FILE_INFO_MAGIC,
    INTERMEDIATE_INDEX_MAGIC,
    LEAF_INDEX_MAGIC,
    ROOT_INDEX_MAGIC,
    decode_file_info,
    decode_writable_vint,
    row_of_key,
)

MAX_TAGS_KEY = b"hfile.MAX_TAGS_LEN"
KEY_VALUE_VERSION_KEY = b"KEY_VALUE_VERSION"


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


class HFileIndex(HFileBlocks):
    """Blocks found through the index."""

    def __init__(self, read_at: ReadAt, size: int, path: str, on_close: Callable[[], None] | None = None) -> None:
        super().__init__(read_at, size, path, on_close)
        self._load_on_open()
        self._data_index: list[IndexEntry] | None = None
        self._leaves: dict[int, _IndexBlock] = {}  # two-level index: leaf blocks read so far
        self._root_rows: list[bytes] | None = None
        self._row_array: npt.NDArray[np.bytes_] | Literal[False] | None = None  # `_index_row_array` (False: not usable)
        # the blocks of the last few prefix lists: a streamed run asks for its blocks to read them ahead, then to read them
        self._covering: OrderedDict[tuple[bytes, ...], list[IndexEntry]] = OrderedDict()
        self._covering_lock = threading.Lock()

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

    def _start_block(self, row: bytes) -> int:
        self.data_index  # noqa: B018 - loads the index and the row list
        return max(0, bisect_right(self._index_rows, row) - 1)

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

    def blocks_holding(self, rows: list[bytes]) -> list[IndexEntry]:
        """The data blocks that can hold these exact rows, each once, in
        order: one binary search per row in the block index (a 100,000-key
        lookup touches each block once, in one sorted pass)."""
        index = self.data_index
        found = sorted({max(0, bisect_right(self._index_rows, row) - 1) for row in rows}) if index else []
        return [index[i] for i in found]

