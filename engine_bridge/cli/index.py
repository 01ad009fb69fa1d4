"""`hudi-bridge index ...`: build, sync, compact and drop the metadata table."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import click

from engine_bridge.cli.app import main
from engine_bridge.cli.output import Output, command_output, print_lines, progress
from expressions.errors import ExpressionError
from expressions.index_expressions import SparkIndexExpressions, expression_index_of
from metadata.concurrency.options import parse_option, read_properties_file
from metadata.mdt.expression_index import ExpressionIndexPartition, ExpressionIndexType
from metadata.mdt.file_groups import (
    BUILD_ORDER,
    PARTITION_ORDER,
    SECONDARY_INDEX_PREFIX,
    MdtPartition,
    MetadataPartition,
    SecondaryIndexPartition,
)
from metadata.mdt.stats_engine import LocalStatsEngine, StatsEngine
from metadata.mdt.write.writer import DEFAULT_COMPACT_AFTER, IndexReport, MetadataTableWriter

PARTITION_NAMES = [p.value for p in PARTITION_ORDER]
DEFAULT_BUILD = ",".join(p.value for p in BUILD_ORDER)


@main.group()
def index() -> None:
    """Build and keep the metadata table (files, column_stats, partition_stats, record_index) in Hudi's formats."""


def _partitions(text: str) -> list[MdtPartition]:
    names = [p.strip() for p in text.split(",") if p.strip()]
    unknown = [n for n in names if n not in PARTITION_NAMES]
    if unknown:
        raise click.BadParameter(f"unknown metadata partition {', '.join(unknown)} (choose from {', '.join(PARTITION_NAMES)})")
    return [MdtPartition(n) for n in names]


def _secondary_index(text: str) -> SecondaryIndexPartition:
    name, _, column = text.partition(":")
    if not name.strip() or not column.strip():
        raise click.BadParameter(f"{text!r}: give NAME:COLUMN, as in merchant_idx:merchant_name", param_hint="--secondary-index")
    name = name.strip()
    return SecondaryIndexPartition(name if name.startswith(SECONDARY_INDEX_PREFIX) else SECONDARY_INDEX_PREFIX + name, column.strip())


def _expression_index(text: str, index_type: ExpressionIndexType = ExpressionIndexType.COLUMN_STATS) -> ExpressionIndexPartition:
    option = "--expression-index" if index_type is ExpressionIndexType.COLUMN_STATS else "--bloom-expression-index"
    name, _, expression = text.partition(":")
    if not name.strip() or not expression.strip():
        raise click.BadParameter(f"{text!r}: give NAME:EXPRESSION, as in ts_day:date_format(ts, 'yyyy-MM-dd')", param_hint=option)
    try:
        return expression_index_of(name.strip(), expression.strip(), index_type)
    except ExpressionError as exc:
        raise click.BadParameter(str(exc), param_hint=option) from None


def hoodie_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """--hoodie-option and --hoodie-config: Hudi writer options (lock provider, heartbeat), as the table's writers have them."""
    command = click.option("--hoodie-config", "hoodie_config", default=None, metavar="FILE",
                           help="A properties file of Hudi writer options, as Hudi's writers are given (lock provider and its settings).")(command)
    return click.option("--hoodie-option", "hoodie_option", multiple=True, metavar="KEY=VALUE",
                        help="A Hudi writer option, over --hoodie-config and hoodie.properties: hoodie.write.lock.provider and "
                             "its settings, hoodie.client.heartbeat.* (repeatable; docs/concurrency.md).")(command)


def _writer(path: str, hoodie_option: tuple[str, ...] = (), hoodie_config: str | None = None, **options: Any) -> MetadataTableWriter:
    """A writer that also keeps the table's expression indexes (evaluated as Spark does, in UTC),
    with the Hudi writer options given."""
    given = read_properties_file(hoodie_config) if hoodie_config else {}
    given.update(parse_option(text) for text in hoodie_option)
    return MetadataTableWriter(path, progress=progress, index_expressions=SparkIndexExpressions(), writer_options=given, **options)


@contextmanager
def _engine(engine: str, parallelism: int) -> Iterator[StatsEngine]:
    """The stats engine; a Spark session it starts is stopped afterwards, as demo and pull do."""
    if engine == "local":
        yield LocalStatsEngine(parallelism=parallelism, processes=None)  # a large local build uses every core
        return
    from engine_bridge.spark.index_engine import SparkStatsEngine
    from engine_bridge.spark.session import command_spark_session

    with command_spark_session("hudi-bridge index", cores=parallelism) as spark:
        yield SparkStatsEngine(spark, parallelism)


def _render(report: IndexReport) -> Output:
    def render() -> None:
        done = {"build": "built", "sync": "synced", "compact": "compacted", "drop": "dropped"}[report.action]
        names = report.compacted if report.action == "compact" else report.partitions
        if report.action == "sync":
            headline = f"synced {len(report.instants)} instant(s)" if report.instants else (
                f"up to date, kept by the writer: Hudi's writer recorded instant {report.kept_by_writer} in the metadata table itself"
                if report.kept_by_writer else "up to date: no instant to sync")
        else:
            headline = f"{done}: {', '.join(names)}" if names else f"nothing to {report.action}"
        lines = [f"{headline} ({report.seconds:.2f} s)"]
        if report.instants:
            lines.append(f"instants applied: {len(report.instants)} ({report.instants[0]} .. {report.instants[-1]})")
        if report.files_indexed or report.records_written:
            lines.append(f"files indexed: {report.files_indexed}, records written: {report.records_written}")
        if report.compacted and report.action != "compact":
            lines.append(f"compacted: {', '.join(report.compacted)}")
        lines += [f"note: {n}" for n in report.notes]
        print_lines(lines)

    payload: dict[str, Any] = report.to_dict()
    return Output(payload, render)


@index.command("build")
@click.argument("path")
@click.option("--partitions", default=DEFAULT_BUILD, show_default=True,
              help=f"Metadata partitions to build, of {', '.join(PARTITION_NAMES)} (record_index is opt-in, as in Hudi).")
@click.option("--columns", default=None,
              help="Columns for column_stats/partition_stats, nested fields as a.b (default: Hudi's: meta fields and the first 32 columns).")
@click.option("--all-columns", is_flag=True, help="Every indexable top-level column, not only the first 32.")
@click.option("--secondary-index", "secondary", multiple=True, metavar="NAME:COLUMN",
              help="A Hudi secondary index on COLUMN, as partition secondary_index_NAME (repeatable; needs record_index).")
@click.option("--expression-index", "expression", multiple=True, metavar="NAME:EXPRESSION",
              help="A Hudi expression index (column_stats of f(column)) as partition expr_index_NAME, f in Spark SQL: "
                   "date_format(ts, 'yyyy-MM-dd'), year(ts), substring(name, 1, 3), ... (repeatable; table version 8+).")
@click.option("--bloom-expression-index", "bloom_expression", multiple=True, metavar="NAME:EXPRESSION",
              help="A Hudi expression index of bloom filters of f(column) per file (strings and integers; for equality and IN).")
@click.option("--rebuild", is_flag=True, help="Rebuild partitions that already exist.")
@click.option("--engine", type=click.Choice(["local", "spark"]), default="local", show_default=True,
              help="Where footers and logs are read: a thread pool here, or a Spark job.")
@click.option("--parallelism", type=click.IntRange(min=1), default=8, show_default=True)
@hoodie_options
@command_output
def index_build(path: str, partitions: str, columns: str | None, all_columns: bool, secondary: tuple[str, ...],
                expression: tuple[str, ...], bloom_expression: tuple[str, ...], rebuild: bool, engine: str, parallelism: int,
                hoodie_option: tuple[str, ...], hoodie_config: str | None) -> Output:
    """Bootstrap metadata partitions from the completed timeline (RFC-15, RFC-27)."""
    chosen: list[str] | None = [c.strip() for c in columns.split(",") if c.strip()] if columns else None
    if all_columns and chosen:
        raise click.UsageError("--all-columns and --columns: give one")
    wanted: list[MetadataPartition] = [*_partitions(partitions), *(_secondary_index(text) for text in secondary),
                                       *(_expression_index(text) for text in expression),
                                       *(_expression_index(text, ExpressionIndexType.BLOOM_FILTERS) for text in bloom_expression)]  # bad names fail before Spark starts
    with _engine(engine, parallelism) as stats_engine:
        return _render(_writer(path, hoodie_option, hoodie_config, engine=stats_engine).build(wanted, chosen, rebuild=rebuild,
                                                                                             all_columns=all_columns))


@index.command("sync")
@click.argument("path")
@click.option("--compact-after", type=click.IntRange(min=1), default=DEFAULT_COMPACT_AFTER, show_default=True,
              help="Compact a file group once it has more log files than this.")
@click.option("--engine", type=click.Choice(["local", "spark"]), default="local", show_default=True,
              help="Where the new files' footers and logs are read: a thread pool here, or a Spark job.")
@click.option("--parallelism", type=click.IntRange(min=1), default=8, show_default=True)
@hoodie_options
@command_output
def index_sync(path: str, compact_after: int, engine: str, parallelism: int, hoodie_option: tuple[str, ...], hoodie_config: str | None) -> Output:
    """Apply the data instants completed since the metadata table's last one."""
    with _engine(engine, parallelism) as stats_engine:
        return _render(_writer(path, hoodie_option, hoodie_config, engine=stats_engine, compact_after=compact_after).sync())


@index.command("compact")
@click.argument("path")
@click.option("--force", is_flag=True, help="Compact every file group with log files, not only those past the threshold.")
@click.option("--compact-after", type=click.IntRange(min=1), default=DEFAULT_COMPACT_AFTER, show_default=True)
@hoodie_options
@command_output
def index_compact(path: str, force: bool, compact_after: int, hoodie_option: tuple[str, ...], hoodie_config: str | None) -> Output:
    """Fold log files into new HFile base files, as Hudi's metadata compaction does."""
    return _render(_writer(path, hoodie_option, hoodie_config, compact_after=compact_after).compact(force=force))


@index.command("drop")
@click.argument("path")
@click.option("--partitions", required=True,
              help="Metadata partitions to drop: any the table lists, Hudi's secondary indexes included (dropping files drops them all).")
@hoodie_options
@command_output
def index_drop(path: str, partitions: str, hoodie_option: tuple[str, ...], hoodie_config: str | None) -> Output:
    """Remove metadata partitions: the table config first, then the files."""
    writer = _writer(path, hoodie_option, hoodie_config)
    listed = set(writer.data.config.metadata_partitions)
    names = [p.strip() for p in partitions.split(",") if p.strip()]
    chosen: list[MdtPartition | str] = [n for n in names if n in listed and n not in PARTITION_NAMES]
    return _render(writer.drop([*_partitions(",".join(n for n in names if n not in chosen)), *chosen]))
