"""`hudi-bridge hive ...`: what Hudi's Hive input format would list."""

from __future__ import annotations

import click

from engine_bridge.cli.app import main
from engine_bridge.cli.output import Output, command_output, console, key_values, print_table


@main.group()
def hive() -> None:
    """Hive's side of Hudi tables: the input format's listing."""


@hive.command("list-status")
@click.option("--conf", "conf_file", default=None, type=click.Path(exists=True, dir_okay=False),
              help="A Hadoop configuration XML file (the job's JobConf).")
@click.option("--set", "settings", multiple=True, metavar="KEY=VALUE", help="Set or override one configuration key.")
@command_output
def list_status_command(conf_file: str | None, settings: tuple[str, ...]) -> Output:
    """The files HoodieParquetInputFormat.listStatus returns for a job configuration."""
    from engine_bridge.hive import list_status, load_job_conf

    conf = {**(load_job_conf(conf_file) if conf_file else {}), **key_values(settings, "--set")}
    result = list_status(conf)

    def render() -> None:
        console.print(result.explain())
        print_table("Files", [{"path": f.path, "length": f.length, "modified_ms": f.modification_time} for f in result.files])

    return Output(result.to_dict(), render)


@hive.command("pull")
@click.option("--hiveserver2", required=True, metavar="HOST:PORT", help="HiveServer2 (or Spark's Thrift server) to run the pull on.")
@click.option("--source-db", required=True)
@click.option("--source-table", required=True)
@click.option("--target-db", required=True)
@click.option("--target-table", required=True)
@click.option("--extract-sql", required=True, type=click.Path(exists=True, dir_okay=False),
              help="A file with the SELECT to run; it must hold `_hoodie_commit_time > '%s'`.")
@click.option("--begin", required=True, help="Pull commits after this instant (requested time, as Hive's reader compares).")
@click.option("--max-commits", type=int, default=1, show_default=True, help="Commits to pull (-1: all).")
@click.option("--table-path", default=None, help="The Hudi table's path (default: the source table's location).")
@command_output
def pull_command(hiveserver2: str, source_db: str, source_table: str, target_db: str, target_table: str, extract_sql: str,
                 begin: str, max_commits: int, table_path: str | None) -> Output:
    """RFC-04's incremental pull into a target table, through HiveServer2."""
    from engine_bridge.hive.pull import check_pull, hive_pull
    from hive_sync.hiveql import hiveserver2_client

    with open(extract_sql, encoding="utf-8") as handle:
        sql = handle.read()
    check_pull(sql, source_db, source_table, target_db, target_table, begin, table_path)  # before connecting
    client = hiveserver2_client(hiveserver2)
    try:
        result = hive_pull(client, source_db, source_table, target_db, target_table, sql, begin, max_commits, table_path)
    finally:
        client.close()

    def render() -> None:
        console.print(f"pulled {len(result.instants)} instant(s) after {result.begin} from {result.source}: "
                      f"{result.rows} row(s) into {result.target} (partitions: {', '.join(result.partitions) or 'none'})")

    return Output(result.to_dict(), render)
