"""`hudi-bridge trino ...`: candidate files handed to Presto/Trino queries."""

from __future__ import annotations

from collections.abc import Callable

import click

from engine_bridge.cli.app import main
from engine_bridge.cli.output import Output, command_output, console, key_values, print_table


@main.group()
def trino() -> None:
    """Presto/Trino's side: queries rewritten to read only candidate files."""


def _rewrite_options(command: Callable[..., Output]) -> Callable[..., None]:
    """What every rewriting command takes: the table, the dialect, an optional range, the SQL."""
    for decorate in reversed([
        click.option("--table-path", required=True, help="The Hudi table's location as the engine sees it."),
        click.option("--dialect", type=click.Choice(["trino", "presto"]), default="trino", show_default=True),
        click.option("--begin", default=None, help="Pull commits after this instant (incremental)."),
        click.option("--end", default=None, help="Last instant of an incremental pull."),
        click.argument("sql"),
    ]):
        command = decorate(command)
    return command_output(command)


@trino.command("rewrite")
@_rewrite_options
def rewrite_command(table_path: str, dialect: str, begin: str | None, end: str | None, sql: str) -> Output:
    """Print SQL rewritten with the kept partitions and "$path" IN (candidate base files)."""
    from engine_bridge.trino import candidate_query

    query = candidate_query(sql, table_path, dialect, begin, end)
    return Output({"sql": query.sql, "files": list(query.files), "partitions": list(query.partitions),
                   "explanation": query.explanation}, lambda: console.print(query.sql, soft_wrap=True))


@trino.command("query")
@click.option("--server", required=True, help="http(s)://host:port of the coordinator.")
@click.option("--catalog", required=True)
@click.option("--schema", required=True)
@click.option("--user", default="hudi-bridge", show_default=True)
@click.option("--session", "session", multiple=True, metavar="KEY=VALUE", help="A session property, as the trino client passes it.")
@_rewrite_options
def query_command(server: str, catalog: str, schema: str, user: str, session: tuple[str, ...], table_path: str, dialect: str,
                  begin: str | None, end: str | None, sql: str) -> Output:
    """Run SQL rewritten to read only the candidate files, through the trino client."""
    from engine_bridge.trino import candidate_query, run_query

    query = candidate_query(sql, table_path, dialect, begin, end)
    names, rows = run_query(server, catalog, schema, query.sql, user, key_values(session, "--session"))
    payload = {"sql": query.sql, "files": len(query.files), "columns": names, "rows": [list(r) for r in rows]}
    return Output(payload, lambda: print_table(f"{len(rows)} row(s) from {len(query.files)} file(s)", [dict(zip(names, r)) for r in rows]))
