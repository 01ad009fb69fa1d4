"""Vectorised Avro decoding of many metadata records at once.

The per-record decoder (`records.decode_record`, fastavro) costs about 9 µs
a record plus the objects it builds; a column_stats read of a million files
and two columns is two million records. Here the records stay where the
HFile blocks hold them (one buffer, a start and an end per record) and are
decoded a schema field at a time for every record together: varints,
strings, floats and union branches become arrays, strings become Arrow
arrays copied by Arrow.

Maps and arrays are decoded in lock step: entry j of every record that has
one, for j = 0, 1, ...; each entry becomes a row of its own space (path +
"{}"), whose `owners` are the rows of the enclosing record. Records with
more entries than LOCKSTEP_ENTRIES are left to the reference decoder
(Unsupported), as one long map is what fastavro decodes fastest.

Where the compiled helpers were built (`native`), `decode_spans` decodes a
record at a time in C instead (`columnar_compiled`), into the same paths (`record_program`); it
numbers entries record by record, and reads long maps itself. The numpy
decoder stays the reference it is tested against.

Results are keyed by path: record fields join with ".", a union's branch
index is at `path + "|"` and its branch values below `path + "|" + name`,
a map's keys at `path + "{}.key"` and values below `path + "{}.value"`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from metadata.mdt.columnar_compiled import decode_compiled, program_of
from metadata.mdt.decoded import Decoded, Unsupported
from metadata.mdt.hfile_cells import PADDING
from metadata.mdt.native import cells as _native
from metadata.mdt.record_program import branch_name

IntArray = npt.NDArray[np.int64]
LOCKSTEP_ENTRIES = 1024  # entries of one map above which fastavro decodes the records instead
# Records decoded together: each field step is a few numpy calls over the
# group, so larger groups pay Python's share less often. 8192 once decoded
# fastest (its bytes stayed in the CPU cache); since the read path's pool
# keeps its pages, a million files' cold plan is 0.2 s faster at 65,536
# (two runs each: 3.82 and 3.88 s at 8192, 3.59 and 3.68 s here).
GROUP_RECORDS = 65536


def _joined(parts: list[npt.NDArray[Any]]) -> npt.NDArray[Any]:
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


class _Decoder:
    def __init__(self, buffer: npt.NDArray[np.uint8], starts: IntArray, lengths: IntArray) -> None:
        if len(starts) and int((starts + lengths).max()) > len(buffer) - PADDING:
            raise ValueError("records run past their buffer")
        self.buf = buffer
        self.starts = starts.astype(np.int64, copy=False)
        self.lengths = lengths
        self.count = len(starts)
        self.parts: dict[str, list[tuple[str, IntArray, Any]]] = {}
        self.entries: dict[str, int] = {}
        self.named: dict[str, Any] = {}
        # The group being decoded (see _run_group): its records' positions and ends, and all of them.
        self.pos = self.ends = self.every = np.zeros(0, dtype=np.int64)

    def run(self, schema: Any) -> Decoded:
        for first in range(0, self.count, GROUP_RECORDS) if self.count else [0]:
            self._run_group(schema, first, min(first + GROUP_RECORDS, self.count))
        out = Decoded(self.count, self.buf, entries=dict(self.entries))
        for path, parts in self.parts.items():
            kind = parts[0][0]
            out.present[path] = _joined([rows for _, rows, _ in parts])
            if kind == "span":
                out.spans[path] = (_joined([v[0] for _, _, v in parts]), _joined([v[1] for _, _, v in parts]))
            elif kind == "owner":
                out.owners[path] = _joined([v for _, _, v in parts])
            else:
                getattr(out, kind)[path] = _joined([v for _, _, v in parts])
        return out

    def _run_group(self, schema: Any, first: int, stop: int) -> None:
        """Decode records first..stop-1 (indexed 0.. within the group); their
        results go to rows first..stop-1, entry rows count on across groups."""
        self.pos = self.starts[first:stop].copy()
        self.ends = self.pos + self.lengths[first:stop]
        self.every = np.arange(stop - first, dtype=np.int64)  # `idx is self.every`: all records, positions used as they are
        self.decode(schema, self.every, self.every + first, "")
        if not np.array_equal(self.pos, self.ends):
            bad = int(np.flatnonzero(self.pos != self.ends)[0])
            raise ValueError(f"record {first + bad} does not end where its value ends ({int(self.pos[bad])} vs {int(self.ends[bad])})")

    def _add(self, path: str, kind: str, rows: IntArray, values: Any) -> None:
        self.parts.setdefault(path, []).append((kind, rows, values))

    # Positions of the records being decoded (all of them, mostly: no gathers then) -----------
    def _at(self, idx: IntArray) -> IntArray:
        return self.pos.copy() if idx is self.every else self.pos[idx]

    def _end(self, idx: IntArray) -> IntArray:
        return self.ends if idx is self.every else self.ends[idx]

    def _move(self, idx: IntArray, new: IntArray) -> None:
        if idx is self.every:
            self.pos = new
        else:
            self.pos[idx] = new

    # Primitives --------------------------------------------------------------------------
    def _varint(self, idx: IntArray) -> IntArray:
        """Zigzag varints at the records' positions: one byte for all, then
        another only for those whose last byte said more."""
        p = self._at(idx)
        byte = self.buf[p]
        more = np.flatnonzero(byte >= 0x80)
        if not more.size:  # one byte each (union branches, small counts and lengths): no 64-bit assembly
            end = p + 1
            if (end > self._end(idx)).any():
                raise ValueError("a varint runs past its record")
            self._move(idx, end)
            small = byte.astype(np.int64)
            return (small >> 1) ^ -(small & 1)
        raw = (byte & 0x7F).astype(np.uint64)
        length = np.ones(len(idx), dtype=np.int64)
        shift = 7
        while more.size:
            if shift > 63:
                raise ValueError("a varint is longer than 10 bytes")
            byte = self.buf[p[more] + length[more]]
            raw[more] |= (byte & 0x7F).astype(np.uint64) << np.uint64(shift)
            length[more] += 1
            more = more[byte >= 0x80]
            shift += 7
        end = p + length
        if (end > self._end(idx)).any():
            raise ValueError("a varint runs past its record")
        self._move(idx, end)
        return (raw >> np.uint64(1)).astype(np.int64) ^ -(raw & np.uint64(1)).astype(np.int64)

    def _fixed_bytes(self, idx: IntArray, size: int) -> npt.NDArray[np.uint8]:
        p = self._at(idx)
        if (p + size > self._end(idx)).any():
            raise ValueError("a fixed-size value runs past its record")
        self._move(idx, p + size)
        if size == 1:
            return self.buf[p][:, None]
        return np.ascontiguousarray(self.buf[p[:, None] + np.arange(size)])

    def _span(self, idx: IntArray, rows: IntArray, path: str) -> None:
        lengths = self._varint(idx)
        starts = self._at(idx)
        if (lengths < 0).any() or (starts + lengths > self._end(idx)).any():
            raise ValueError("a string or bytes value runs past its record")
        self._move(idx, starts + lengths)
        self._add(path, "span", rows, (starts, lengths))

    # Schema walk ---------------------------------------------------------------------------
    def decode(self, schema: Any, idx: IntArray, rows: IntArray, path: str) -> None:
        """Decode `schema` at the positions of records `idx`; results go to `rows`."""
        if isinstance(schema, str):
            if schema in self.named:
                return self.decode(self.named[schema], idx, rows, path)
            return self._primitive(schema, idx, rows, path)
        if isinstance(schema, list):
            return self._union(schema, idx, rows, path)
        kind = schema["type"]
        if kind == "record":
            self.named[schema["name"]] = schema
            for f in schema["fields"]:
                self.decode(f["type"], idx, rows, f"{path}.{f['name']}" if path else f["name"])
            return None
        if kind in ("map", "array"):
            return self._entries(schema["values"] if kind == "map" else schema["items"], kind == "map", idx, rows, path)
        if kind == "enum":
            self.named[schema["name"]] = schema
            self._add(path, "ints", rows, self._varint(idx))
            return None
        if kind == "fixed":
            self.named[schema["name"]] = schema
            p = self._at(idx)
            self._fixed_bytes(idx, schema["size"])
            self._add(path, "span", rows, (p, np.full(len(idx), schema["size"], dtype=np.int64)))
            return None
        return self.decode(kind, idx, rows, path)  # {"type": "long", "logicalType": ...}

    def _entries(self, item: Any, keyed: bool, idx: IntArray, rows: IntArray, path: str) -> None:
        """A map's or array's blocks, each entry decoded in lock step across records."""
        space = path + "{}"
        self.entries.setdefault(space, 0)
        while len(idx):
            counts = self._varint(idx)
            negative = counts < 0
            if negative.any():  # a negative count is followed by the block's byte size
                self._varint(idx[negative])
                counts = np.abs(counts)
            going = counts > 0
            idx, rows, counts = idx[going], rows[going], counts[going]
            if not len(idx):
                return
            if int(counts.max()) > LOCKSTEP_ENTRIES:
                raise Unsupported(f"{path}: a {'map' if keyed else 'array'} of {int(counts.max())} entries")
            for j in range(int(counts.max())):
                step = counts > j
                at = idx[step]
                first = self.entries[space]
                entry_rows = np.arange(first, first + len(at), dtype=np.int64)
                self.entries[space] = first + len(at)
                self._add(space, "owner", entry_rows, rows[step])
                if keyed:
                    self._span(at, entry_rows, space + ".key")
                self.decode(item, at, entry_rows, space + ".value")

    def _primitive(self, kind: str, idx: IntArray, rows: IntArray, path: str) -> None:
        if kind == "null":
            return
        if kind in ("int", "long"):
            self._add(path, "ints", rows, self._varint(idx))
        elif kind == "boolean":
            self._add(path, "bools", rows, self._fixed_bytes(idx, 1)[:, 0] != 0)
        elif kind == "float":
            self._add(path, "floats", rows, self._fixed_bytes(idx, 4).view("<f4")[:, 0].astype(np.float64))
        elif kind == "double":
            self._add(path, "floats", rows, self._fixed_bytes(idx, 8).view("<f8")[:, 0].copy())
        elif kind in ("string", "bytes"):
            self._span(idx, rows, path)
        else:
            raise Unsupported(f"{path}: Avro type {kind!r}")

    def _union(self, branches: list[Any], idx: IntArray, rows: IntArray, path: str) -> None:
        if not len(idx):
            return
        chosen = self._varint(idx)
        if (chosen < 0).any() or (chosen >= len(branches)).any():
            raise ValueError(f"{path}: union branch out of range")
        self._add(path + "|", "ints", rows, chosen)
        taken = np.flatnonzero(np.bincount(chosen, minlength=len(branches))).tolist()
        for k in taken:
            branch = branches[k]
            if len(taken) == 1:  # every record took this branch: the same records go on (often all of them)
                self.decode(branch, idx, rows, f"{path}|{branch_name(branch)}")
            else:
                picked = chosen == k
                self.decode(branch, idx[picked], rows[picked], f"{path}|{branch_name(branch)}")


def decode_spans(buffer: npt.NDArray[np.uint8], starts: IntArray, lengths: IntArray, parsed_schema: Any,
                 read: tuple[str, ...] | None = None) -> Decoded:
    """Decode the records at buffer[start : start + length] with the
    (fastavro-parsed) writer schema; `buffer` ends with PADDING zero bytes.
    Compiled (`_cells.c`, a record at a time) where it was built, else a
    field at a time with numpy; the same results, but that the compiled
    decoder numbers map and array entries record by record. Raises
    Unsupported for shapes left to the reference decoder and ValueError for
    bytes that do not decode. `read`: the prefixes of the paths the caller
    reads; the compiled decoder keeps only those (the numpy one keeps all)."""
    if len(starts) and int((starts + lengths).max()) > len(buffer) - PADDING:
        raise ValueError("records run past their buffer")
    if _native is not None and len(starts):
        program = program_of(parsed_schema, read)
        if program is not None:
            decoded = decode_compiled(program, buffer, starts, lengths)
            if decoded is not None:
                return decoded
    return decode_spans_with_numpy(buffer, starts, lengths, parsed_schema)


def decode_spans_with_numpy(buffer: npt.NDArray[np.uint8], starts: IntArray, lengths: IntArray, parsed_schema: Any) -> Decoded:
    """`decode_spans` a field at a time with numpy (the reference for the compiled decoder)."""
    return _Decoder(buffer, starts, lengths).run(parsed_schema)


def decode_many(values: list[bytes], parsed_schema: Any) -> Decoded:
    """`decode_spans` of values given one by one."""
    lengths = np.fromiter((len(v) for v in values), dtype=np.int64, count=len(values))
    starts = np.cumsum(lengths) - lengths
    buffer = np.frombuffer(b"".join([*values, bytes(PADDING)]), dtype=np.uint8)
    return decode_spans(buffer, starts, lengths, parsed_schema)
