"""Planning a wide table through its metadata table (issue 16).

Builds a v8 table of P partitions and F base files (copies of one small
Parquet file: listing and planning never read them) with a `files` and a
`column_stats` partition of N columns whose statistics are synthetic and
known (file i holds a in [i, i+9], b in [i/2, i/2+5], c in ["i", "i+9"]),
or reuses that build from --table. Then measures, each cold figure in a
fresh process and as the median of --runs runs:

- partitions_cold_s: `HudiTable.partitions()`;
- slices_cold_s: all latest file slices; pyarrow_listing_s: a recursive
  pyarrow listing of the same folder;
- lister_one_cold_s / lister_one_warm_s: one partition through a new
  DirectoryLister, then the same again; lister_other_partition_warm_s:
  another partition through the same lister (medians of at least 7 runs:
  lister_runs);
- plan_cold_s / plan_warm_s: `plan("a > X AND b < Y")` keeping about 1% of
  the files, then the same plan again on the same lister (column_stats read
  whole and kept up to STREAM_ABOVE_FILES listed files, above it streamed in
  runs of partitions and kept when they fit the stats cache);
  plan_streamed_cold_s / plan_streamed_warm_s: the same, streamed at any
  size (STREAM_ABOVE_BYTES = 0); plan_workers_cold_s /
  plan_workers_peak_rss_mib: streamed to a worker process per core
  (`hudi-bridge plan --processes 0`; peak: the driver and its workers
  summed); plan_cached_s: the same plan in a new process with the
  persistent stats cache filled;
- hudi_rs_filter_s: hudi-rs `get_file_slices` with the same filters;
- incremental_one_commit_s: incremental planning of one new 10-file commit;
- files_kept, files_total, peak_rss_mib (largest of the cold processes).

    python -m bench.scale [--partitions 10000] [--files 1000000] [--columns 3] [--table DIR] [--runs 3]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import pyarrow as pa
import pyarrow.fs as pafs

from bench.common import finish, in_fresh_process, progress, tree_peak_rss
from listers import DirectoryLister  # imported at the top: a "cold" child imports it before its clock starts
from listers.incremental import incremental
from listers.index_support import column_stats
from listers.planner import plan
from metadata import HudiTable
from metadata.mdt.file_groups import MdtPartition
from metadata.mdt.file_stats import ColumnRange
from metadata.mdt.stats_engine import Then
from metadata.mdt.write.writer import MetadataTableWriter
from metadata.sample_tables.builder import TableBuilder

T = TypeVar("T")

SCHEMA = pa.schema([("a", pa.int64()), ("b", pa.float64()), ("c", pa.string()), ("part", pa.string())])
COLUMNS = ("a", "b", "c")
COMMIT_PARTITIONS = 500  # partitions per bulk-insert commit
BUILT_MARKER = ".bench-scale-built"
LISTER_RUNS = 7


class KnownStats:
    """Statistics of the copied files as the bench defines them (file number -> ranges)."""

    batch_files = 20_000
    batches_at_once = 1

    def __init__(self, numbers: dict[str, int]) -> None:
        self.numbers = numbers

    def map_ranges(self, base_uri: str, files: Sequence[tuple[str, str | None]], columns: Sequence[str] | None,
                   schema: pa.Schema | None, completed: frozenset[str], storage_options: Mapping[str, str] | None,
                   then: Then[T]) -> list[T]:
        out = []
        for relative, _ in files:
            name = relative.rsplit("/", 1)[-1]
            i = self.numbers[name]
            bounds = {"a": (pa.int64(), i, i + 9), "b": (pa.float64(), i / 2, i / 2 + 5), "c": (pa.string(), f"{i:08d}", f"{i + 9:08d}")}
            out.append(then(relative, [ColumnRange(name, column, bounds[column][0], bounds[column][1], bounds[column][2], 0, 10, 100, 100)
                                       for column in columns or COLUMNS]))
        return out


def partition_dir(p: int) -> str:
    return f"part={p:05d}"


def build(path: str, partitions: int, files: int, columns: int, interleaved: bool = False) -> None:
    """`interleaved`: file i lies in partition i mod P (every partition spans
    the whole range of values, so partition_stats prunes nothing and
    column_stats does the work); else each partition holds a run of numbers."""
    builder = TableBuilder(path, SCHEMA, partition_fields=["part"], record_key="a", version=8)
    per_partition, extra = divmod(files, partitions)
    numbers: dict[str, int] = {}
    for start in range(0, partitions, COMMIT_PARTITIONS):
        counts = {f"{p:05d}": per_partition + (1 if p < extra else 0) for p in range(start, min(start + COMMIT_PARTITIONS, partitions))}
        _, written = builder.write_copies({partition_dir(int(k)): v for k, v in counts.items()}, [{"a": 0, "b": 0.0, "c": "x", "part": "x"}])
        seen: dict[str, int] = {}
        for path_ in written:
            partition = path_.rsplit("/", 2)[-2]
            rank = seen[partition] = seen.get(partition, -1) + 1
            number = rank * partitions + int(partition.split("=")[1]) if interleaved else len(numbers)
            numbers[path_.rsplit("/", 1)[-1]] = number
        progress(f"wrote {len(numbers)} of {files} files")
    _, written = builder.write_copies({partition_dir(0): 10}, [{"a": 0, "b": 0.0, "c": "x", "part": "x"}])  # the incremental commit
    for path_ in written:
        numbers[path_.rsplit("/", 1)[-1]] = len(numbers)  # files, files + 1, ... (numbers holds 0 .. files - 1)
    progress("building files and column_stats")
    MetadataTableWriter(path, engine=KnownStats(numbers), progress=progress).build(
        partitions=[MdtPartition.FILES, MdtPartition.COLUMN_STATS], columns=list(COLUMNS[:columns]))
    Path(path, BUILT_MARKER).write_text(f"{partitions} {files} {columns}\n")


def _median_cold(call: Callable[[], Any], runs: int, peaks: list[float]) -> tuple[Any, float]:
    times = []
    result = None
    for _ in range(runs):
        result, seconds, peak = in_fresh_process(call)
        times.append(seconds)
        peaks.append(peak)
    return result, round(statistics.median(times), 4)


def _partitions(path: str) -> int:
    return len(HudiTable.open(path).partitions())


def _slices(path: str) -> int:
    return len(HudiTable.open(path).file_slices())


def _pyarrow_listing(path: str) -> int:
    fs = pafs.LocalFileSystem()
    infos = fs.get_file_info(pafs.FileSelector(path, recursive=True))
    return sum(1 for i in infos if i.path.endswith(".parquet"))


def _lister(path: str) -> tuple[float, float, float]:
    start = time.perf_counter()
    lister = DirectoryLister.open(path)
    lister.list_files(partition_dir(1))
    cold = time.perf_counter() - start
    start = time.perf_counter()
    lister.list_files(partition_dir(1))
    warm = time.perf_counter() - start
    start = time.perf_counter()
    lister.list_files(partition_dir(2))
    other = time.perf_counter() - start
    lister.close()
    return cold, warm, other


def _plan(path: str, where: str, streamed: bool | None = None) -> tuple[int, float, float]:
    """A cold plan, then the same again on its lister: files kept, seconds of
    each; `streamed`: column_stats streamed in runs, or read whole, at any
    size (None: as the planner chooses, by STREAM_ABOVE_BYTES)."""
    if streamed is not None:
        column_stats.STREAM_ABOVE_BYTES = 0 if streamed else 1 << 62
    start = time.perf_counter()
    with DirectoryLister.open(path) as lister:
        kept = len(plan(lister, where).files)
        cold = time.perf_counter() - start
        start = time.perf_counter()
        again = len(plan(lister, where).files)
        warm = time.perf_counter() - start
    assert kept == again
    return kept, cold, warm


def _median_cold_and_warm(call: Callable[[], tuple[int, float, float]], runs: int, peaks: list[float]) -> tuple[int, float, float]:
    """Files kept, and the medians of a call's own cold and warm seconds, each call in a new process."""
    found = []
    for _ in range(runs):
        result, _, peak = in_fresh_process(call)
        found.append(result)
        peaks.append(peak)
    return found[-1][0], round(statistics.median(f[1] for f in found), 4), round(statistics.median(f[2] for f in found), 4)


def _plan_in_workers(path: str, where: str) -> tuple[int, float]:
    """A cold plan streaming column_stats to a worker process per core
    (`hudi-bridge plan --processes 0`): files kept, and the peak RSS of this
    process and its workers together."""
    column_stats.STREAM_ABOVE_BYTES = 0
    peak: dict[str, float] = {}
    with tree_peak_rss(peak, "rss"):
        kept = len(plan(path, where, processes=None).files)
    return kept, peak["rss"]


def _plan_cached(path: str, where: str, cache_dir: str) -> int:
    return len(plan(path, where, cache_dir=cache_dir).files)


def _hudi_rs(path: str, low: int, high: float) -> int:
    import hudi

    table = hudi.HudiTableBuilder.from_base_uri(path).build()
    options = hudi.HudiReadOptions().with_filters([("a", ">", str(low)), ("b", "<", str(high))])
    return len(table.get_file_slices(options))


def _incremental(path: str) -> int:
    table = HudiTable.open(path)
    latest = table.timeline.latest_completed()
    assert latest is not None
    previous = [i for i in table.timeline.completed() if i.requested_time < latest.requested_time][-1]
    planned = incremental(table, previous.completion_time or previous.requested_time)  # v8: ranges are of completion times
    assert len(planned.files) == 10, len(planned.files)
    return len(planned.files)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--partitions", type=int, default=10_000)
    parser.add_argument("--files", type=int, default=1_000_000)
    parser.add_argument("--columns", type=int, default=3, choices=[2, 3])
    parser.add_argument("--table", help="where the table is built (reused when already built with these sizes)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--skip-hudi-rs", action="store_true")
    args = parser.parse_args()
    path = args.table or os.path.join(os.path.expanduser("~/.cache/hudi-bridge-bench"), f"scale-{args.partitions}-{args.files}-{args.columns}")
    marker = Path(path, BUILT_MARKER)
    if not marker.exists():
        if Path(path).exists():
            raise SystemExit(f"{path} exists but holds no finished build; remove it or pick another --table")
        build(path, args.partitions, args.files, args.columns)
    else:
        progress(f"reusing the build in {path}")
    total = args.files + 10  # and the 10-file commit the incremental case plans
    report: dict[str, Any] = {"benchmark": "scale", "partitions": args.partitions, "files_total": total, "columns": args.columns}
    peaks: list[float] = []
    count, report["partitions_cold_s"] = _median_cold(partial(_partitions, path), args.runs, peaks)
    assert count == args.partitions, count
    count, report["slices_cold_s"] = _median_cold(partial(_slices, path), args.runs, peaks)
    report["slices_peak_rss_mib"] = max(peaks[-args.runs:])
    assert count == total, count
    _, report["pyarrow_listing_s"] = _median_cold(partial(_pyarrow_listing, path), args.runs, [])
    report["slices_to_pyarrow_ratio"] = round(report["slices_cold_s"] / report["pyarrow_listing_s"], 2)
    # Milliseconds on a shared 2-core VM swing by 2x from minute to minute: more runs for a steady median.
    report["lister_runs"] = lister_runs = max(args.runs, LISTER_RUNS)
    listed = [in_fresh_process(partial(_lister, path))[0] for _ in range(lister_runs)]
    report["lister_one_cold_s"] = round(statistics.median(c for c, _, _ in listed), 5)
    report["lister_one_warm_s"] = round(statistics.median(w for _, w, _ in listed), 6)
    report["lister_other_partition_warm_s"] = round(statistics.median(o for _, _, o in listed), 5)
    # a > X AND b < Y: file i matches when i + 9 > X and i / 2 < Y; about 1% of the files.
    low = int(args.files * 0.49)
    high = (args.files * 0.50) / 2
    where = f"a > {low} AND b < {high}"
    report["predicate"] = where
    report["files_kept"], report["plan_cold_s"], report["plan_warm_s"] = _median_cold_and_warm(partial(_plan, path, where), args.runs, peaks)
    report["plan_peak_rss_mib"] = max(peaks[-args.runs:])
    kept, report["plan_streamed_cold_s"], report["plan_streamed_warm_s"] = _median_cold_and_warm(
        partial(_plan, path, where, True), args.runs, peaks)
    report["plan_streamed_peak_rss_mib"] = max(peaks[-args.runs:])
    assert kept == report["files_kept"], kept
    in_workers, report["plan_workers_cold_s"] = _median_cold(partial(_plan_in_workers, path, where), args.runs, [])
    assert in_workers[0] == report["files_kept"], in_workers
    report["plan_workers_peak_rss_mib"] = in_workers[1]  # the driver and its workers, summed
    cache_dir = tempfile.mkdtemp(prefix="bench-scale-cache-")
    in_fresh_process(partial(_plan_cached, path, where, cache_dir))  # fills the cache
    kept, report["plan_cached_s"] = _median_cold(partial(_plan_cached, path, where, cache_dir), args.runs, peaks)
    assert kept == report["files_kept"], kept
    shutil.rmtree(cache_dir)
    if not args.skip_hudi_rs:
        _, report["hudi_rs_filter_s"] = _median_cold(partial(_hudi_rs, path, low, high), 1, [])
    _, report["incremental_one_commit_s"] = _median_cold(partial(_incremental, path), args.runs, peaks)
    report["peak_rss_mib"] = max(peaks)
    finish(report)


if __name__ == "__main__":
    main()
