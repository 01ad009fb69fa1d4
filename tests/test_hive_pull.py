"""RFC-04's incremental pull through a real HiveServer2 (Spark's Thrift
server) on a Hudi table synced as a plain Parquet table."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import hudi
import pyarrow as pa
import pytest
from click.testing import CliRunner

from engine_bridge.cli import main
from engine_bridge.hive.pull import HivePullError, hive_pull, plan_pull
from hive_sync import EmbeddedMetastore, SyncOptions, sync
from hive_sync.hiveql import hiveserver2_client
from hive_sync.hms import HmsClient
from metadata import HudiTable
from metadata.sample_tables.builder import TableBuilder
from metadata.storage.storage import Storage
from metadata.table.config import update_table_config

EXTRACT = "SELECT `_hoodie_commit_time`, id, v, p FROM pullsrc.sample WHERE `_hoodie_commit_time` > '%s'"


def _table(path: Path) -> tuple[str, list[str]]:
    builder = TableBuilder(str(path), pa.schema([("id", pa.int64()), ("v", pa.string()), ("p", pa.string())]),
                           partition_fields=["p"], version=6)
    commits = [builder.write([{"id": i, "v": "a", "p": f"p{i % 3}"} for i in range(9)])]
    commits.append(builder.write([{"id": 1, "v": "b", "p": "p1"}, {"id": 30, "v": "b", "p": "p3"}]))
    commits.append(builder.write([{"id": 1, "v": "c", "p": "p1"}, {"id": 2, "v": "c", "p": "p2"}]))
    return str(path), commits


def _range_rows(path: str, begin: str, end: str) -> list[tuple[Any, ...]]:
    options = hudi.HudiReadOptions().with_query_type(hudi.HudiQueryType.Incremental).with_start_timestamp(begin).with_end_timestamp(end)
    rows = pa.Table.from_batches(hudi.HudiTableBuilder.from_base_uri(path).build().read(options)).to_pylist()
    return sorted((r["_hoodie_commit_time"], r["id"], r["v"], r["p"]) for r in rows)


def test_extract_sql_must_pull_incrementally(tmp_path: Path) -> None:
    path, commits = _table(tmp_path / "t")
    table = HudiTable.open(path)
    with pytest.raises(HivePullError, match="has no `_hoodie_commit_time > '%s'` condition"):
        plan_pull("SELECT * FROM pullsrc.sample", table, "pullsrc", "sample", commits[0])
    with pytest.raises(HivePullError, match="does not read other.sample"):
        plan_pull(EXTRACT, table, "other", "sample", commits[0])
    nothing = plan_pull(EXTRACT, table, "pullsrc", "sample", commits[-1])
    assert nothing.instants == () and "FALSE" in nothing.sql.upper()


@pytest.mark.services
@pytest.mark.slow
def test_pull_through_hiveserver2_then_rerun_from_the_next_instant(tmp_path: Path, metastore: EmbeddedMetastore, hiveserver2: str) -> None:
    path, commits = _table(tmp_path / "t")
    with HmsClient(metastore.uri) as client:
        sync(HudiTable.open(path), client, SyncOptions(database="pullsrc", datasource_properties=False))
    client = hiveserver2_client(hiveserver2)
    try:
        first = hive_pull(client, "pullsrc", "sample", "pulltgt", "changes", EXTRACT, commits[0], max_commits=1)
        assert first.instants == (commits[1],) and first.partitions == ("p=p1", "p=p3")
        explained = "\n".join(str(r[0]) for r in client.run("explain", f"EXPLAIN {first.sql}"))
        assert "PartitionFilters" in explained and "p1" in explained and "p3" in explained and "p0" not in explained.split("PartitionFilters")[1][:200]
        target = sorted(tuple(r) for r in client.run("read", "SELECT `_hoodie_commit_time`, id, v, p FROM pulltgt.changes"))
        assert target == _range_rows(path, commits[0], commits[1]) and first.rows == len(target) == 2
    finally:
        client.close()
    sql_file = tmp_path / "extract.sql"
    sql_file.write_text(EXTRACT)
    result = CliRunner().invoke(main, ["hive", "pull", "--hiveserver2", hiveserver2, "--source-db", "pullsrc", "--source-table", "sample",
                                       "--target-db", "pulltgt", "--target-table", "changes", "--extract-sql", str(sql_file),
                                       "--begin", commits[1], "--json"])
    assert result.exit_code == 0, result.output
    second = json.loads(result.stdout)
    assert second["instants"] == [commits[2]] and second["rows"] == 2
    client = hiveserver2_client(hiveserver2)
    try:
        target = sorted(tuple(r) for r in client.run("read", "SELECT `_hoodie_commit_time`, id, v, p FROM pulltgt.changes"))
    finally:
        client.close()
    assert target == sorted(_range_rows(path, commits[0], commits[1]) + _range_rows(path, commits[1], commits[2]))
    again = CliRunner().invoke(main, ["hive", "pull", "--hiveserver2", hiveserver2, "--source-db", "pullsrc", "--source-table", "sample",
                                      "--target-db", "pulltgt", "--target-table", "changes", "--extract-sql", str(sql_file),
                                      "--begin", commits[0], "--json"])  # a rerun from an old begin: the checkpoint wins
    assert again.exit_code == 0, again.output
    assert json.loads(again.stdout)["instants"] == [] and f"pulled through {commits[2]} already" in again.stderr
    client = hiveserver2_client(hiveserver2)
    try:
        assert sorted(tuple(r) for r in client.run("read", "SELECT `_hoodie_commit_time`, id, v, p FROM pulltgt.changes")) == target
    finally:
        client.close()


@pytest.mark.parametrize(("sql", "message"), [
    (EXTRACT + "; DROP TABLE pullsrc.sample", "must be exactly one SELECT statement (found: SELECT, DROP)"),
    ("INSERT INTO x SELECT * FROM pullsrc.sample WHERE `_hoodie_commit_time` > '%s'", "must be exactly one SELECT statement (found: INSERT)"),
    ("SELECT * FROM pullsrc.sample -- WHERE `_hoodie_commit_time` > '%s'", "has no `_hoodie_commit_time > '%s'` condition"),
    ("SELECT * FROM pullsrc.sample WHERE note = \"_hoodie_commit_time > '%s'\"", "has no `_hoodie_commit_time > '%s'` condition"),
    ("SELECT * FROM pullsrc.sample WHERE `_hoodie_commit_time` > '%s' AND x = 'unclosed", "does not parse"),
])
def test_extract_sql_is_one_select_with_the_placeholder_in_the_query(tmp_path: Path, sql: str, message: str) -> None:
    path, commits = _table(tmp_path / "t")
    with pytest.raises(HivePullError, match=re.escape(message)):
        plan_pull(sql, HudiTable.open(path), "pullsrc", "sample", commits[0])


def test_everything_is_checked_before_connecting(tmp_path: Path) -> None:
    path, commits = _table(tmp_path / "t")
    sql_file = tmp_path / "extract.sql"
    sql_file.write_text(EXTRACT)
    base = ["hive", "pull", "--hiveserver2", "127.0.0.1:1", "--source-db", "pullsrc", "--source-table", "sample",
            "--target-db", "pulltgt", "--target-table", "changes", "--extract-sql", str(sql_file), "--table-path", path]
    refused = CliRunner().invoke(main, [*base[:-2], "--begin", "yesterday"])
    assert refused.exit_code == 2 and "'yesterday' is not an instant time" in refused.stderr  # not a connection error
    hostile = tmp_path / "hostile"
    shutil.copytree(path, hostile)
    update_table_config(Storage.open(str(hostile)), {"hoodie.table.name": "t;\nSET x"})
    refused = CliRunner().invoke(main, [*base[:-1], str(hostile), "--begin", commits[0]])
    assert refused.exit_code == 2 and refused.stderr.count("\n") == 1
    assert "cannot stand in a SET key" in refused.stderr
    refused = CliRunner().invoke(main, [*base[:5], "pull src", *base[6:], "--begin", commits[0]])
    assert refused.exit_code == 2 and "'pull src' is not a valid Hive source database name" in refused.stderr
