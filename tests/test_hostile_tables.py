"""Tables whose writer is hostile (issue 64): what such a table can make
hudi-bridge read, write or delete. Each case plants its trap, runs the
command, and checks a canary outside the table is intact and the command
answered right or refused in one line."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from engine_bridge.cli import main
from metadata.mdt.write.writer import MetadataTableWriter
from metadata.sample_tables.sample import build_sample_table


def _canary(tmp_path: Path) -> tuple[Path, dict[str, bytes]]:
    """A folder outside the table, shaped like a metadata table's, with what it holds."""
    outside = tmp_path / "victim"
    (outside / "column_stats").mkdir(parents=True)
    (outside / "column_stats" / "keep.hfile").write_bytes(b"not yours")
    (outside / "files").mkdir()
    (outside / "files" / "keep.log").write_bytes(b"not yours either")
    return outside, {str(p.relative_to(outside)): p.read_bytes() for p in outside.rglob("*") if p.is_file()}


def _intact(outside: Path, held: dict[str, bytes]) -> None:
    assert {str(p.relative_to(outside)): p.read_bytes() for p in outside.rglob("*") if p.is_file()} == held


def _one_line(output: str) -> None:
    assert "Traceback" not in output and len(output.strip().splitlines()) == 1, output


def test_index_drop_never_deletes_through_a_linked_metadata_folder(tmp_path: Path) -> None:
    table = tmp_path / "t"
    build_sample_table(str(table))
    outside, held = _canary(tmp_path)
    metadata = table / ".hoodie" / "metadata"
    if metadata.exists():
        import shutil

        shutil.rmtree(metadata)
    os.symlink(outside, metadata)
    result = CliRunner().invoke(main, ["index", "drop", str(table), "--partitions", "column_stats"])
    assert result.exit_code != 0
    _one_line(result.output)
    assert "symbolic link" in result.output
    _intact(outside, held)


def test_a_pending_instants_rollback_never_deletes_through_a_link(tmp_path: Path) -> None:
    """`.hoodie/metadata/evil` linked into another folder, holding a file named for a pending metadata instant."""
    table = tmp_path / "t"
    build_sample_table(str(table))
    MetadataTableWriter(str(table)).build()
    outside, held = _canary(tmp_path)
    timeline = table / ".hoodie" / "metadata" / ".hoodie" / "timeline"
    timeline = timeline if timeline.is_dir() else timeline.parent
    ts = "20991231235959999"
    (outside / "files" / f".files-0000-0_{ts}.log.1_0-1-1").write_bytes(b"a victim's log")
    held = {**held, f"files/.files-0000-0_{ts}.log.1_0-1-1": b"a victim's log"}
    (timeline / f"{ts}.deltacommit.requested").write_bytes(b"")
    os.symlink(outside / "files", table / ".hoodie" / "metadata" / "evil")
    result = CliRunner().invoke(main, ["index", "sync", str(table)])
    _intact(outside, held)
    assert "Traceback" not in result.output


def test_a_partition_linked_outside_is_refused_not_indexed(tmp_path: Path) -> None:
    table = tmp_path / "t"
    build_sample_table(str(table), table_type="COPY_ON_WRITE")
    partition = next(p for p in table.iterdir() if p.is_dir() and not p.name.startswith("."))
    outside = tmp_path / "elsewhere"
    partition.rename(outside)
    os.symlink(outside, partition)
    for command in (["plan", str(table), "--where", "fare > 1", "--no-metadata"], ["index", "build", str(table)]):
        result = CliRunner().invoke(main, command)
        assert result.exit_code != 0, (command, result.output)
        _one_line(result.output)
        assert "symbolic link" in result.output
    assert not (table / ".hoodie" / "metadata" / "column_stats").exists()


def test_an_avro_instant_that_inflates_past_its_cap_is_refused_before_it_is_inflated() -> None:
    import io

    import fastavro

    from metadata.errors import HudiFormatError
    from metadata.instant_content import _check_inflated_size, decode_instant_content

    schema = {"type": "record", "name": "r", "fields": [{"name": "s", "type": "string"}]}
    out = io.BytesIO()
    fastavro.writer(out, schema, [{"s": "a" * 5_000_000}], codec="deflate")
    data = out.getvalue()
    assert len(data) < 50_000  # a small file
    with pytest.raises(HudiFormatError, match="inflates past 1000000 bytes"):
        _check_inflated_size("f", data, 1_000_000)
    assert decode_instant_content("f", data)["s"] == "a" * 5_000_000  # under the default cap it reads


def test_a_gzip_block_is_inflated_at_most_to_its_limit() -> None:
    import gzip

    from metadata.mdt.hfile_reader import gunzip_at_most

    bomb = gzip.compress(b"\0" * 50_000_000) + gzip.compress(b"x")  # two members: the fallback path
    assert len(gunzip_at_most(bomb, 1001)) == 1001
    assert gunzip_at_most(gzip.compress(b"ab") + gzip.compress(b"cd"), 100) == b"abcd"


def test_an_instant_file_larger_than_its_cap_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import metadata.timeline as timeline_module

    table = tmp_path / "t"
    build_sample_table(str(table), table_type="COPY_ON_WRITE")
    monkeypatch.setattr(timeline_module, "MAX_INSTANT_BYTES", 64)
    result = CliRunner().invoke(main, ["incremental", str(table), "--begin", "0"])
    assert result.exit_code != 0
    _one_line(result.output)
    assert "larger than the 64 bytes" in result.output


def test_names_with_markup_and_escape_sequences_print_as_they_are_never_as_styles(tmp_path: Path) -> None:
    import pyarrow as pa

    from metadata.sample_tables.builder import TableBuilder

    hostile = "[bold red]RICH[blink]X\x1b]0;pwned\x07\x1b[31mANSI"
    table = str(tmp_path / "t")
    TableBuilder(table, pa.schema([("id", pa.int64()), ("city", pa.string())]), partition_fields=["city"]).write(
        [{"id": 1, "city": hostile}, {"id": 2, "city": "plain"}])
    for command in (["table", "partitions", table], ["table", "files", table], ["incremental", table, "--begin", "0"]):
        result = CliRunner().invoke(main, command, env={"COLUMNS": "300"})
        assert result.exit_code == 0, result.output
        assert "\x1b" not in result.output and "\x07" not in result.output, command
        assert "[bold red]RICH[blink]X\\x1b]0;pwned\\x07\\x1b[31mANSI" in result.output, (command, result.output)
    listed = CliRunner().invoke(main, ["table", "partitions", table, "--json"])
    assert f"city={hostile}" in __import__("json").loads(listed.output)  # --json is the names as they are


def test_deep_documents_and_deep_predicates_fail_in_one_line_naming_the_input() -> None:
    from expressions import parse_sql
    from expressions.errors import SqlSyntaxError
    from metadata.errors import HudiFormatError
    from metadata.instant_content import MAX_DOCUMENT_DEPTH, decode_instant_content, nesting_depth

    with pytest.raises(HudiFormatError, match="c.commit: JSON nested deeper"):
        decode_instant_content("c.commit", b'{"a": ' + b"[" * 1_000_000 + b"]" * 1_000_000 + b"}")
    deep: dict = {"type": "int"}
    for _ in range(20_000):
        deep = {"type": deep}
    assert nesting_depth(deep) > MAX_DOCUMENT_DEPTH  # iterative: no RecursionError on 20,000 levels
    with pytest.raises(SqlSyntaxError, match="at most 32 arithmetic operators"):
        parse_sql("fare" + " + 1" * 50 + " > 3")
    assert parse_sql("x IN (" + ", ".join(f"-{i}" for i in range(500)) + ")") is not None  # a long list is not deep


@pytest.mark.parametrize("planted", ["text", "fifo"])
def test_a_planted_lock_file_is_never_shown_or_read_unbounded(tmp_path: Path, planted: str) -> None:
    """Our lock file holding someone's secret, or a FIFO that never ends, where hudi-bridge keeps its lock."""
    table = tmp_path / "t"
    build_sample_table(str(table))
    lock = table / ".hoodie" / ".hudi-bridge-index.lock"
    if planted == "fifo":
        os.mkfifo(lock)
    else:
        lock.write_text(f"{os.getpid()} aws_secret_access_key=SEKRIT\n")
    result = CliRunner().invoke(main, ["index", "sync", str(table)])
    assert "SEKRIT" not in result.output and "Traceback" not in result.output, result.output


# The matrix: each trap under each command. A command either answers (exit 0 or 1) or refuses in one line, never
# with a traceback, and nothing outside the table changes.
def _linked_metadata(table: Path, outside: Path) -> None:
    import shutil

    shutil.move(str(table / ".hoodie" / "metadata"), str(outside / "metadata"))
    os.symlink(outside / "metadata", table / ".hoodie" / "metadata")


def _linked_partition(table: Path, outside: Path) -> None:
    partition = next(p for p in sorted(table.iterdir()) if p.is_dir() and not p.name.startswith("."))
    partition.rename(outside / "partition")
    os.symlink(outside / "partition", partition)


def _linked_properties(table: Path, outside: Path) -> None:
    (outside / "credentials").write_text("aws_secret_access_key=SEKRIT\n")
    (table / ".hoodie" / "hoodie.properties").unlink()
    os.symlink(outside / "credentials", table / ".hoodie" / "hoodie.properties")


def _linked_instant(table: Path, outside: Path) -> None:
    timeline = table / ".hoodie" / "timeline"
    newest = sorted(p for p in timeline.iterdir() if p.name.endswith(".deltacommit"))[-1]
    newest.rename(outside / newest.name)
    os.symlink(outside / newest.name, newest)


TRAPS = {"linked metadata folder": _linked_metadata, "linked partition": _linked_partition,
         "linked hoodie.properties": _linked_properties, "linked instant file": _linked_instant}
COMMANDS = [["table", "show"], ["table", "partitions"], ["table", "files"], ["table", "validate"], ["plan", "--where", "fare > 1"],
            ["incremental", "--begin", "0"], ["changes", "--begin", "0"], ["index", "sync"], ["index", "drop", "--partitions", "column_stats"],
            ["index", "build"]]


@pytest.mark.parametrize("trap", list(TRAPS))
def test_every_command_on_every_linked_trap_refuses_in_one_line_and_touches_nothing_outside(tmp_path: Path, trap: str) -> None:
    table = tmp_path / "t"
    build_sample_table(str(table))
    MetadataTableWriter(str(table)).build()
    outside = tmp_path / "outside"
    outside.mkdir()
    TRAPS[trap](table, outside)
    held = {str(p.relative_to(outside)): p.read_bytes() for p in outside.rglob("*") if p.is_file()}
    for command in COMMANDS:
        args = [*command[:2], str(table), *command[2:]] if command[0] in ("table", "index") else [command[0], str(table), *command[1:]]
        result = CliRunner().invoke(main, args)
        assert "Traceback" not in result.output and "SEKRIT" not in result.output, (trap, command, result.output)
        if result.exit_code not in (0, 1):
            assert "error:" in result.output and len([line for line in result.output.splitlines() if line.startswith("error:")]) == 1, \
                (trap, command, result.output)
        _intact(outside, held)
