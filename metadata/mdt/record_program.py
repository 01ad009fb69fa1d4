"""A writer schema compiled for the compiled record decoder (`_cells.c`).

The decoder walks int64 nodes: a node's opcode, then its operands, where a
child is the index of another node. Paths are named as `columnar` names
them (record fields joined with ".", a union's branch index at `path + "|"`
and its branches below `path + "|" + name`, a map's or array's entries in
the space `path + "{}"`, keys at `.key`, items at `.value`), so the two
decoders' results are read by the same code.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any

import numpy as np
import numpy.typing as npt


class Op(IntEnum):
    """Node opcodes, as `_cells.c` numbers them."""

    NULL = 0
    LONG = 1  # path
    BOOL = 2  # path
    FLOAT = 3  # path
    DOUBLE = 4  # path
    SPAN = 5  # path
    FIXED = 6  # path, size
    RECORD = 7  # field count, field nodes
    UNION = 8  # path of the branch index, branch count, branch nodes
    ENTRIES = 9  # space path, keyed, key path (or -1), item node


class Kind(IntEnum):
    """What a path holds, as `_cells.c` numbers it (and `Decoded` keeps it)."""

    INTS = 0
    BOOLS = 1
    FLOATS = 2
    SPAN = 3
    OWNER = 4  # a map's or array's space: per entry, the row that holds it
    SKIP = 5  # decoded and not kept: a path the caller does not read


class NotCompiled(Exception):
    """A schema the compiled decoder does not take (a recursive type, an unknown type)."""


@dataclass
class RecordProgram:
    nodes: npt.NDArray[np.int64]
    paths: list[str]
    kinds: npt.NDArray[np.int64]
    names: tuple[str, ...]  # per path, as errors name it


@dataclass
class _Compiler:
    read: tuple[str, ...] | None = None  # prefixes of the paths kept (None: all)
    nodes: list[int] = field(default_factory=list)
    paths: dict[str, int] = field(default_factory=dict)
    kinds: list[int] = field(default_factory=list)
    named: dict[str, Any] = field(default_factory=dict)

    def path(self, name: str, kind: Kind) -> int:
        if kind != Kind.OWNER and self.read is not None and not name.startswith(self.read):
            kind = Kind.SKIP  # spaces stay: their entries are numbered for the paths below them
        if name not in self.paths:
            self.paths[name] = len(self.kinds)
            self.kinds.append(kind)
        elif self.kinds[self.paths[name]] != kind:
            raise NotCompiled(f"{name}: two kinds of value at one path")
        return self.paths[name]

    def emit(self, *operands: int) -> int:
        self.nodes.extend(operands)
        return len(self.nodes) - len(operands)

    def compile(self, schema: Any, path: str, expanding: tuple[str, ...]) -> int:
        if isinstance(schema, str):
            if schema in self.named:
                if schema in expanding:
                    raise NotCompiled(f"{path}: recursive type {schema}")
                return self.compile(self.named[schema], path, expanding)
            return self.primitive(schema, path)
        if isinstance(schema, list):
            at = self.emit(Op.UNION, self.path(path + "|", Kind.INTS), len(schema), *([0] * len(schema)))
            for k, branch in enumerate(schema):
                self.nodes[at + 3 + k] = self.compile(branch, f"{path}|{branch_name(branch)}", expanding)
            return at
        kind = schema["type"]
        if kind == "record":
            self.named[schema["name"]] = schema
            fields = schema["fields"]
            at = self.emit(Op.RECORD, len(fields), *([0] * len(fields)))
            for i, f in enumerate(fields):
                self.nodes[at + 2 + i] = self.compile(f["type"], f"{path}.{f['name']}" if path else f["name"],
                                                      (*expanding, schema["name"]))
            return at
        if kind in ("map", "array"):
            space = path + "{}"
            keyed = kind == "map"
            at = self.emit(Op.ENTRIES, self.path(space, Kind.OWNER), int(keyed), self.path(space + ".key", Kind.SPAN) if keyed else -1, 0)
            self.nodes[at + 4] = self.compile(schema["values"] if keyed else schema["items"], space + ".value", expanding)
            return at
        if kind == "enum":
            self.named[schema["name"]] = schema
            return self.emit(Op.LONG, self.path(path, Kind.INTS))
        if kind == "fixed":
            self.named[schema["name"]] = schema
            return self.emit(Op.FIXED, self.path(path, Kind.SPAN), int(schema["size"]))
        return self.compile(kind, path, expanding)  # {"type": "long", "logicalType": ...}

    def primitive(self, kind: str, path: str) -> int:
        if kind == "null":
            return self.emit(Op.NULL)
        if kind in ("int", "long"):
            return self.emit(Op.LONG, self.path(path, Kind.INTS))
        if kind == "boolean":
            return self.emit(Op.BOOL, self.path(path, Kind.BOOLS))
        if kind in ("float", "double"):
            return self.emit(Op.FLOAT if kind == "float" else Op.DOUBLE, self.path(path, Kind.FLOATS))
        if kind in ("string", "bytes"):
            return self.emit(Op.SPAN, self.path(path, Kind.SPAN))
        raise NotCompiled(f"{path}: Avro type {kind!r}")


def short_name(name: str) -> str:
    return name.rsplit(".", 1)[-1]


def branch_name(branch: Any) -> str:
    """How a union branch is named in paths: its (short) type name."""
    if isinstance(branch, str):
        return short_name(branch)
    if isinstance(branch, dict) and "name" in branch:
        return short_name(branch["name"])
    if isinstance(branch, dict):
        return str(branch["type"])
    return "union"


def compile_schema(parsed_schema: Any, read: tuple[str, ...] | None = None) -> RecordProgram:
    """The program of a (fastavro-parsed) writer schema; its root is node 0.
    With `read`, only paths starting with one of those prefixes are kept."""
    compiler = _Compiler(read)
    compiler.compile(parsed_schema, "", ())
    paths = list(compiler.paths)
    names = tuple(p[:-1] if p.endswith("|") else p for p in paths)  # a union is named by its own path
    return RecordProgram(np.array(compiler.nodes, dtype=np.int64), paths, np.array(compiler.kinds, dtype=np.int64), names)


__all__ = ["Kind", "NotCompiled", "Op", "RecordProgram", "branch_name", "compile_schema", "short_name"]
