"""A million strings compared without hashing them one by one.

Arrow hashes every string into a table (0.2 to 0.5 s at a million keys
here). Instead each string gets a 64-bit fingerprint computed with numpy,
and the fingerprints are sorted or hashed as integers. Equal strings always
share a fingerprint, so nothing equal is missed; strings that merely share
one are told apart exactly, by Arrow.

- `all_distinct`: strings of one byte width (metadata-table keys) are rows
  of a byte matrix, fingerprinted whole.
- `prefix_index`: which of some prefixes of one width (metadata-table
  ids) each string starts with, by a compiled binary search, skipped while
  the prefix repeats.
- `starts_with_any`: whether strings start with one of such prefixes; by
  `prefix_index` where compiled, else for widths from 9 to 16 bytes two
  8-byte words read in place cover the prefix, and both are compared, so
  the answer is exact.
- `index_in`: file names (24 bytes and more; Hudi's are about 80) are
  fingerprinted from their length and five 8-byte words read in place at
  their head and tail, where Hudi's names differ (file id; instant), and
  every match is then compared in full. Padding names to one width instead
  cost as much as Arrow's string `index_in`.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from metadata.mdt import native
from metadata.util.arrow_memory import READ_POOL
from metadata.util.arrow_values import from_numpy, to_numpy

_FNV_PRIME = np.uint64(0x100000001B3)
_WORD = 8
_HEAD_WORDS = 3  # a Hudi file name's first 24 bytes: its file id
_TAIL_WORDS = 2  # its last 16: the end of its instant, and the extension
_SHORTEST = _WORD * _HEAD_WORDS  # shorter strings are matched by Arrow (every word must lie inside its string)


def fixed_width(values: pa.Array) -> npt.NDArray[np.uint8] | None:
    """String or binary values as rows of a byte matrix when all have one
    width and none is null, else None."""
    count = len(values)
    if count == 0 or values.null_count:
        return None
    offsets = _offsets(values)
    width = int(offsets[1] - offsets[0])
    if width == 0 or not (np.diff(offsets) == width).all():
        return None
    data = np.frombuffer(values.buffers()[2], dtype=np.uint8)
    return data[int(offsets[0]) : int(offsets[-1])].reshape(count, width)


def fingerprints(matrix: npt.NDArray[np.uint8]) -> npt.NDArray[np.uint64]:
    """A 64-bit FNV-style fingerprint of each row."""
    count, width = matrix.shape
    fingerprint = np.zeros(count, dtype=np.uint64)
    with np.errstate(over="ignore"):
        whole = width // 8
        rows = np.ascontiguousarray(matrix)  # a view already when it came from fixed_width
        for i in range(whole):  # 8-byte words read in place, one column of them at a time
            word = np.ndarray((count,), dtype="<u8", buffer=rows, offset=8 * i, strides=(width,))
            fingerprint = (fingerprint ^ word) * _FNV_PRIME
        for i in range(whole * 8, width):
            fingerprint = (fingerprint ^ matrix[:, i].astype(np.uint64)) * _FNV_PRIME
    return fingerprint


def all_distinct(values: pa.Array) -> bool:
    """Whether no value repeats: compiled, by a merge of its ascending runs
    when there are a few (a pivot's identities: each metadata file group's in
    key order; 0.4 ms a run of 25,000, against 1.3 ms hashed), else
    each string finds itself first (`_compiled_index_in` of the values in
    themselves); else by numpy fingerprints, a shared one settled by Arrow
    exactly."""
    count = len(values)
    if count < 2:
        return True
    if native.cells is not None and values.type == pa.string() and values.null_count == 0:
        merged = native.cells.distinct_in_runs([_string_buffers(values)], True)
        if merged >= 0:
            return bool(merged)
    compiled = _compiled_index_in(values, values)
    if compiled is not None:  # a pivot's identities: 0.5 ms a run of 25,000, 2.8 ms fingerprinted and sorted
        return bool((to_numpy(compiled, null=-1) == np.arange(count)).all())
    matrix = fixed_width(values)
    if matrix is not None:
        ordered = np.sort(fingerprints(matrix))
        if not (ordered[1:] == ordered[:-1]).any():
            return True
    return bool(pc.count_distinct(values).as_py() == count)


def _name_fingerprints(values: pa.Array) -> npt.NDArray[np.uint64] | None:
    """A fingerprint of each string from its length and its head and tail
    words; None when one is null or shorter than _SHORTEST bytes."""
    if values.null_count or not pa.types.is_string(values.type):
        return None
    count = len(values)
    if count == 0:
        return np.zeros(0, dtype=np.uint64)
    offsets = _offsets(values)
    starts, ends = offsets[:-1], offsets[1:]
    lengths = ends - starts
    if int(lengths.min()) < _SHORTEST:
        return None
    words = _words_at_every_byte(np.frombuffer(values.buffers()[2], dtype=np.uint8))
    fingerprint = lengths.astype(np.uint64)
    with np.errstate(over="ignore"):
        for at in [starts + _WORD * i for i in range(_HEAD_WORDS)] + [ends - _WORD * i for i in range(_TAIL_WORDS, 0, -1)]:
            fingerprint = (fingerprint ^ words[at]) * _FNV_PRIME
    return fingerprint


def starts_with_any(values: pa.Array | pa.ChunkedArray, prefixes: pa.Array) -> npt.NDArray[np.bool_] | None:
    """Per value, whether it starts with one of `prefixes` (a string or
    binary array) of one width: compiled for strings (`prefix_index`), else
    by words for widths from 9 to 16 bytes; None (ask Arrow) for other
    widths, nulls, or two prefixes sharing their first 8 bytes."""
    compiled = prefix_index(values, prefixes.to_pylist()) if prefixes.null_count == 0 and pa.types.is_string(prefixes.type) else None
    if compiled is not None:
        return compiled >= 0
    wanted = _prefix_words(prefixes)
    if wanted is None or values.null_count:
        return None
    heads, tails, width = wanted
    parts = []
    for chunk in values.chunks if isinstance(values, pa.ChunkedArray) else [values]:
        count = len(chunk)
        if count == 0:
            continue
        offsets = _offsets(chunk)
        data = chunk.buffers()[2]
        found = _words_match(np.frombuffer(data, dtype=np.uint8) if data is not None else np.zeros(0, np.uint8), offsets[:-1],
                             offsets[1:] - offsets[:-1], heads, tails, width)
        if found is None:
            return None
        parts.append(found)
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.bool_)


def prefix_index(values: pa.Array | pa.ChunkedArray, prefixes: list[str]) -> npt.NDArray[np.int32] | None:
    """Per string, the position in `prefixes` (distinct, of one byte width)
    of the one it starts with, -1 for none, by `_cells.prefix_index_strings`
    (the GIL goes meanwhile); None when not compiled, or for nulls, values
    that are not strings, or prefixes of several widths or repeated."""
    if native.cells is None or not prefixes:
        return None
    chunks = values.chunks if isinstance(values, pa.ChunkedArray) else [values]
    if any(chunk.null_count or chunk.type != pa.string() for chunk in chunks):
        return None
    encoded = [p.encode("utf-8") for p in prefixes]
    width = len(encoded[0])
    if width == 0 or any(len(p) != width for p in encoded) or len(set(encoded)) != len(encoded):
        return None
    order = sorted(range(len(encoded)), key=encoded.__getitem__)
    found = np.empty(len(values), dtype=np.int32)
    native.cells.prefix_index_strings(b"".join(encoded[n] for n in order), width, [_string_buffers(chunk) for chunk in chunks], found, True)
    position = np.array(order + [-1], dtype=np.int32)  # sorted place -> given place; -1 stays -1
    return position[found]


def _prefix_words(prefixes: pa.Array) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.uint64], int] | None:
    """The prefixes' head words (sorted, each once) and tail words, and their width."""
    matrix = fixed_width(prefixes)
    if matrix is None or not _WORD < matrix.shape[1] <= 2 * _WORD:
        return None
    width = matrix.shape[1]
    heads = np.ascontiguousarray(matrix[:, :_WORD]).view("<u8").ravel()
    tails = np.ascontiguousarray(matrix[:, width - _WORD :]).view("<u8").ravel()
    order = np.argsort(heads, kind="stable")
    heads, tails = heads[order], tails[order]
    if (heads[1:] == heads[:-1]).any():
        return None
    return heads, tails, width


def _words_match(data: npt.NDArray[np.uint8], starts: npt.NDArray[np.int64], room: npt.NDArray[np.int64], heads: npt.NDArray[np.uint64],
                 tails: npt.NDArray[np.uint64], width: int) -> npt.NDArray[np.bool_] | None:
    """Per start, whether the bytes of `data` there begin with a prefix of
    `width` bytes whose head word is in `heads` (sorted, distinct) with the
    matching tail word (the word at width - 8), where each start has `room`
    bytes to its end. Exact: the two words cover the prefix."""
    if not len(starts):
        return np.zeros(0, dtype=np.bool_)
    long_enough = room >= width
    at_start = np.where(long_enough, starts, 0)  # a short one is read at 0 (in bounds) and answered False
    if len(data) < width or int(at_start.max()) + width > len(data):
        return None
    words = _words_at_every_byte(data)
    head, tail = words[at_start], words[at_start + (width - _WORD)]
    at = np.minimum(np.searchsorted(heads, head), len(heads) - 1)
    return long_enough & (heads[at] == head) & (tails[at] == tail)


def _offsets(values: pa.Array) -> npt.NDArray[np.int64]:
    """A string or binary array's value offsets (one more than its values), as int64."""
    return np.frombuffer(values.buffers()[1], dtype=np.int32, count=len(values) + 1, offset=values.offset * 4).astype(np.int64)


def _words_at_every_byte(data: npt.NDArray[np.uint8]) -> npt.NDArray[np.uint64]:
    """Every 8-byte little-endian word of a buffer, at any byte offset (numpy reads them unaligned, in place)."""
    return np.ndarray((len(data) - _WORD + 1,), dtype="<u8", buffer=data, strides=(1,))


def _fingerprints_of(values: pa.Array | pa.ChunkedArray) -> npt.NDArray[np.uint64] | None:
    chunks = values.chunks if isinstance(values, pa.ChunkedArray) else [values]
    parts = [_name_fingerprints(chunk) for chunk in chunks]
    if any(part is None for part in parts):
        return None
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.uint64)  # type: ignore[arg-type]


def index_in(values: pa.Array | pa.ChunkedArray, value_set: pa.Array | pa.ChunkedArray) -> pa.Array:
    """`pc.index_in(values, value_set=value_set)` (the first equal element's
    index, null for none) for file names: their fingerprints are matched as
    integers, each match is compared in full, and only values whose match
    was another string are looked up by Arrow again. Compiled, one hash
    table of the set's strings answers null-free string arrays instead."""
    compiled = _compiled_index_in(values, value_set)
    if compiled is not None:
        return compiled
    found_fingerprints = _fingerprints_of(values)
    set_fingerprints = _fingerprints_of(value_set) if found_fingerprints is not None else None
    if found_fingerprints is None or set_fingerprints is None:
        return pc.index_in(values, value_set=value_set, memory_pool=READ_POOL)
    found = pc.index_in(from_numpy(found_fingerprints), value_set=from_numpy(set_fingerprints), memory_pool=READ_POOL)
    whole_set = value_set.combine_chunks(memory_pool=READ_POOL) if isinstance(value_set, pa.ChunkedArray) else value_set
    # a take from many chunks costs several times the copy into one (0.2 s against 0.035 s at a million names)
    same = pc.equal(values, pc.take(whole_set, found, memory_pool=READ_POOL), memory_pool=READ_POOL)
    other = to_numpy(pc.invert(same), null=False)  # a match by fingerprint only: another string
    if not other.any():
        return found
    rows = np.flatnonzero(other)
    exact = to_numpy(pc.index_in(pc.take(values, from_numpy(rows)), value_set=value_set, memory_pool=READ_POOL), null=-1)
    index = to_numpy(found, null=-1).astype(np.int64)
    index[rows] = exact
    return from_numpy(index.astype(np.int32), valid=index >= 0)


def _compiled_index_in(values: pa.Array | pa.ChunkedArray, value_set: pa.Array | pa.ChunkedArray) -> pa.Array | None:
    """`index_in` by `_cells.index_in_strings` (every string hashed whole, each match compared in full; a 1M
    plan's matching took 0.10 s of CPU, 0.20 s by fingerprints), or None: not compiled, or not null-free strings."""
    found = _compiled_match(values, value_set, None)
    return None if found is None else from_numpy(found, valid=found >= 0)


def index_in_at(values: pa.Array | pa.ChunkedArray, value_set: pa.Array | pa.ChunkedArray,
                positions: npt.NDArray[np.signedinteger]) -> npt.NDArray[np.int32] | None:
    """Per value, the index into `positions` of the first equal string among
    `value_set`'s at those positions (-1: none), without copying them out (a
    run's rows of a whole listing); compiled only, else None (not compiled,
    nulls, or not strings: the caller takes the rows and uses `index_in`)."""
    return _compiled_match(values, value_set, native.int64s(positions))


def _compiled_match(values: pa.Array | pa.ChunkedArray, value_set: pa.Array | pa.ChunkedArray,
                    positions: npt.NDArray[np.int64] | None) -> npt.NDArray[np.int32] | None:
    """`_cells.index_in_strings` (-1: none), or None: not compiled, or not null-free strings."""
    if native.cells is None:
        return None
    sides = [value_set.chunks if isinstance(value_set, pa.ChunkedArray) else [value_set],
             values.chunks if isinstance(values, pa.ChunkedArray) else [values]]
    if any(chunk.null_count or chunk.type != pa.string() for side in sides for chunk in side):
        return None
    found = np.empty(len(values), dtype=np.int32)
    # the GIL goes while it matches, on any thread: the main thread matches a run while another reads the next one
    native.cells.index_in_strings(*([_string_buffers(chunk) for chunk in side] for side in sides), found, True, positions)
    return found


def _string_buffers(values: pa.Array) -> tuple[pa.Buffer, pa.Buffer | bytes, int, int]:
    """A string array's offsets and bytes, its first element, and its length (what `_cells` reads)."""
    _, offsets, data = values.buffers()
    return offsets, data if data is not None else b"", values.offset, len(values)
