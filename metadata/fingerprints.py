"""Set questions on a million strings without hashing them one by one.

Arrow answers "which of these are distinct" and "where is each of these in
that array" by hashing every string into a table, about a microsecond a
string at a million. Strings of one byte width (metadata-table keys, or
names padded to one width) are rows of a byte matrix instead: a 64-bit
fingerprint per row, a sort, and a comparison of the matched rows answer
the same questions exactly. Equal strings always share a fingerprint, so
nothing equal is missed; rows that only share a fingerprint are compared
in full and never taken for equal.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

_FNV_PRIME = np.uint64(0x100000001B3)
MAX_WIDTH = 512  # longer strings are left to Arrow


def fixed_width(values: pa.Array) -> npt.NDArray[np.uint8] | None:
    """String or binary values as rows of a byte matrix when all have one
    width and none is null, else None."""
    count = len(values)
    if count == 0 or values.null_count:
        return None
    offsets = np.frombuffer(values.buffers()[1], dtype=np.int32, count=count + 1, offset=values.offset * 4)
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
    """Whether no value repeats (a shared fingerprint is settled by Arrow exactly)."""
    count = len(values)
    if count < 2:
        return True
    matrix = fixed_width(values)
    if matrix is not None:
        ordered = np.sort(fingerprints(matrix))
        if not (ordered[1:] == ordered[:-1]).any():
            return True
    return bool(pc.count_distinct(values).as_py() == count)


def positions_in(values: pa.StringArray, within: pa.StringArray) -> npt.NDArray[np.int64]:
    """For each value, the index of an equal string in `within`; -1 when
    none was found. A found index is always of an equal string; -1 is "not
    known to be there" (a string sharing its fingerprint with another one in
    `within`, which is rare, may go unfound), so callers treat it as the
    careful answer. Where `within` repeats a string, any of its places may be given."""
    if not len(values):
        return np.zeros(0, dtype=np.int64)
    if not len(within):
        return np.full(len(values), -1, dtype=np.int64)
    left, right = fixed_width(values), fixed_width(within)
    if left is None or right is None or left.shape[1] != right.shape[1]:
        left = right = None
        width = max(pc.max(pc.utf8_length(values)).as_py() or 0, pc.max(pc.utf8_length(within)).as_py() or 0)
        if 0 < width <= MAX_WIDTH and not values.null_count and not within.null_count:
            # padded by characters: ASCII strings all get one byte width (others go to Arrow)
            left = fixed_width(pc.utf8_rpad(values, width=width, padding=" "))
            right = fixed_width(pc.utf8_rpad(within, width=width, padding=" "))
    if left is None or right is None or left.shape[1] != right.shape[1]:
        return pc.fill_null(pc.index_in(values, value_set=within), -1).to_numpy(zero_copy_only=False).astype(np.int64)
    # Byte lengths go into the fingerprints: padding must not make "a" and "a " collide.
    wanted, held = (fingerprints(m) ^ (pc.binary_length(v).to_numpy().astype(np.uint64) * _FNV_PRIME)
                    for m, v in ((left, values), (right, within)))
    order = np.argsort(held)
    ordered = held[order]
    asked = np.argsort(wanted)  # sorted queries search the sorted fingerprints in one sweep, cache-friendly
    at = np.empty(len(wanted), dtype=np.int64)
    at[asked] = np.minimum(np.searchsorted(ordered, wanted[asked]), len(ordered) - 1)
    found = order[at]
    hit = np.flatnonzero(ordered[at] == wanted)
    # Same fingerprint is not yet the same string (padding aside): compare them.
    same = pc.equal(values.take(pa.array(hit)), within.take(pa.array(found[hit]))).to_numpy(zero_copy_only=False)
    rows = np.full(len(values), -1, dtype=np.int64)
    rows[hit[same]] = found[hit[same]]
    return rows
