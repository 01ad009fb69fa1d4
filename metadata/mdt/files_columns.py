"""Files-partition records to a table of live files, in Arrow.

The columnar counterpart of `records.live_files` over decoded records (kept
as the reference, with `records.live_sizes` for a few records): each entry
of a record's `filesystemMetadata` map becomes a row (record key, file name,
size), tombstones left out, without a Python object per file.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from metadata.mdt.decoded import Decoded
from metadata.mdt.hfile_cells import as_utf8, spans_to_binary
from metadata.mdt.records import TYPE_ALL_PARTITIONS, TYPE_FILES
from metadata.storage.listing import file_table_of
from metadata.util import arrow_values
from metadata.util.arrow_memory import READ_POOL, empty_table

KEY = "key"
NAME = "name"
SIZE = "size"
ENTRIES_SCHEMA = pa.schema([(KEY, pa.string()), (NAME, pa.string()), (SIZE, pa.int64())])
_MAP = "filesystemMetadata|map{}"


def live_entries(record_keys: pa.StringArray, decoded: Decoded) -> pa.Table:
    """(key, name, size) of every live file entry of decoded files records,
    record by record in map order."""
    if not decoded.entries.get(_MAP):
        return empty_table(ENTRIES_SCHEMA)
    owners = decoded.owners[_MAP]
    # the compiled decoder numbers entries record by record; numpy's comes a step (entry j of every record) at a time:
    # put in record order, each record keeping its map order
    order = None if bool((owners[1:] >= owners[:-1]).all()) else np.argsort(owners, kind="stable")
    if order is not None:
        owners = owners[order]
    types = np.full(decoded.count, -1, dtype=np.int64)
    types[decoded.present["type"]] = decoded.ints["type"]
    listing = (types == TYPE_ALL_PARTITIONS) | (types == TYPE_FILES)  # per record
    deleted = np.zeros(decoded.entries[_MAP], dtype=bool)
    deleted_path = f"{_MAP}.value.isDeleted"
    if deleted_path in decoded.present:
        deleted[decoded.present[deleted_path]] = decoded.bools[deleted_path]
    sizes = np.zeros(decoded.entries[_MAP], dtype=np.int64)  # Hudi's size is a plain long; the reference reads a missing one as 0
    size_path = f"{_MAP}.value.size"
    if size_path in decoded.present:
        sizes[decoded.present[size_path]] = decoded.ints[size_path]
    live = ~(deleted if order is None else deleted[order]) & listing[owners]
    kept = np.flatnonzero(live) if order is None else order[live]
    return pa.table({KEY: pc.take(record_keys, arrow_values.from_numpy(owners[live]), memory_pool=READ_POOL),
                     NAME: _names(decoded, kept), SIZE: arrow_values.from_numpy(sizes[kept])}, schema=ENTRIES_SCHEMA)


def _names(decoded: Decoded, entries: npt.NDArray[np.int64]) -> pa.StringArray:
    """The map keys (file names) of these entry rows, copied once: every
    entry has a key, so its span is at its entry row."""
    key_path = f"{_MAP}.key"
    present = decoded.present.get(key_path)
    if present is None or len(present) != decoded.entries[_MAP]:  # not one key per entry: by the general path
        return pc.take(decoded.string_array(key_path), arrow_values.from_numpy(entries), memory_pool=READ_POOL)
    starts, lengths = decoded.spans[key_path]
    return as_utf8(spans_to_binary(decoded.buffer, starts[entries], lengths[entries]))


def entries_of_sizes(sizes: Mapping[str, Mapping[str, int]]) -> pa.Table:
    """The same table from record key -> live file name -> size."""
    return file_table_of(sizes, ENTRIES_SCHEMA)


def first_path_like(names: pa.Array | pa.ChunkedArray) -> str | None:
    """The first name that is a path rather than a name in its partition."""
    if isinstance(names, pa.ChunkedArray):
        return next((bad for chunk in names.chunks if (bad := first_path_like(chunk)) is not None), None)
    if not len(names):
        return None
    offsets = np.frombuffer(names.buffers()[1], dtype=np.int32, count=len(names) + 1, offset=names.offset * 4)
    data = names.buffers()[2]
    text = data.to_pybytes() if data is not None else b""  # a search of the whole buffer (memchr) beats one per name
    if b"/" not in text and b"\\" not in text and (np.diff(offsets) > 2).all():
        return None  # no separator anywhere and no name short enough to be "." or ".."
    bad = pc.or_(pc.or_(pc.match_substring(names, "/"), pc.match_substring(names, "\\")),
                 pc.is_in(names, value_set=arrow_values.array([".", ".."], pa.string())))
    if not pc.any(bad).as_py():
        return None
    return str(names.filter(bad)[0].as_py())
