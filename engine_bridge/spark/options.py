"""Read options of the `hudi` Spark source, under Apache Hudi's own names.

Spark lower-cases option keys, so every key is looked up lower-cased.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

from metadata import HudiTable
from metadata.errors import HudiBridgeError
from metadata.timeline.instant import check_instant_time
from metadata.util.text_enum import TextEnum

PATH = "path"
QUERY_TYPE = "hoodie.datasource.query.type"
BEGIN = "hoodie.datasource.read.begin.instanttime"
END = "hoodie.datasource.read.end.instanttime"
INCREMENTAL_FORMAT = "hoodie.datasource.query.incremental.format"
AS_OF = "as.of.instant"
DATA_SKIPPING = "hoodie.enable.data.skipping"
METADATA = "hoodie.metadata.enable"
INCREMENTAL_FALLBACK = "hoodie.datasource.read.incr.fallback.fulltablescan.enable"
# hudi-bridge's own: whether pushed filters may prune file slices, and how
# many bytes of file slices one Spark partition reads (Spark's maxPartitionBytes).
PRUNE_PUSHED = "hoodie.bridge.prune.pushed.filters"
SPLIT_BYTES = "hoodie.bridge.split.bytes"
# A `hudi-bridge serve` URL: the driver asks it for the plan (the path is then the table's name there); executors read the files.
SERVICE = "hoodie.bridge.service"
# How to reach an object store: `hoodie.bridge.storage.<storage option>` (any
# name metadata.storage.options knows, e.g. AWS_ENDPOINT_URL), and Hadoop's
# `fs.s3a.*` as a Spark conf hands them over. The planner and every executor
# open the table with them, through pyarrow: no hadoop-aws jar is needed.
STORAGE_PREFIX = "hoodie.bridge.storage."
HADOOP_S3A_PREFIX = "fs.s3a."
# Hudi's: column_stats records (files x columns) above which its reader
# evaluates the index on executors. Ours plans a million files and three
# columns on the driver in a few seconds and under 1 GB, so the default is
# that size: above it, `read()` plans on the executors (a Spark source's
# planner runs in a Python worker with no session, and plans locally).
IN_MEMORY_THRESHOLD = "hoodie.metadata.index.column.stats.inmemory.projection.threshold"
DEFAULT_IN_MEMORY_THRESHOLD = 3_000_000
DEFAULT_SPLIT_BYTES = 128 * 1024 * 1024
OPEN_COST_BYTES = 4 * 1024 * 1024  # Spark's spark.sql.files.openCostInBytes


class SparkOptionError(HudiBridgeError, ValueError):
    """An option of the `hudi` source has a value it cannot take."""


class QueryType(TextEnum):
    SNAPSHOT = "snapshot"
    READ_OPTIMIZED = "read_optimized"
    INCREMENTAL = "incremental"


class IncrementalFormat(TextEnum):
    """Hudi's `hoodie.datasource.query.incremental.format`: the rows as they
    are now, or the change feed (op, ts_ms, before, after)."""

    LATEST_STATE = "latest_state"
    CDC = "cdc"


def _flag(options: Mapping[str, str], key: str, default: bool) -> bool:
    text = options.get(key)
    if text is None:
        return default
    lowered = text.strip().lower()
    if lowered not in ("true", "false"):
        raise SparkOptionError(f"option {key}={text!r}: expected true or false")
    return lowered == "true"


def wants_change_feed(options: Mapping[str, str]) -> bool:
    """Whether the options ask for Hudi's CDC rows (the value is checked by ReadOptions.parse)."""
    return any(k.lower() == INCREMENTAL_FORMAT and v.strip().lower() == IncrementalFormat.CDC.value for k, v in options.items())


def storage_options_in(options: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    """The storage options among a source's options (keys lower-cased, as Spark passes them)."""
    found = {k.removeprefix(STORAGE_PREFIX): v for k, v in options.items() if k.startswith((STORAGE_PREFIX, HADOOP_S3A_PREFIX))}
    return tuple(sorted(found.items()))


def query_instant(text: str, key: str) -> str:
    """Hudi's accepted spellings of a query instant, as an instant time:
    `yyyyMMddHHmmss[SSS]`, `yyyy-MM-dd HH:mm:ss[.SSS]` and `yyyy-MM-dd`
    (Hudi's `formatQueryInstant`)."""
    value = text.strip()
    digits = "".join(c for c in value if c.isdigit())
    if len(value) in (19, 23) and value[4] == "-" and value[10] == " ":
        digits = digits + "000" if len(value) == 19 else digits
    elif len(value) == 10 and value[4] == "-":
        digits += "000000000"
    elif not (value.isdigit() and len(value) in (14, 17)):
        raise SparkOptionError(
            f"option {key}={text!r}: expected yyyyMMddHHmmss[SSS], 'yyyy-MM-dd HH:mm:ss[.SSS]' or yyyy-MM-dd"
        )
    return check_instant_time(digits, key)


@dataclass(frozen=True)
class ReadOptions:
    path: str
    query_type: QueryType = QueryType.SNAPSHOT
    begin: str | None = None
    end: str | None = None
    as_of: str | None = None
    data_skipping: bool = True
    use_metadata: bool = True
    incremental_fallback: bool = False
    incremental_format: IncrementalFormat = IncrementalFormat.LATEST_STATE
    prune_pushed: bool = True
    split_bytes: int = DEFAULT_SPLIT_BYTES
    storage_options: tuple[tuple[str, str], ...] = ()
    in_memory_threshold: int = DEFAULT_IN_MEMORY_THRESHOLD
    service: str | None = None

    @property
    def is_change_feed(self) -> bool:
        return self.incremental_format is IncrementalFormat.CDC

    def open_table(self) -> HudiTable:
        """The table, read through its metadata table unless hoodie.metadata.enable=false (with a service: where it says the table is)."""
        location = self.path
        if self.service is not None:
            from listers.service_client import ServiceClient

            location = ServiceClient(self.service).table(self.path)["base_uri"]
        return HudiTable.open(location, use_metadata=None if self.use_metadata else False,
                              storage_options=dict(self.storage_options))

    @classmethod
    def parse(cls, raw: Mapping[str, str], prune_pushed_default: bool = True) -> ReadOptions:
        options = {k.lower(): v for k, v in raw.items()}
        path = options.get(PATH)
        if not path and options.get("paths"):
            paths = json.loads(options["paths"])
            if len(paths) != 1:
                raise SparkOptionError(f"the hudi source reads one table at a time; got {len(paths)} paths")
            path = paths[0]
        if not path:
            raise SparkOptionError(
                "the hudi source got no path. Spark passes no options to a Python data source for a catalog "
                "table; read it with engine_bridge.spark.table(spark, 'db.table'), or create temporary views with "
                "engine_bridge.spark.register_views(spark, 'db')"
            )
        try:
            query_type = QueryType(options.get(QUERY_TYPE, "snapshot").strip().lower())
        except ValueError:
            raise SparkOptionError(f"option {QUERY_TYPE}={options[QUERY_TYPE]!r}: expected one of {', '.join(QueryType.values())}") from None
        begin = options.get(BEGIN)
        end = options.get(END)
        if query_type is QueryType.INCREMENTAL and not begin:
            raise SparkOptionError(f"an incremental query needs {BEGIN}")
        if query_type is not QueryType.INCREMENTAL and (begin or end):
            raise SparkOptionError(f"{BEGIN} and {END} apply to {QUERY_TYPE}=incremental only")
        try:
            incremental_format = IncrementalFormat(options.get(INCREMENTAL_FORMAT, "latest_state").strip().lower())
        except ValueError:
            raise SparkOptionError(f"option {INCREMENTAL_FORMAT}={options[INCREMENTAL_FORMAT]!r}: expected one of "
                                   f"{', '.join(IncrementalFormat.values())}") from None
        if incremental_format is IncrementalFormat.CDC and query_type is not QueryType.INCREMENTAL:
            raise SparkOptionError(f"{INCREMENTAL_FORMAT}=cdc applies to {QUERY_TYPE}=incremental only")
        as_of = options.get(AS_OF)
        if as_of and query_type is QueryType.INCREMENTAL:
            raise SparkOptionError(f"{AS_OF} (time travel) cannot be combined with an incremental query")
        split_bytes = _count(options, SPLIT_BYTES, DEFAULT_SPLIT_BYTES, "a number of bytes")
        threshold = _count(options, IN_MEMORY_THRESHOLD, DEFAULT_IN_MEMORY_THRESHOLD, "a number of records")
        return cls(
            path=path,
            query_type=query_type,
            begin=query_instant(begin, BEGIN) if begin else None,
            end=query_instant(end, END) if end else None,
            as_of=query_instant(as_of, AS_OF) if as_of else None,
            data_skipping=_flag(options, DATA_SKIPPING, True),
            use_metadata=_flag(options, METADATA, True),
            incremental_fallback=_flag(options, INCREMENTAL_FALLBACK, False),
            incremental_format=incremental_format,
            prune_pushed=_flag(options, PRUNE_PUSHED, prune_pushed_default),
            split_bytes=max(1, split_bytes),
            storage_options=storage_options_in(options),
            in_memory_threshold=threshold,
            service=options.get(SERVICE) or None,
        )


def _count(options: Mapping[str, str], key: str, default: int, what: str) -> int:
    text = options.get(key)
    try:
        return int(text) if text else default
    except ValueError:
        raise SparkOptionError(f"option {key}={text!r}: expected {what}") from None
