"""The fast path for copy-on-write and read-optimized reads: plan on the
driver, then `spark.read.parquet` of the candidate base files, so Spark's
vectorized Parquet reader and column pruning do the reading.

A read that needs merging (a MOR snapshot with log files) or partition
values from paths (partition columns dropped from the files) goes through
the `hudi` source instead.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from engine_bridge.spark.keys import spark_key_lookup
from engine_bridge.spark.options import (
    AS_OF,
    BEGIN,
    END,
    IN_MEMORY_THRESHOLD,
    INCREMENTAL_FORMAT,
    PATH,
    QUERY_TYPE,
    STORAGE_PREFIX,
    ReadOptions,
)
from engine_bridge.spark.plan import spark_candidates_runner
from engine_bridge.spark.register import source_name
from engine_bridge.spark.scan import ScanPlan, plan_scan
from engine_bridge.spark.schema import spark_schema, table_arrow_schema
from expressions import Expr, ExpressionError, parse_sql
from metadata import HudiTable
from metadata.formats.avro_schema import avro_to_arrow_schema
from metadata.mdt.file_groups import MdtPartition
from metadata.storage.paths import join

log = logging.getLogger(__name__)


def _predicate(where: str | None) -> Expr | None:
    if not where:
        return None
    try:
        return parse_sql(where, "spark")
    except ExpressionError as exc:
        log.warning("where %r is not used to prune files (%s); Spark still applies it", where, exc)
        return None


def stats_records_over(table: HudiTable, threshold: int) -> tuple[int, str | None]:
    """column_stats' records (files x columns, from the HFile trailers and
    the log blocks: no record is read), and why the plan goes to the
    executors when they reach `threshold` (None: it stays on the driver)."""
    mdt = table.metadata_table
    if mdt is None or MdtPartition.COLUMN_STATS not in table.config.metadata_partitions:
        return 0, None
    records = mdt.reader.key_count(MdtPartition.COLUMN_STATS.value)
    if records < threshold:
        return records, None
    return records, (f"column_stats holds {records:,} records (files x columns), at least {IN_MEMORY_THRESHOLD}="
                     f"{threshold:,}: evaluated on Spark executors")


def _spark_has_filesystem(spark: Any, uri: str) -> bool:
    """Whether Spark's Hadoop has a FileSystem for the URI's scheme (s3a with hadoop-aws, s3 on EMR)."""
    scheme = uri.split("://", 1)[0]
    try:
        jvm = spark.sparkContext._jvm
        jvm.org.apache.hadoop.fs.FileSystem.getFileSystemClass(scheme, spark.sparkContext._jsc.hadoopConfiguration())
        return True
    except Exception:  # py4j's error for "No FileSystem for scheme"
        return False


def _needs_source(spark: Any, table: HudiTable, scan: ScanPlan) -> str | None:
    if table.storage.is_object_store:
        # The source reads through pyarrow in the executors; Spark's own reader needs a Hadoop
        # FileSystem for the scheme, configured by Spark (not by the storage options given here).
        if scan.spec.storage_options:
            return "storage options were given: the executors reach the store with them through pyarrow"
        if not _spark_has_filesystem(spark, table.base_uri):
            return f"Spark has no Hadoop FileSystem for {table.base_uri.split('://', 1)[0]}://; the executors read through pyarrow"
    if not table.config.base_file_format.has_parquet_footers:
        return f"its base files are {table.config.base_file_format.value}: the source reads them through hudi-rs"
    if scan.spec.merge_logs and any(s.log_files for s in scan.slices):
        return "file slices with log files need merging"
    in_files = {n.lower() for n in avro_to_arrow_schema(table.avro_schema()).names}
    dropped = [p for p in table.config.partition_fields if p.lower() not in in_files]
    if dropped:
        return f"partition column(s) {', '.join(dropped)} are not in the data files"
    return None


def read(spark: Any, path: str, where: str | None = None, query_type: str = "snapshot", begin: str | None = None,
         end: str | None = None, as_of: str | None = None, table: HudiTable | None = None,
         storage_options: Mapping[str, str] | None = None, incremental_format: str | None = None, **options: str) -> Any:
    """A DataFrame of the table's rows (matching `where`, a Spark SQL predicate),
    planned by hudi-bridge. Options are the `hudi` source's; `table`, when the
    caller has it open already, saves reading its timeline again;
    `storage_options` reach an object store (the driver's and the executors');
    `incremental_format="cdc"` (with query_type="incremental") reads the
    change feed: op, ts_ms, before, after."""
    if storage_options is None and table is not None:  # the options the table was opened with reach the executors too
        storage_options = table.storage.storage_options
    raw = {PATH: path, QUERY_TYPE: query_type, **options}
    raw.update({f"{STORAGE_PREFIX}{k}": v for k, v in (storage_options or {}).items()})
    raw.update({k: v for k, v in ((BEGIN, begin), (END, end), (AS_OF, as_of), (INCREMENTAL_FORMAT, incremental_format)) if v})
    read_options = ReadOptions.parse(raw)
    if read_options.is_change_feed:
        frame = spark.read.format(source_name(spark)).options(**{k: v for k, v in raw.items() if k != PATH}).load(path)
        return frame.where(where) if where else frame
    table = table or read_options.open_table()
    predicate = _predicate(where)
    runner = None
    if predicate is not None and read_options.data_skipping:
        _, reason = stats_records_over(table, read_options.in_memory_threshold)
        if reason:
            log.info("%s: %s", path, reason)
            runner = spark_candidates_runner(spark)
    scan = plan_scan(read_options, predicate, table, runner, spark_key_lookup(spark, table.base_uri, dict(table.storage.storage_options)))
    for note in scan.explanation:
        log.info("%s: %s", path, note)
    reason = _needs_source(spark, table, scan)
    if reason is not None:
        log.info("%s: read through the hudi source: %s", path, reason)
        frame = spark.read.format(source_name(spark)).options(**{k: v for k, v in raw.items() if k != PATH}).load(path)
    else:
        struct = spark_schema(table_arrow_schema(table))
        files = [join(table.base_uri, s.base_file) for s in scan.slices if s.base_file]
        frame = spark.read.schema(struct).parquet(*files) if files else spark.createDataFrame([], struct)
        if scan.spec.row_filter:
            frame = frame.where(scan.spec.row_filter)
    return frame.where(where) if where else frame
