"""Bloom-filter and expression-index lookups at 1,000,000 files (issue 26).

Reuses (or builds) `bench.scale`'s metadata-only table of --files files in
--partitions partitions: copies of one small Parquet file, with synthetic,
known column statistics (file i holds a in [i, i+9], c in ["i", "i+9"] as
8-digit text). Beside them it builds, once:

- `partition_stats` (Hudi 1.x builds it with column_stats), from the same
  known statistics;
- a `bloom_filters` partition: one record per base file. The files are
  copies of one file, so they carry one footer filter; the bench stores one
  synthetic filter (of the keys "k0".."k9", 10 entries) for every file, as
  building a million distinct filters in Python would take hours. What is
  measured (one point lookup per remaining base file) costs the same;
- an expression index `substring(c, 1, 5)` of column_stats, with each
  file's known bounds (the prefixes of its c bounds).

Then, each cold in a fresh process (median of --runs):

- bloom_plan_cold_s: `a = X` planned: partition_stats leaves the partition
  whose range holds X, column_stats the ~10 files whose range does, the
  bloom_filters stage rules them out (no filter holds X). Goal: under 0.5 s;
- expression_plan_cold_s: `substring(c, 1, 5) = P` planned (column_stats,
  then the expression index on what is left);
- expression_read_cold_s: the whole expression index read (every file's
  record) and the predicate evaluated on it: the index's cost when nothing
  narrows it first.

    python -m bench.index_lookups [--partitions 10000] [--files 1000000] [--table DIR] [--runs 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from pathlib import Path
from typing import Any
from unittest import mock

import pyarrow as pa

from bench.common import finish, in_fresh_process, progress
from bench.scale import BUILT_MARKER, COLUMNS, KnownStats, build
from expressions import may_match
from expressions.index_expressions import SparkIndexExpressions, expression_index_of, implied_on_index, index_ref
from listers.planner import plan
from metadata import MetadataTable
from metadata.formats.bloom_filter import build_bloom_filter
from metadata.formats.stats_table import FILE_NAME, max_field, min_field, null_count_field
from metadata.mdt.file_groups import MdtPartition
from metadata.mdt.file_stats import ColumnRange
from metadata.mdt.keys import bloom_filter_key
from metadata.mdt.record_builders import bloom_filter_record
from metadata.mdt.write.partitions import bloom_filters as bloom_filters_writer
from metadata.mdt.write.partitions import expression_index as expression_index_writer
from metadata.mdt.write.writer import MetadataTableWriter

INDEXES_MARKER = ".bench-index-lookups-built"
PREFIX = expression_index_of("c_prefix", "substring(c, 1, 5)")
GOAL_BLOOM_SECONDS = 0.5


def _known_ranges(numbers: dict[str, int]) -> Callable[..., list[ColumnRange]]:
    """expression_ranges of the synthetic table: substring(c, 1, 5) of file i's bounds."""

    def ranges(storage: Any, files: Sequence[str], index: Any, expressions: Any, block_counts: Any, schema: Any,
               threads: int = 8) -> list[ColumnRange]:
        out = []
        for relative in files:
            name = relative.rsplit("/", 1)[-1]
            i = numbers[name]
            out.append(ColumnRange(name, "c", pa.string(), f"{i:08d}"[:5], f"{i + 9:08d}"[:5], 0, 10, 100, 100))
        return out

    return ranges


def _shared_filter_records(storage: Any, files: Any, timestamp: str, base_extension: str) -> Iterator[tuple[str, dict[str, Any]]]:
    shared = build_bloom_filter([f"k{j}" for j in range(10)], entries=10)
    for partition, name in files:
        if name.endswith(base_extension):
            key = bloom_filter_key(partition, name)
            yield key, bloom_filter_record(key, shared.type_code, timestamp, shared.text)


def _numbers(path: str) -> dict[str, int]:
    """File name -> its number, as `bench.scale.build` gave them (column_stats holds a's lower bound i)."""
    mdt = MetadataTable.open(path)
    try:
        stats = mdt.column_stats(["a"])
        return dict(zip(stats.column(FILE_NAME).to_pylist(), stats.column(min_field("a")).to_pylist()))
    finally:
        mdt.close()


def build_indexes(path: str) -> None:
    """The partitions above that the table lacks (a build leaves built ones alone)."""
    numbers = _numbers(path)
    progress(f"building partition_stats, bloom_filters and {PREFIX.value} over {len(numbers):,} files")
    with mock.patch.object(bloom_filters_writer, "bloom_filter_records", _shared_filter_records), \
            mock.patch.object(expression_index_writer, "expression_ranges", _known_ranges(numbers)):
        MetadataTableWriter(path, engine=KnownStats(numbers), progress=progress, index_expressions=SparkIndexExpressions()).build(
            [MdtPartition.PARTITION_STATS, MdtPartition.BLOOM_FILTERS, PREFIX], columns=list(COLUMNS))
    Path(path, INDEXES_MARKER).write_text("built: partition_stats, bloom_filters, expression index\n")


def _plan(path: str, where: str) -> tuple[int, dict[str, float]]:
    result = plan(path, where)
    return len(result.files), {s.name: round(s.seconds, 4) for s in result.stages}


def _read_expression_index(path: str, prefix: str) -> tuple[int, int]:
    """(files with a record, files whose record allows `substring(c, 1, 5) = prefix`)."""
    mdt = MetadataTable.open(path)
    try:
        predicate = plan_predicate(f"substring(c, 1, 5) = '{prefix}'")
        ref = index_ref(PREFIX)
        assert ref is not None
        implied = implied_on_index(predicate, ref, pa.string(), PREFIX.value)
        assert implied is not None
        stats = mdt.expression_index_stats(PREFIX.value, "c", pa.string())
        names = {min_field("c"): min_field(PREFIX.value), max_field("c"): max_field(PREFIX.value), null_count_field("c"): null_count_field(PREFIX.value)}
        stats = stats.rename_columns([names.get(n, n) for n in stats.column_names])
        return stats.num_rows, int(may_match(implied, stats).to_numpy(zero_copy_only=False).sum())
    finally:
        mdt.close()


def plan_predicate(where: str) -> Any:
    from expressions import bind_predicate, parse_sql
    return bind_predicate(parse_sql(where), pa.schema([("a", pa.int64()), ("b", pa.float64()), ("c", pa.string())]))


def _median(call: Callable[[], Any], runs: int) -> tuple[Any, float, float]:
    results = [in_fresh_process(call) for _ in range(runs)]
    return results[-1][0], round(statistics.median(r[1] for r in results), 4), max(r[2] for r in results)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--partitions", type=int, default=10_000)
    parser.add_argument("--files", type=int, default=1_000_000)
    parser.add_argument("--table", help="the bench.scale table to reuse or build (3 columns)")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    path = args.table or os.path.join(os.path.expanduser("~/.cache/hudi-bridge-bench"), f"scale-{args.partitions}-{args.files}-3")
    if not Path(path, BUILT_MARKER).exists():
        if Path(path).exists():
            raise SystemExit(f"{path} exists but holds no finished build; remove it or pick another --table")
        build(path, args.partitions, args.files, 3)
    marker = Path(path, INDEXES_MARKER)
    if not marker.exists() or "partition_stats" not in marker.read_text():
        build_indexes(path)
    report: dict[str, Any] = {"benchmark": "index_lookups", "files": args.files, "partitions": args.partitions,
                              "bloom_filters": "one synthetic 10-key filter stored for every base file (see the docstring)"}
    key = args.files // 2 + 3  # inside the ranges of ~10 files, in no filter
    report["bloom_predicate"] = where = f"a = {key}"
    (kept, stages), report["bloom_plan_cold_s"], report["bloom_plan_peak_rss_mib"] = _median(partial(_plan, path, where), args.runs)
    report.update(bloom_files_kept=kept, bloom_stage_s=stages.get("bloom_filters"), bloom_column_stats_stage_s=stages.get("column_stats"),
                  bloom_goal_s=GOAL_BLOOM_SECONDS, bloom_meets_goal=report["bloom_plan_cold_s"] <= GOAL_BLOOM_SECONDS)
    prefix = f"{args.files // 2:08d}"[:5]
    report["expression_predicate"] = where = f"substring(c, 1, 5) = '{prefix}'"
    (kept, stages), report["expression_plan_cold_s"], report["expression_plan_peak_rss_mib"] = _median(
        partial(_plan, path, where), args.runs)
    report.update(expression_files_kept=kept, expression_stage_s=stages.get("expression_index"))
    (records, allowed), report["expression_read_cold_s"], report["expression_read_peak_rss_mib"] = _median(
        partial(_read_expression_index, path, prefix), args.runs)
    report.update(expression_index_records=records, expression_records_allowing=allowed)
    finish(report)


if __name__ == "__main__":
    main()
