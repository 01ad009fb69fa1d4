"""Vectorised Avro decoding of many metadata records at once.

The per-record decoder (`records.decode_record`, fastavro) costs about 9 µs
a record plus the objects it builds; a column_stats read of a million files
and two columns is two million records. Here the values of all records are
laid end to end in one numpy buffer and decoded a schema field at a time for
every record together: varints, strings, floats and union branches become
arrays. Records whose shape this does not handle (a map or array with
entries) are reported, and callers decode those with the reference decoder.

Results are keyed by path: record fields join with ".", a union's branch
index is at `path + "|"` and its branch values below `path + "|" + name`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

IntArray = npt.NDArray[np.int64]
_WINDOW = np.arange(10, dtype=np.int64)
_SHIFTS = (7 * np.arange(10)).astype(np.uint64)


class Unsupported(Exception):
    """A value shape the vectorised decoder leaves to the reference decoder."""


@dataclass
class Decoded:
    """Per path: values for the records in `present[path]` (record indexes)."""

    count: int
    present: dict[str, IntArray] = field(default_factory=dict)
    ints: dict[str, IntArray] = field(default_factory=dict)
    floats: dict[str, npt.NDArray[np.float64]] = field(default_factory=dict)
    bools: dict[str, npt.NDArray[np.bool_]] = field(default_factory=dict)
    spans: dict[str, tuple[IntArray, IntArray]] = field(default_factory=dict)  # (start, length) into the buffer
    buffer: bytes = b""

    def strings(self, path: str) -> list[str | None]:
        """The decoded strings of a path, aligned to all records (None where absent)."""
        out: list[str | None] = [None] * self.count
        if path in self.spans:
            starts, lengths = self.spans[path]
            data = self.buffer
            for index, start, length in zip(self.present[path].tolist(), starts.tolist(), lengths.tolist()):
                out[index] = data[start : start + length].decode("utf-8")
        return out

    def raw_bytes(self, path: str) -> list[bytes | None]:
        out: list[bytes | None] = [None] * self.count
        if path in self.spans:
            starts, lengths = self.spans[path]
            for index, start, length in zip(self.present[path].tolist(), starts.tolist(), lengths.tolist()):
                out[index] = self.buffer[start : start + length]
        return out


def short_name(name: str) -> str:
    return name.rsplit(".", 1)[-1]


class _Decoder:
    def __init__(self, values: list[bytes]) -> None:
        lengths = np.fromiter((len(v) for v in values), dtype=np.int64, count=len(values))
        self.ends = np.cumsum(lengths)
        self.pos = self.ends - lengths
        self.data = b"".join(values)
        self.buf = np.frombuffer(self.data + b"\x00" * 16, dtype=np.uint8)
        self.out = Decoded(len(values), buffer=self.data)
        self.named: dict[str, Any] = {}

    def run(self, schema: Any) -> Decoded:
        self.decode(schema, np.arange(self.out.count, dtype=np.int64), "")
        if not np.array_equal(self.pos, self.ends):
            bad = int(np.flatnonzero(self.pos != self.ends)[0])
            raise ValueError(f"record {bad} does not end where its value ends ({int(self.pos[bad])} vs {int(self.ends[bad])})")
        return self.out

    # Primitives --------------------------------------------------------------------------
    def _varint(self, idx: IntArray) -> IntArray:
        p = self.pos[idx]
        window = self.buf[p[:, None] + _WINDOW]
        more = window >= 0x80
        length = np.argmin(more, axis=1) + 1
        if more[np.arange(len(idx)), length - 1].any() or (p + length > self.ends[idx]).any():
            raise ValueError("a varint runs past its record")
        payload = (window & 0x7F).astype(np.uint64) << _SHIFTS
        payload[_WINDOW[None, :] >= length[:, None]] = 0
        raw = np.bitwise_or.reduce(payload, axis=1)
        self.pos[idx] = p + length
        return (raw >> np.uint64(1)).astype(np.int64) ^ -(raw & np.uint64(1)).astype(np.int64)

    def _fixed_bytes(self, idx: IntArray, size: int) -> npt.NDArray[np.uint8]:
        p = self.pos[idx]
        if (p + size > self.ends[idx]).any():
            raise ValueError("a fixed-size value runs past its record")
        self.pos[idx] = p + size
        return np.ascontiguousarray(self.buf[p[:, None] + np.arange(size)])

    def _span(self, idx: IntArray, path: str) -> None:
        lengths = self._varint(idx)
        starts = self.pos[idx]
        if (lengths < 0).any() or (starts + lengths > self.ends[idx]).any():
            raise ValueError("a string or bytes value runs past its record")
        self.pos[idx] = starts + lengths
        self.out.present[path] = idx
        self.out.spans[path] = (starts, lengths)

    # Schema walk ---------------------------------------------------------------------------
    def decode(self, schema: Any, idx: IntArray, path: str) -> None:
        if isinstance(schema, str):
            if schema in self.named:
                return self.decode(self.named[schema], idx, path)
            return self._primitive(schema, idx, path)
        if isinstance(schema, list):
            return self._union(schema, idx, path)
        kind = schema["type"]
        if kind == "record":
            self.named[schema["name"]] = schema
            for f in schema["fields"]:
                self.decode(f["type"], idx, f"{path}.{f['name']}" if path else f["name"])
            return None
        if kind in ("map", "array"):
            if len(idx):
                counts = self._varint(idx)
                if (counts != 0).any():
                    raise Unsupported(f"{path}: a {kind} with entries")
            return None
        if kind == "enum":
            self.named[schema["name"]] = schema
            self.out.present[path] = idx
            self.out.ints[path] = self._varint(idx)
            return None
        if kind == "fixed":
            self.named[schema["name"]] = schema
            p = self.pos[idx]
            self._fixed_bytes(idx, schema["size"])
            self.out.present[path] = idx
            self.out.spans[path] = (p, np.full(len(idx), schema["size"], dtype=np.int64))
            return None
        return self.decode(kind, idx, path)  # {"type": "long", "logicalType": ...}

    def _primitive(self, kind: str, idx: IntArray, path: str) -> None:
        if kind == "null":
            return
        self.out.present[path] = idx
        if kind in ("int", "long"):
            self.out.ints[path] = self._varint(idx)
        elif kind == "boolean":
            self.out.bools[path] = self._fixed_bytes(idx, 1)[:, 0] != 0
        elif kind == "float":
            self.out.floats[path] = self._fixed_bytes(idx, 4).view("<f4")[:, 0].astype(np.float64)
        elif kind == "double":
            self.out.floats[path] = self._fixed_bytes(idx, 8).view("<f8")[:, 0].copy()
        elif kind in ("string", "bytes"):
            self._span(idx, path)
        else:
            raise Unsupported(f"{path}: Avro type {kind!r}")

    def _union(self, branches: list[Any], idx: IntArray, path: str) -> None:
        if not len(idx):
            return
        chosen = self._varint(idx)
        if (chosen < 0).any() or (chosen >= len(branches)).any():
            raise ValueError(f"{path}: union branch out of range")
        self.out.present[path + "|"] = idx
        self.out.ints[path + "|"] = chosen
        for k in np.unique(chosen).tolist():
            branch = branches[k]
            self.decode(branch, idx[chosen == k], f"{path}|{branch_name(branch)}")


def branch_name(branch: Any) -> str:
    if isinstance(branch, str):
        return short_name(branch)
    if isinstance(branch, dict) and "name" in branch:
        return short_name(branch["name"])
    if isinstance(branch, dict):
        return str(branch["type"])
    return "union"


def decode_many(values: list[bytes], parsed_schema: Any) -> Decoded:
    """Decode every value with the (fastavro-parsed) writer schema.
    Raises Unsupported for shapes left to the reference decoder and
    ValueError for bytes that do not decode."""
    return _Decoder(values).run(parsed_schema)
