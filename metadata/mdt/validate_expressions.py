"""`table validate` for expression indexes (`expr_index_<name>`, column_stats
of f(column), Hudi 1.x): each live base file's stored range of f against f
evaluated over the file's rows.

A stored range that does not hold f's minimum or maximum over a file's rows
makes a plan through the index drop that file: a difference. A file without
a record is kept by plans: a note. Log files are left out, as for
column_stats (their ranges come from the blocks counted when each was
written). f is evaluated by the expressions layer (`IndexExpressions`),
which the caller hands in; without one, or for an f it does not evaluate,
the index is not compared and a note says so. Bloom-filter expression
indexes are not compared.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from metadata.formats.stats_table import FILE_NAME, PARTITION, max_field, min_field
from metadata.mdt.expression_index import ExpressionIndexType, IndexExpressions, defined_expression_indexes, expression_ranges
from metadata.mdt.file_stats import ColumnRange, blocks_counting, leaf_type
from metadata.mdt.index_defs import index_definitions
from metadata.mdt.metadata_table import MetadataTable
from metadata.storage.paths import join
from metadata.table.hudi_table import HudiTable
from metadata.table.slice_rows import table_read_schema


@dataclass
class ExpressionIndexCheck:
    differences: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    files_checked: int = 0


def check_expression_indexes(table: HudiTable, mdt: MetadataTable, base_files: dict[str, set[str]],
                             expressions: IndexExpressions | None) -> ExpressionIndexCheck:
    """`base_files`: partition -> the live base files both the files partition and storage hold."""
    check = ExpressionIndexCheck()
    built = set(table.config.metadata_partitions)
    indexes = [index for index in defined_expression_indexes(index_definitions(table.storage, table.config.raw))
               if index.value in built and index.index_type is ExpressionIndexType.COLUMN_STATS]
    if not indexes:
        return check
    if expressions is None:
        check.notes.append(f"{', '.join(i.value for i in indexes)} not compared: no expression evaluator was given")
        return check
    schema = table_read_schema(table)
    counts = blocks_counting(None, frozenset(i.requested_time for i in table.timeline.completed()))
    partition_of = {name: partition for partition, names in base_files.items() for name in names}  # file names are unique
    paths = sorted(join(partition, name) for name, partition in partition_of.items())
    for index in indexes:
        source = leaf_type(schema, index.column)
        dtype = expressions.result_type(index, source) if source is not None else None
        if dtype is None:
            check.notes.append(f"{index.value} not compared: {index.function}({index.column}) is not evaluated here")
            continue
        stats = mdt.expression_index_stats(index.value, index.column, dtype)
        stored = {(p, name): (low, high) for p, name, low, high in zip(
            stats.column(PARTITION).to_pylist(), stats.column(FILE_NAME).to_pylist(),
            stats.column(min_field(index.column)).to_pylist(), stats.column(max_field(index.column)).to_pylist())}
        missing = []
        for computed in expression_ranges(table.storage, paths, index, expressions, counts, schema):
            partition = partition_of[computed.file_name]
            where = join(partition, computed.file_name)
            check.files_checked += 1
            held = stored.get((partition, computed.file_name))
            if held is None:
                if computed.value_count:
                    missing.append(where)
                continue
            outside = _outside(held, computed)
            if outside:
                check.differences.append(f"{index.value} of {where}: [{held[0]!r}, {held[1]!r}] does not hold {outside} of "
                                         f"{index.spark_sql() or index.function} over the file's rows: a plan through the index "
                                         "would drop them")
        if missing:
            check.notes.append(f"{index.value}: no record for {len(missing)} file(s) ({', '.join(missing[:3])}): plans keep them")
    return check


def _outside(held: tuple[object, object], computed: ColumnRange) -> str | None:
    low, high = held
    if low is None and high is None:  # no range: plans keep the file
        return None
    try:
        if computed.min_value is not None and (low is None or computed.min_value < low):
            return f"the minimum {computed.min_value!r}"
        if computed.max_value is not None and (high is None or computed.max_value > high):
            return f"the maximum {computed.max_value!r}"
    except TypeError:  # values that do not compare (an evolved column): nothing is said
        return None
    return None
