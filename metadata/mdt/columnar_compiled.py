"""Many metadata records decoded by the compiled helper (`_cells.c`), a
record at a time, into the columns the numpy decoder gives (`columnar`):
one program per writer schema and the paths read, made once."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from metadata.mdt.decoded import Decoded, IntArray
from metadata.mdt.native import cells as _native
from metadata.mdt.native import int64s, lets_gil_go
from metadata.mdt.record_program import Kind, NotCompiled, RecordProgram, compile_schema
from metadata.util.arrow_memory import steady_heap

# (id of a parsed schema, paths read) -> (the schema, kept alive so that its id stays its own; its program)
_PROGRAMS: dict[tuple[int, tuple[str, ...] | None], tuple[Any, RecordProgram | None]] = {}


def program_of(parsed_schema: Any, read: tuple[str, ...] | None) -> RecordProgram | None:
    held = _PROGRAMS.get((id(parsed_schema), read))
    if held is None or held[0] is not parsed_schema:
        try:
            program: RecordProgram | None = compile_schema(parsed_schema, read)
        except NotCompiled:
            program = None
        held = _PROGRAMS[(id(parsed_schema), read)] = (parsed_schema, program)
    return held[1]


def decode_compiled(program: RecordProgram, buffer: npt.NDArray[np.uint8], starts: IntArray, lengths: IntArray) -> Decoded | None:
    """The compiled decoder's columns as `Decoded` (None: left to numpy)."""
    assert _native is not None
    steady_heap()  # the decoded columns come from the C heap: reused, not mapped and unmapped each time
    # The GIL is let go off the main thread (a plan's run read ahead): the main thread evaluates meanwhile.
    found = _native.decode_records(buffer, int64s(starts), int64s(lengths), program.nodes, program.kinds, program.names, lets_gil_go())
    if found is None:
        return None
    columns, entries = found
    out = Decoded(len(starts), buffer)
    every = np.arange(len(starts), dtype=np.int64)  # the rows of a path every record has (most), shared
    for path, kind, column, count in zip(program.paths, program.kinds.tolist(), columns, entries):
        if kind == Kind.OWNER and count >= 0:
            out.entries[path] = count
        if column is None:  # no record has it, or it is not read
            continue
        if column[0] is not None:
            out.present[path] = np.frombuffer(column[0], dtype=np.int64)
        else:  # rows 0, 1, 2, ...: all records, or the first entries of a space
            size = len(memoryview(column[1])) // 8
            out.present[path] = every[:size] if size <= len(every) else np.arange(size, dtype=np.int64)
        if kind == Kind.INTS:
            out.ints[path] = np.frombuffer(column[1], dtype=np.int64)
        elif kind == Kind.BOOLS:
            out.bools[path] = np.frombuffer(column[1], dtype=np.int64) != 0
        elif kind == Kind.FLOATS:
            out.floats[path] = np.frombuffer(column[1], dtype=np.float64)
        elif kind == Kind.SPAN:
            out.spans[path] = (np.frombuffer(column[1], dtype=np.int64), np.frombuffer(column[2], dtype=np.int64))
        else:
            out.owners[path] = np.frombuffer(column[1], dtype=np.int64)
    return out
