"""The stats table from the columns `stats_columns` gathers: one row per
file (or partition), the columns aligned on (partition id, file id) with
Arrow hash lookups, not a join; records of dropped partitions and deleted
records left out."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from metadata.formats.stats_table import (
    FILE_NAME,
    PARTITION,
    VALUE_COUNT,
    build_stats_table,
    max_field,
    min_field,
    null_count_field,
    typed_array,
)
from metadata.mdt import keys
from metadata.mdt.stats_columns import FlatStats
from metadata.util import arrow_values
from metadata.util.arrow_memory import READ_POOL
from metadata.util.arrow_values import to_numpy
from metadata.util.fingerprints import all_distinct, fixed_width, prefix_index


def pivot(flat: FlatStats, columns: list[str], known_partitions: list[str], per_file: bool,
          types: dict[str, pa.DataType]) -> pa.Table | None:
    """The stats table (layout of `metadata.formats.stats_table`) of the live records
    of `columns` in `known_partitions`, one row per file (or partition), in
    key order; None when a key came twice (from two file groups), which the
    reference merge must decide.

    A record's identity is its key without the column id (partition id and
    file id). When every column has the same identities in the same order
    (each file has stats for each column) the columns line up as they are;
    otherwise each is spread over the distinct identities."""
    tables = {c: t for c in columns if (t := flat.table_of(c)) is not None}
    if not tables:
        return build_stats_table([], columns, types)
    identity = {c: t.column("identity") for c, t in tables.items()}
    first = identity[next(iter(tables))].combine_chunks(memory_pool=READ_POOL)
    if all(ident.equals(identity[next(iter(tables))]) for ident in identity.values()):
        if not all_distinct(first):
            return None
        rows = len(first)
        spread: dict[str, pa.Array | None] = dict.fromkeys(tables)  # None: the rows as they are
        ids = first
    else:
        every = pa.concat_arrays([ident.combine_chunks(memory_pool=READ_POOL) for ident in identity.values()], memory_pool=READ_POOL)
        codes = to_numpy(pc.dictionary_encode(every).indices).astype(np.int64)
        rows = int(codes.max()) + 1 if len(codes) else 0
        spread, offset = {}, 0
        representative = np.empty(rows, dtype=np.int64)
        representative[codes[::-1]] = np.arange(len(codes) - 1, -1, -1, dtype=np.int64)  # the last write is the first occurrence
        for c, t in tables.items():
            at = codes[offset : offset + t.num_rows]
            offset += t.num_rows
            if len(at) and np.bincount(at).max() > 1:
                return None
            source = np.full(rows, -1, dtype=np.int64)
            source[at] = np.arange(len(at))
            spread[c] = arrow_values.from_numpy(source, valid=~(source < 0))
        ids = pc.take(every, arrow_values.from_numpy(representative), memory_pool=READ_POOL)
    where = _partition_rows(ids, known_partitions)
    partition = pc.take(arrow_values.array(known_partitions, pa.string()), where, memory_pool=READ_POOL)
    known = pc.is_valid(where)
    arrays: dict[str, Any] = {}
    lives, counts, files = [], [], []
    for c in columns:
        if c not in tables:
            arrays[min_field(c)] = arrays[max_field(c)] = typed_array([None] * rows, types.get(c), c)
            arrays[null_count_field(c)] = pa.nulls(rows, pa.int64())
            continue
        t = tables[c] if spread[c] is None else pc.take(tables[c], spread[c], memory_pool=READ_POOL)
        live = pc.and_(known, pc.invert(pc.fill_null(t.column("deleted"), arrow_values.TRUE)))
        lives.append(live)
        for field_name, column in ((min_field(c), "min"), (max_field(c), "max"), (null_count_field(c), "null_count")):
            arrays[field_name] = _where(live, t.column(column))
        counts.append(_where(live, t.column("value_count")))
        files.append(_where(live, t.column("file")))
    any_live = lives[0]
    for live in lives[1:]:
        any_live = pc.or_(any_live, live)
    value_count = counts[0] if len(counts) == 1 else pc.max_element_wise(*counts, skip_nulls=True)
    # a file named by its first column's records (nearly always all of them) is not copied by coalesce
    name = (files[0] if len(files) == 1 or files[0].null_count == 0 else pc.coalesce(*files, memory_pool=READ_POOL)) if per_file else partition
    ordered = {PARTITION: partition, FILE_NAME: name, VALUE_COUNT: value_count}
    for c in columns:
        for f in (min_field(c), max_field(c), null_count_field(c)):
            ordered[f] = arrays[f]
    table = pa.table(ordered)
    return table if pc.all(any_live).as_py() else pc.filter(table, any_live, memory_pool=READ_POOL)


def _partition_rows(ids: pa.StringArray, known_partitions: list[str]) -> pa.Array:
    """Per identity, the index of its partition among the known ones (null:
    not a live partition): compiled (`fingerprints.prefix_index`), else, as
    identities come in key order and runs share a partition id, of one width
    only each run's first is looked up by Arrow."""
    known_ids = [keys.partition_index_id(p) for p in known_partitions]
    compiled = prefix_index(ids, known_ids)
    if compiled is not None:
        return arrow_values.from_numpy(compiled, valid=compiled >= 0)
    partition_ids = arrow_values.array(known_ids, pa.string())
    matrix = fixed_width(ids)
    if matrix is None or matrix.shape[1] < keys.ID_LENGTH:
        return pc.index_in(pc.utf8_slice_codeunits(ids, 0, keys.ID_LENGTH), value_set=partition_ids)
    heads = matrix[:, : keys.ID_LENGTH]
    starts = np.flatnonzero(np.concatenate([[True], (heads[1:] != heads[:-1]).any(axis=1)])) if len(heads) else np.zeros(0, np.int64)
    run_ids = arrow_values.array([bytes(row).decode("ascii", "replace") for row in heads[starts]], pa.string())
    found = pc.index_in(run_ids, value_set=partition_ids)
    lengths = np.diff(np.append(starts, len(heads)))
    return pc.take(found, arrow_values.from_numpy(np.repeat(np.arange(len(starts)), lengths)), memory_pool=READ_POOL)


def _where(mask: pa.Array, values: pa.Array) -> pa.Array:
    """Values where mask holds, null elsewhere."""
    if pc.all(mask).as_py():
        return values
    return pc.if_else(mask, values, arrow_values.scalar(None, values.type), memory_pool=READ_POOL)
