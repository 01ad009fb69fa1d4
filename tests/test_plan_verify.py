"""`plan --verify`: the slices a plan ruled out are read, and a plan that
dropped a slice holding a matching row (statistics that lie, as Apache
Hudi's #18755 writes them) exits 1 naming it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
from click.testing import CliRunner

from engine_bridge.cli import main
from metadata.mdt.write.writer import MetadataTableWriter
from metadata.sample_tables.builder import TableBuilder
from tests.test_index_writer import ShiftedStatsEngine

SCHEMA = pa.schema([("id", pa.string()), ("city", pa.string()), ("fare", pa.float64())])


def _table(path: Path, engine: Any = None) -> str:
    builder = TableBuilder(str(path), SCHEMA, table_type="MERGE_ON_READ", version=8, partition_fields=["city"])
    builder.write([{"id": f"k{i}", "city": city, "fare": float(i * 10)} for i, city in enumerate(["sf", "la", "ny", "sf", "la"])])
    builder.write([{"id": "k1", "city": "la", "fare": 500.0}])  # a log file: merged rows are what verify reads
    MetadataTableWriter(str(path), engine=engine).build()
    return str(path)


def test_a_sound_plan_verifies(tmp_path: Path) -> None:
    table = _table(tmp_path / "t")
    result = CliRunner().invoke(main, ["plan", table, "--where", "fare < 15.0", "--verify", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["verify"] == {"ok": True, "ruled_out": 1, "checked": 1, "matches": [], "unchecked": []}
    human = CliRunner().invoke(main, ["plan", table, "--where", "fare < 15.0", "--verify"])
    assert "verify: read 1 of 1 ruled-out file slices; none held a matching row" in human.stdout


def test_lying_statistics_are_caught_and_named(tmp_path: Path) -> None:
    # statistics that lie the dangerous way: fare's min 100 above what each file holds
    table = _table(tmp_path / "t", ShiftedStatsEngine(min_shift=100, max_shift=0))
    result = CliRunner().invoke(main, ["plan", table, "--where", "fare < 15.0", "--verify", "--json"])
    assert result.exit_code == 1, result.output
    report = json.loads(result.stdout)
    assert not report["verify"]["ok"] and report["verify"]["matches"]
    kept = {f["file_id"] for f in report["files"]}
    assert len(kept) < 3 and report["verify"]["matches"] == [m for m in report["verify"]["matches"] if m.startswith(table)]
    assert report["verify"]["matches"] == [f"{table}/{m.split(table + '/', 1)[1]}" for m in report["verify"]["matches"]]
    assert [m.split("/")[-2] for m in report["verify"]["matches"]] == ["city=sf"]  # la's merged rows moved k1 to 500: no match there
    sampled = CliRunner().invoke(main, ["plan", table, "--where", "fare < 15.0", "--verify", "--sample", "1", "--json"])
    assert json.loads(sampled.stdout)["verify"]["checked"] == 1
    human = CliRunner().invoke(main, ["plan", table, "--where", "fare < 15.0", "--verify"])
    assert human.exit_code == 1 and "verify: 1 ruled-out file slice(s) held a matching row: " in human.stdout
    assert CliRunner().invoke(main, ["plan", table, "--where", "fare < 15.0", "--sample", "1"]).exit_code == 2
