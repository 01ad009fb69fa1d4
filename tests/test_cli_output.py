"""What a person reads: values never cut, empty results in one line, summaries
that say what happened, instants as Hudi spells them, and a README that lists
every option."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pyarrow as pa
import pytest
from click.testing import CliRunner

from engine_bridge.cli import main
from engine_bridge.cli.output import console
from metadata.mdt.write.writer import MetadataTableWriter
from metadata.sample_tables.builder import TableBuilder
from tests.conftest import REPO

SCHEMA = pa.schema([("id", pa.int64()), ("city", pa.string()), ("amount", pa.float64())])


@pytest.fixture
def table(tmp_path: Path) -> str:
    path = str(tmp_path / "a-table-with-a-rather-long-name-so-that-its-paths-are-long" / "t")
    builder = TableBuilder(path, SCHEMA, table_type="MERGE_ON_READ", version=8, partition_fields=["city"])
    builder.write([{"id": i, "city": c, "amount": float(i)} for i, c in enumerate(["sf", "la", "sf"])])
    builder.write([{"id": 1, "city": "la", "amount": 9.5}])
    return path


@pytest.mark.parametrize("width", [60, 100, 250])
def test_paths_and_instants_are_never_cut(table: str, width: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(console, "_width", width)
    files = json.loads(CliRunner().invoke(main, ["table", "files", table, "--json"]).stdout)
    human = CliRunner().invoke(main, ["table", "files", table]).stdout
    for slice_ in files:
        for value in [slice_["base_instant"], *(p.rsplit("/", 1)[-1] for p in [slice_["base_file"], *slice_["log_files"]] if p)]:
            assert value in human, (width, value)
    assert "…" not in human
    listed = CliRunner().invoke(main, ["hive", "list-status", "--set", f"mapreduce.input.fileinputformat.inputdir={table}"]).stdout
    assert all(f"{table}/{s['base_file']}" in listed for s in files if s["base_file"])


def test_empty_results_are_one_line(table: str, tmp_path: Path) -> None:
    planned = CliRunner().invoke(main, ["plan", table, "--where", "city = 'nowhere'"])
    assert planned.stdout == "Candidate file slices: none\n"
    empty = tmp_path / "empty"
    TableBuilder(str(empty), SCHEMA, partition_fields=["city"])  # created, never written
    files = CliRunner().invoke(main, ["table", "files", str(empty)])
    assert files.exit_code == 0 and files.stdout.splitlines()[-1].endswith(": none") and len(files.stdout.splitlines()) == 1


@pytest.mark.parametrize("begin", ["0", "000", "00000000000000000"])
def test_the_start_is_0_or_000_as_in_hudi(table: str, begin: str) -> None:
    result = CliRunner().invoke(main, ["incremental", table, "--begin", begin, "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["begin"] == "00000000000000000" and len(report["instants"]) == 2


def test_index_summaries_say_what_happened(table: str) -> None:
    runner = CliRunner()
    built = runner.invoke(main, ["index", "build", table]).stdout.splitlines()
    assert built[0].startswith("built: files, column_stats, partition_stats (")
    assert runner.invoke(main, ["index", "sync", table]).stdout.startswith("up to date: no instant to sync (")
    compacted = runner.invoke(main, ["index", "compact", table, "--force"]).stdout.splitlines()
    assert compacted[0].startswith("compacted: ") and "no partition" not in compacted[0]
    again = runner.invoke(main, ["index", "compact", table, "--force"]).stdout.splitlines()
    assert len(again) == 1 and re.fullmatch(r"nothing to compact \(\d+\.\d\d s\)", again[0])
    record_index = runner.invoke(main, ["index", "build", table, "--partitions", "record_index"]).stdout
    assert record_index.startswith("built: record_index (") and "already built" not in record_index
    assert runner.invoke(main, ["index", "build", table, "--partitions", "record_index"]).stdout.splitlines()[-1] == \
        "note: already built, left alone: record_index (use --rebuild to rebuild)"


def test_validate_suggests_a_build_and_counts_the_footers_it_checked(table: str) -> None:
    runner = CliRunner()
    missing = runner.invoke(main, ["table", "validate", table])
    assert missing.exit_code == 2
    assert missing.stderr == (f"error: {table}: hoodie.table.metadata.partitions does not list 'files' (listed: none); "
                              f"nothing to validate: build one with `hudi-bridge index build {table}`\n")
    MetadataTableWriter(table).build()
    assert runner.invoke(main, ["table", "validate", table]).stdout == \
        "metadata table and storage agree; column_stats of 2 base file(s) checked against their footers\n"


def test_a_no_op_hive_sync_says_up_to_date(table: str) -> None:
    from engine_bridge.cli.sync import render_sync

    report = {"applied": False, "noop": True, "base_uri": table, "database": "lake", "create_database": False,
              "tables": [{"table": "lake.t_ro", "create": False, "partitions": {"ADD": [], "UPDATE": [], "DROP": []},
                          "added_columns": [], "changed_columns": [], "full_diff": False, "marker": {}}],
              "metastore_calls": {"get_table": 1}}
    with console.capture() as captured:
        render_sync(report)
    assert captured.get().splitlines() == [f"Hive sync of {table} into lake: nothing to do", "lake.t_ro: up to date",
                                           "metastore calls: {'get_table': 1}"]


def test_a_reader_that_raced_a_writer_looks_again_before_advising(table: str, monkeypatch: pytest.MonkeyPatch,
                                                                 caplog: pytest.LogCaptureFixture) -> None:
    import metadata.mdt.listing as listing
    from metadata import HudiTable
    from metadata.errors import MetadataTableBehind

    MetadataTableWriter(table).build()
    original, calls = listing._metadata_listing, []

    def raced(t: object, strict: bool) -> object:
        calls.append(1)
        if len(calls) == 1:  # the data timeline was read after a commit the metadata table then already held
            raise MetadataTableBehind(table, "metadata table is behind the timeline: 1 completed instant(s) not in it")
        return original(t, strict)  # type: ignore[arg-type]

    monkeypatch.setattr(listing, "_metadata_listing", raced)
    with caplog.at_level("WARNING"):
        assert HudiTable.open(table).listing.warning is None
    assert calls == [1, 1] and "behind" not in caplog.text


def test_the_readme_lists_every_option_and_the_version() -> None:
    readme = (REPO / "README.md").read_text()
    synopsis = readme[readme.index("## Command line"):readme.index("## Library")]
    commands = [["demo"], ["plan"], ["incremental"], ["changes"], ["pull"], ["sync"], ["table", "show"], ["table", "files"], ["table", "partitions"],
                ["table", "validate"], ["index", "build"], ["index", "sync"], ["index", "compact"], ["index", "drop"],
                ["hive", "list-status"], ["hive", "pull"], ["serve"], ["trino", "rewrite"], ["trino", "query"]]
    for command in commands:
        options = set(re.findall(r"(--[a-z][a-z-]+)", CliRunner().invoke(main, [*command, "--help"]).stdout)) - {"--help"}
        line = synopsis[synopsis.index(f"hudi-bridge {' '.join(command)} "):]
        block = line[: line.index("\nhudi-bridge ")] if "\nhudi-bridge " in line else line
        assert not {o for o in options if o not in block}, (command, {o for o in options if o not in block})
    assert CliRunner().invoke(main, ["--version"]).stdout.startswith("hudi-bridge, version ")
