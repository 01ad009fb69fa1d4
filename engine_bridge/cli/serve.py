"""`hudi-bridge serve`: plan scans of registered tables over HTTP (docs/service.md)."""

from __future__ import annotations

import ipaddress
import logging
import os
import socket

import click

from engine_bridge.cli.app import main
from listers.service_client import TOKEN_VARIABLE  # the one name clients and the service read the token from


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@main.command("serve")
@click.option("--config", "config_path", type=click.Path(dir_okay=False), default=None,
              help="The tables to serve, by name (TOML or JSON: [tables.NAME] uri = ..., storage_options = {...}; [limits] ...).")
@click.option("--table", "tables", multiple=True, metavar="NAME=PATH_OR_URI", help="Serve this table under NAME (repeatable).")
@click.option("--metastore", default=None, metavar="URI", help="A Hive metastore (thrift://host:port) to serve --database's tables from.")
@click.option("--database", "databases", multiple=True, help="Serve every Hudi table of this metastore database, as DATABASE.TABLE (repeatable).")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to bind; anything but a loopback address needs a token.")
@click.option("--port", type=click.IntRange(0, 65535), default=8765, show_default=True)
@click.option("--log-requests/--no-log-requests", default=True, show_default=True,
              help="A JSON line on stderr per request: method, route, status, milliseconds (never a filter or a secret).")
@click.option("--token-file", type=click.Path(dir_okay=False, exists=True), default=None,
              help=f"A file holding the bearer token every request but /health must carry (or set {TOKEN_VARIABLE}).")
def serve_command(config_path: str | None, tables: tuple[str, ...], metastore: str | None, databases: tuple[str, ...], host: str, port: int,
                  log_requests: bool, token_file: str | None) -> None:
    """Serve Hudi scan planning over HTTP: one warm planner for every client, and a table-health page at /."""
    from pathlib import Path

    import uvicorn

    from engine_bridge.service import ServiceConfig, TableEntry, create_app
    from engine_bridge.service.config import absolute_uri, tables_of_database

    config = ServiceConfig.load(config_path) if config_path else ServiceConfig(())
    extra = []
    for given in tables:
        name, sep, uri = given.partition("=")
        if not sep or not name or not uri:
            raise click.UsageError(f"--table {given!r}: give NAME=PATH_OR_URI")
        extra.append(TableEntry(name, absolute_uri(uri, Path.cwd())))
    if databases and not metastore:
        raise click.UsageError("--database needs --metastore")
    for database in databases:
        assert metastore is not None
        extra += tables_of_database(metastore, database)
    config = ServiceConfig(config.tables + tuple(extra), config.limits)
    if not config.tables:
        raise click.UsageError("nothing to serve: give --config FILE or --table NAME=PATH_OR_URI")
    token = Path(token_file).read_text().strip() if token_file else os.environ.get(TOKEN_VARIABLE) or None
    if not is_loopback(host) and not token:
        raise click.UsageError(f"binding {host} (not a loopback address) needs a bearer token: --token-file FILE or {TOKEN_VARIABLE}")
    if port == 0:  # a free port, said before serving so that a script can read it
        with socket.socket() as probe:
            probe.bind((host, 0))
            port = probe.getsockname()[1]
    requests_log = logging.getLogger("hudi_bridge.service")
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(message)s"))
    requests_log.addHandler(handler)
    requests_log.setLevel(logging.INFO if log_requests else logging.WARNING)
    requests_log.propagate = False
    click.echo(f"serving {len(config.tables)} table(s) on http://{host}:{port}/ (API: /v1/tables, /openapi.json)", err=True)
    uvicorn.run(create_app(config, token), host=host, port=port, log_level="warning", access_log=False,
                timeout_graceful_shutdown=10)  # a client holding a request open does not keep a stopped service up
