"""Which keys a metadata-table read asks for (`KeyQuery`: all, exact keys or
prefixes), and the cells of a base HFile a query selects, left undecoded
until asked for (`RawCells`: columnar chunks, or records)."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from functools import cached_property

import numpy as np
import pyarrow.compute as pc

from metadata.mdt.hfile_cells import CellChunk
from metadata.mdt.hfile_reader import HFileReader
from metadata.mdt.records import MetadataRecord, decode_record
from metadata.util import arrow_values
from metadata.util.arrow_values import to_numpy

FEW_KEYS = 16  # exact-key reads up to this many look keys up one by one


class KeyQuery:
    """Which keys to read: all, exact keys, or key prefixes. A `loose` prefix
    query's columnar scans also give the other cells of the blocks they read
    (for a caller that keeps only the rows it wants, such as a stats pivot
    keeping its listing's files); log-merged keys always match exactly."""

    def __init__(self, keys: Iterable[str] | None = None, prefixes: Iterable[str] | None = None, loose: bool = False) -> None:
        self.keys = None if keys is None else set(keys)
        self.prefixes = None if prefixes is None else sorted(set(prefixes))
        self.loose = loose

    def scan_prefixes(self) -> list[bytes] | None:
        """Row prefixes covering the query (None: every row); exact keys are
        their own prefixes and need an exact check after. Made once: a
        streamed plan asks for a run's twice (to read ahead, then to read)."""
        return self._scan_prefixes

    @cached_property
    def _scan_prefixes(self) -> list[bytes] | None:
        if self.keys is not None:
            return sorted(k.encode("utf-8") for k in self.keys)
        if self.prefixes is not None:
            return [p.encode("utf-8") for p in self.prefixes]
        return None

    def scan(self, reader: HFileReader) -> Iterator[tuple[bytes, bytes]]:
        if self.keys is not None:
            wanted = {k.encode("utf-8") for k in self.keys}
            for row, value in reader.scan_prefixes(sorted(wanted)):
                if row in wanted:
                    yield row, value
        elif self.prefixes is not None:
            yield from reader.scan_prefixes([p.encode("utf-8") for p in self.prefixes])
        else:
            yield from reader.iter_all()

    def matches(self, key: str) -> bool:
        if self.keys is not None:
            return key in self.keys
        if self.prefixes is not None:
            covering = self._covering
            at = bisect_right(covering, key) - 1  # no covering prefix starts another: only the nearest below can match
            return at >= 0 and key.startswith(covering[at])
        return True

    @cached_property
    def _covering(self) -> list[str]:
        """The prefixes no shorter one covers, sorted."""
        covering: list[str] = []
        for prefix in self.prefixes or []:
            if not covering or not prefix.startswith(covering[-1]):
                covering.append(prefix)
        return covering


@dataclass
class RawCells:
    """Undecoded records of one base HFile that a query selects, read as
    CellChunks when asked (keys in `dropped` left out), with the writer schema."""

    reader: HFileReader
    query: KeyQuery
    schema_json: str
    dropped: frozenset[str] = frozenset()

    @property
    def where(self) -> str:
        return self.reader.path

    def chunks(self, offsets: tuple[int, int] | None = None) -> Iterator[CellChunk]:
        """The selected cells, in key order, a few MiB of blocks at a time
        (only of the blocks starting in `offsets`, when given: a shard)."""
        rows = None if self.query.keys is None else sorted(k.encode("utf-8") for k in self.query.keys)
        exact = None if rows is None else arrow_values.binaries(rows)
        dropped = arrow_values.binaries(sorted(k.encode("utf-8") for k in self.dropped)) if self.dropped else None
        # exact keys are filtered below: the blocks that can hold them are read whole
        scanned = self.reader.scan_chunks(self.query.scan_prefixes(), offsets=offsets, check=not self.query.loose) if rows is None \
            else self.reader.scan_rows(rows)
        for chunk in scanned:
            if exact is not None or dropped is not None:
                held = chunk.rows()
                keep = np.ones(len(chunk), dtype=bool)
                if exact is not None:
                    keep &= to_numpy(pc.is_in(held, value_set=exact))
                if dropped is not None:
                    keep &= ~to_numpy(pc.is_in(held, value_set=dropped))
                chunk = chunk.take(np.flatnonzero(keep))
            if len(chunk):
                yield chunk

    def records_of(self, wanted: Iterable[str] | None = None) -> dict[str, MetadataRecord]:
        """Decoded records of the wanted keys this file holds (all selected when None)."""
        if wanted is None and self.query.keys is not None and len(self.query.keys) <= FEW_KEYS:
            wanted = sorted(self.query.keys)  # a few seeks beat a columnar scan
        if wanted is not None:
            keys = [k for k in wanted if k not in self.dropped and self.query.matches(k)]
            if len(keys) > FEW_KEYS:  # each block that can hold them read once, not a block per key
                return replace(self, query=KeyQuery(keys=keys)).records_of()
            found = {}
            for key in keys:
                value = self.reader.get(key.encode("utf-8"))
                if value is not None:
                    found[key] = decode_record(key, value, self.schema_json, self.where)
            return found
        records = {}
        for chunk in self.chunks():
            for key, value in zip(chunk.key_list(), chunk.value_list()):
                records[key] = decode_record(key, value, self.schema_json, self.where)
        return records

    def value_of(self, key: str) -> bytes | None:
        """The undecoded value of one selected key, if this file holds it."""
        if key in self.dropped or not self.query.matches(key):
            return None
        return self.reader.get(key.encode("utf-8"))

    def without(self, dropped: Iterable[str]) -> RawCells:
        return replace(self, dropped=self.dropped | frozenset(dropped))
