"""Candidate files handed to Presto/Trino: the SQL rewrite, and the trino
client against a third-party server that speaks Trino's protocol
(buenavista over DuckDB, "$path" as Hadoop names a local file), started on
loopback once per session. It is quick and runs without Java; the live Trino
is in tests/test_trino_live.py."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import hudi
import pyarrow as pa
import pytest
import sqlglot
from click.testing import CliRunner

from engine_bridge.cli import main
from engine_bridge.trino import RewriteError, candidate_query, run_query
from listers import plan
from metadata.storage.paths import join
from tests.http_services import asgi_server
from tests.trino_services import build_trips


@pytest.fixture(scope="session")
def trips(tmp_path_factory: pytest.TempPathFactory) -> str:
    return build_trips(tmp_path_factory.mktemp("trino") / "trips")


@pytest.fixture(scope="session")
def trino_server(trips: str) -> Iterator[str]:
    """http://127.0.0.1:port of buenavista's Trino HTTP protocol over DuckDB,
    with `trips` as a view over every base file ever written, with "$path"."""
    duckdb = pytest.importorskip("duckdb")
    from buenavista.backends.duckdb import DuckDBConnection
    from buenavista.examples.duckdb_http import rewriter
    from buenavista.http import main as http
    from buenavista.http import schemas
    from fastapi import FastAPI
    from pydantic import HttpUrl

    class QueryResult(schemas.QueryResult):  # type: ignore[misc]
        """buenavista 0.5 leaves these out of its responses; pydantic 2 requires them unless they default."""

        partial_cancel_uri: HttpUrl | None = None
        update_count: int | None = None

    schemas.QueryResult = QueryResult

    files = sorted(str(p) for p in Path(trips).rglob("*.parquet") if ".hoodie" not in p.parts)
    db = duckdb.connect()
    db.execute(f"""CREATE VIEW trips AS SELECT * EXCLUDE (filename), 'file:' || filename AS "$path" FROM read_parquet({files!r}, filename=true)""")
    app = FastAPI()
    http.quacko(app, DuckDBConnection(db), rewriter)
    with asgi_server(app, "the Trino protocol server") as url:
        yield url


def _hudi_rs_rows(path: str, keep: Any) -> list[tuple[Any, ...]]:
    rows = pa.Table.from_batches(hudi.HudiTableBuilder.from_base_uri(path).build().read()).to_pylist()
    return sorted((r["id"], r["v"]) for r in rows if keep(r))


QUERIES = [  # (query, the same predicate for plan(), the rows it keeps)
    ("SELECT id, v FROM trips WHERE p = 'p1' AND id >= 1", "p = 'p1' AND id >= 1", lambda r: r["p"] == "p1" and r["id"] >= 1),
    ("SELECT t.id, t.v FROM trips AS t WHERE t.id IN (2, 4, 20)", "id IN (2, 4, 20)", lambda r: r["id"] in (2, 4, 20)),
    ("SELECT id, v FROM trips", "TRUE", lambda r: True),
    ("SELECT id, v FROM trips WHERE v = 'zzz'", "v = 'zzz'", lambda r: False),
]


@pytest.mark.parametrize("sql,predicate,keep", QUERIES)
def test_rewritten_query_returns_the_snapshot_rows(trips: str, trino_server: str, sql: str, predicate: str, keep: Any) -> None:
    query = candidate_query(sql, trips, "trino")
    names, rows = run_query(trino_server, "memory", "main", query.sql)
    assert names == ["id", "v"]
    assert sorted(rows) == _hudi_rs_rows(trips, keep)
    assert set(query.files) == {"file:" + join(trips, s.base_file) for s in plan(trips, predicate, dialect="trino").files if s.base_file}


def test_the_view_alone_returns_older_file_versions(trips: str, trino_server: str) -> None:
    _, everything = run_query(trino_server, "memory", "main", "SELECT id, v FROM trips")
    assert len(everything) > len(_hudi_rs_rows(trips, lambda r: True))


def test_incremental_rewrite_reads_the_range(trips: str, trino_server: str) -> None:
    from metadata import HudiTable

    commits = HudiTable.open(trips).timeline.commits()
    query = candidate_query("SELECT id, v FROM trips", trips, "trino", begin=commits[0].completion_time)
    _, rows = run_query(trino_server, "memory", "main", query.sql)
    assert sorted(rows) == [(1, "b"), (2, "b"), (4, "c"), (20, "c")]


@pytest.mark.parametrize("dialect", ["trino", "presto"])
def test_rewrite_round_trips_through_the_dialects(trips: str, dialect: str) -> None:
    query = candidate_query("SELECT id FROM trips WHERE p IN ('p0', 'p2') AND id > 3", trips, dialect)
    assert sqlglot.parse_one(query.sql, read=dialect).sql(dialect=dialect) == query.sql
    assert '"$path" IN (' in query.sql and "p = 'p0' OR p = 'p2'" in query.sql
    with pytest.raises(RewriteError, match="one Hudi table"):
        candidate_query("SELECT a.id FROM trips a JOIN trips b ON a.id = b.id", trips, dialect)
    with pytest.raises(RewriteError, match="expected a SELECT"):
        candidate_query("DELETE FROM trips", trips, dialect)


def test_cli_query_and_rewrite(trips: str, trino_server: str) -> None:
    runner = CliRunner()
    result = runner.invoke(main, ["trino", "query", "--server", trino_server, "--catalog", "memory", "--schema", "main",
                                  "--session", "query_max_run_time=1m", "--table-path", trips, "--json",
                                  "SELECT id, v FROM trips WHERE p = 'p4'"])
    assert result.exit_code == 0, result.output
    import json

    assert json.loads(result.stdout)["rows"] == [[20, "c"]]
    rewritten = runner.invoke(main, ["trino", "rewrite", "--table-path", trips, "SELECT id FROM trips WHERE p = 'p4'"])
    assert rewritten.exit_code == 0 and '"$path" IN' in rewritten.output
    bad = runner.invoke(main, ["trino", "query", "--server", trino_server, "--catalog", "memory", "--schema", "main",
                               "--table-path", trips, "SELECT nothing FROM trips"])
    assert bad.exit_code == 2
