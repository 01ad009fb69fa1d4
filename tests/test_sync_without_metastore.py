"""`sync --dry-run` plans against an empty metastore when none is given, and
bad names are refused before any metastore is started or called."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
from click.testing import CliRunner

from engine_bridge.cli import main
from metadata.sample_tables.builder import TableBuilder


def _table(tmp_path: Path) -> str:
    path = str(tmp_path / "t")
    builder = TableBuilder(path, pa.schema([("id", pa.int64()), ("city", pa.string())]), partition_fields=["city"], version=8)
    builder.write([{"id": 1, "city": "sf"}, {"id": 2, "city": "la"}])
    return path


def test_a_dry_run_without_a_metastore_plans_a_first_sync(tmp_path: Path) -> None:
    path = _table(tmp_path)
    result = CliRunner().invoke(main, ["sync", path, "--database", "lake", "--dry-run", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["applied"] is False and report["create_database"] is True and report["metastore_calls"] == {}
    [table] = report["tables"]
    assert table["create"] is True and len(table["partitions"]["ADD"]) == 2
    human = CliRunner().invoke(main, ["sync", path, "--database", "lake", "--dry-run"])
    assert human.stdout.splitlines()[0] == f"Hive sync of {path} into lake: planned (dry run)"
    assert "planned against an empty one" in human.stdout


def test_bad_names_are_refused_before_a_metastore_starts(tmp_path: Path) -> None:
    path = _table(tmp_path)
    for args in (["--database", "bad db"], ["--database", "ok", "--table", "t;drop"]):
        result = CliRunner().invoke(main, ["sync", path, *args, "--embedded-metastore", str(tmp_path / "ms")])
        assert result.exit_code == 2
        assert result.stderr.count("\n") == 1 and "is not a valid Hive" in result.stderr
    assert not (tmp_path / "ms").exists()  # no metastore was started (its folder would exist)
