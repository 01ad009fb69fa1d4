"""The command line: each table command, human and --json forms."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

import hudi
import pyarrow as pa
import pytest
from click.testing import CliRunner

from engine_bridge.cli import main
from metadata import HudiTable
from metadata.sample_tables.sample import build_sample_table


def test_table_commands_json(tmp_path) -> None:
    path = str(tmp_path / "trips")
    build_sample_table(path)
    runner = CliRunner()
    shown = json.loads(runner.invoke(main, ["table", "show", path, "--json"]).output)
    assert shown["name"] == "trips"
    assert shown["table_version"] == 8
    assert shown["table_type"] == "MERGE_ON_READ"
    parts = json.loads(runner.invoke(main, ["table", "partitions", path, "--json"]).output)
    assert parts == ["city=amsterdam", "city=chennai", "city=san_francisco", "city=sao_paulo"]
    files = json.loads(runner.invoke(main, ["table", "files", path, "--partition", "city=chennai", "--json"]).output)
    table = HudiTable.open(path)
    assert [f["file_id"] for f in files] == [s.file_id for s in table.file_slices("city=chennai")]
    assert any(f["log_files"] for f in files)
    first = table.timeline.commits()[0].requested_time
    old = json.loads(runner.invoke(main, ["table", "files", path, "--as-of", first, "--json"]).output)
    assert {f["base_instant"] for f in old} == {first}
    timeline = json.loads(runner.invoke(main, ["table", "timeline", path, "--json"]).output)
    assert [t["action"] for t in timeline].count("commit") == 1  # the compaction


def test_table_errors_exit_2(tmp_path) -> None:
    result = CliRunner().invoke(main, ["table", "show", str(tmp_path)])
    assert result.exit_code == 2
    assert "not a Hudi table" in result.output


@pytest.mark.services
@pytest.mark.slow
def test_demo_runs_and_syncs_into_an_embedded_metastore(tmp_path) -> None:
    result = CliRunner().invoke(main, ["demo", "--path", str(tmp_path / "demo" / "trips"), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert len(report["partitions"]) == 4
    assert report["table"]["latest_completed"] == report["timeline"][-1]["requested_time"]
    sync = report["sync"]
    assert sync["applied"]
    assert [t["table"] for t in sync["tables"]] == ["demo.trips_ro", "demo.trips_rt"]
    assert all(sorted(t["partitions"]["ADD"]) == sorted(report["partitions"]) for t in sync["tables"])
    assert (tmp_path / "demo" / "metastore" / "metastore_db").is_dir()
    spark = report["spark"]
    planned = {(f["partition"], f["file_id"]) for f in report["plan"]["files"]}
    assert spark["file_slices_read"] == len(planned) < spark["file_slices_total"] == len(report["file_slices"])
    merged = hudi.HudiTableBuilder.from_base_uri(str(tmp_path / "demo" / "trips")).build().read()
    expected = [r for r in pa.Table.from_batches(merged).to_pylist()
                if r["city"] in ("chennai", "amsterdam") and r["trip_date"] >= date(2024, 1, 7)]
    assert spark["rows"] == len(expected) > 0


@pytest.mark.services
@pytest.mark.slow
def test_demo_human_form_ends_with_a_summary_in_one_unit_and_cleans_up() -> None:
    import tempfile

    before = set(Path(tempfile.gettempdir()).glob("hudi-bridge-demo-*"))
    result = CliRunner().invoke(main, ["demo", "--no-sync"])
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "WARN" not in result.output and "Stage" not in result.output
    summary = out[out.index("\nSummary\n"):].splitlines()[2:]
    assert summary == ["- the plan kept 4 of 12 file slices", "- Spark read 4 of 12 file slices for 12 rows",
                       "- the temporary folder was removed (run with --keep, or --path DIR, to explore the table afterwards)"]
    assert "column_stats: kept 4 file slices (13 files listed)" in out
    assert set(Path(tempfile.gettempdir()).glob("hudi-bridge-demo-*")) == before


def test_plan_and_incremental_commands(tmp_path) -> None:
    path = str(tmp_path / "trips")
    build_sample_table(path)
    runner = CliRunner()
    result = runner.invoke(main, ["plan", path, "--where", "city = 'chennai'", "--dialect", "trino", "--json"])
    assert result.exit_code == 0, result.output
    planned = json.loads(result.output)
    assert {f["partition"] for f in planned["files"]} == {"city=chennai"}
    assert planned["stages"][1]["stage"] == "partition values"
    assert planned["stages"][1]["kept"] == 1
    explained = runner.invoke(main, ["plan", path, "--where", "city = 'chennai'", "--explain"])
    assert "partition values: kept 1 of 4" in explained.output
    bad = runner.invoke(main, ["plan", path, "--where", "cty = 'x'"])
    assert bad.exit_code == 2
    assert "did you mean 'city'" in bad.output
    commits = HudiTable.open(path).timeline.commits()
    begin = commits[-2].completion_time
    inc = json.loads(runner.invoke(main, ["incremental", path, "--begin", begin, "--json"]).output)
    assert inc["instants"] == [commits[-1].requested_time]
    assert inc["row_filter"] == f"_hoodie_commit_time = '{commits[-1].requested_time}'"


def test_files_of_a_partition_that_does_not_exist_say_so(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from engine_bridge.cli import main
    from metadata.sample_tables.builder import TableBuilder

    path = str(tmp_path / "t")
    TableBuilder(path, pa.schema([("id", pa.int64()), ("region", pa.string())]), partition_fields=["region"]).write(
        [{"id": 1, "region": "eu"}, {"id": 2, "region": "us"}])
    hint = (f"no partition 'region=eur' in {path} (did you mean 'region=eu', 'region=us'?); "
            f"`hudi-bridge table partitions {path}` lists its 2 partition(s)")
    for extra in ([], ["--json"]):  # an error, not an empty answer: one line on stderr, exit 2
        result = CliRunner().invoke(main, ["table", "files", path, "--partition", "region=eur", *extra])
        assert result.exit_code == 2 and result.stdout == "" and result.stderr == f"error: {hint}\n"


def test_plan_streams_column_stats_in_worker_processes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from listers.index_support import column_stats
    from metadata.mdt.write.writer import MetadataTableWriter

    path = str(tmp_path / "trips")
    build_sample_table(path)
    MetadataTableWriter(path).build()
    runner = CliRunner()
    where = ["--where", "fare > 30"]
    whole = json.loads(runner.invoke(main, ["plan", path, *where, "--json"]).output)
    assert any(s["stage"] == "column_stats" for s in whole["stages"]), whole["stages"]
    monkeypatch.setattr(column_stats, "STREAM_ABOVE_BYTES", 0)  # this sample streams as a table too large to keep would
    result = runner.invoke(main, ["plan", path, *where, "--processes", "2", "--json"])
    assert result.exit_code == 0, result.output
    streamed = json.loads(result.output)
    assert streamed["files"] == whole["files"]
    assert [s["note"] for s in streamed["stages"] if s["stage"] == "column_stats"][0].endswith("in 2 worker processes")
