"""A completed instant file with no bytes never silently changes what is
visible: replaced file groups do not come back (the view fails naming the
file), a log file is not dropped (listed as Hudi lists it, with a warning),
and incremental pulls and syncs do not skip what it wrote."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pyarrow as pa
import pytest
from click.testing import CliRunner

from engine_bridge.cli import main
from hive_sync.partition_events import changed_partitions
from listers import IncrementalRangeError, incremental, plan
from metadata import HudiFormatError, HudiTable
from metadata.sample_tables.builder import TableBuilder

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string())])


def rows(ids: list[int]) -> list[dict[str, object]]:
    return [{"id": i, "p": f"p{i % 2}"} for i in ids]


def timeline_folder(path: Path, version: int) -> Path:
    return path / ".hoodie" / ("timeline" if version >= 8 else "")


def completed_file(path: Path, version: int, ts: str, action: str) -> Path:
    [found] = [f for f in timeline_folder(path, version).iterdir() if f.name.startswith(ts) and f.name.endswith("." + action)]
    return found


@pytest.mark.parametrize("version", [6, 8])
def test_empty_replacecommit_fails_naming_the_file(tmp_path: Path, version: int) -> None:
    path = tmp_path / "t"
    builder = TableBuilder(str(path), SCHEMA, version=version, partition_fields=["p"])
    builder.write(rows([0, 1, 2, 3]))
    replaced_before = {(s.partition, s.file_id) for s in HudiTable.open(str(path)).file_slices()}
    overwrite = builder.insert_overwrite(rows([10, 11]))
    assert not replaced_before & {(s.partition, s.file_id) for s in HudiTable.open(str(path)).file_slices()}
    empty = completed_file(path, version, overwrite, "replacecommit")
    empty.write_bytes(b"")
    with pytest.raises(HudiFormatError, match="completed replacecommit is empty") as caught:
        HudiTable.open(str(path)).file_slices()
    assert caught.value.path.endswith(empty.name)
    failed = CliRunner().invoke(main, ["table", "files", str(path)])
    assert failed.exit_code == 2
    assert empty.name in failed.stderr


def test_empty_deltacommit_keeps_its_log_file_and_says_so(tmp_path: Path) -> None:
    path = tmp_path / "t"
    builder = TableBuilder(str(path), SCHEMA, version=6, table_type="MERGE_ON_READ", partition_fields=["p"])
    builder.write(rows([0, 1, 2, 3]))
    update = builder.write(rows([1, 3]))  # a log file on p1's file group
    expected = builder.expected_latest_files()
    assert any(logs for _, logs in expected.values())
    empty = completed_file(path, 6, update, "deltacommit")
    empty.write_bytes(b"")

    table = HudiTable.open(str(path))
    listed = {(s.partition, s.file_id): (s.base_file_name, tuple(s.log_file_names)) for s in table.file_slices()}
    assert listed == expected
    [warning] = table.view().warnings
    assert empty.name in warning
    planned = plan(str(path), "p = 'p1'")
    assert planned.warnings == (warning,)
    assert f"warning: {warning}" in planned.explain()
    cli = CliRunner().invoke(main, ["table", "files", str(path), "--json"])
    assert cli.exit_code == 0
    assert empty.name in cli.stderr


@pytest.mark.parametrize("version", [6, 8])
def test_incremental_over_an_empty_commit_fails_or_falls_back(tmp_path: Path, version: int) -> None:
    path = tmp_path / "t"
    builder = TableBuilder(str(path), SCHEMA, version=version, partition_fields=["p"])
    first = builder.write(rows([0, 1]))
    second = builder.write(rows([2]))
    empty = completed_file(path, version, second, "commit")
    empty.write_bytes(b"")
    begin = first if version < 8 else HudiTable.open(str(path)).timeline.get(first).completion_time  # type: ignore[union-attr]
    with pytest.raises(IncrementalRangeError, match=f"{empty.name} is empty"):
        incremental(str(path), begin)
    fallback = incremental(str(path), begin, fallback_to_full_scan=True)
    assert fallback.full_scan
    assert empty.name in (fallback.fallback_reason or "")
    assert set(fallback.partitions) == {"p=p0", "p=p1"}


def test_sync_compares_every_partition_after_an_empty_commit(tmp_path: Path) -> None:
    path = tmp_path / "t"
    builder = TableBuilder(str(path), SCHEMA, version=6, partition_fields=["p"])
    first = builder.write(rows([0]))
    second = builder.write(rows([1]))
    table = HudiTable.open(str(path))
    assert changed_partitions(table, first) == {"p=p1"}
    completed_file(path, 6, second, "commit").write_bytes(b"")
    assert changed_partitions(HudiTable.open(str(path)), first) is None  # a full diff, not a skipped partition


@pytest.mark.parametrize("version", [6, 8])
def test_a_missing_newest_base_file_is_an_error_not_the_previous_version(tmp_path: Path, version: int) -> None:
    from metadata import MissingFileError

    path = tmp_path / "t"
    builder = TableBuilder(str(path), SCHEMA, version=version, partition_fields=["p"])
    first = builder.write(rows([0, 2]))
    update = builder.write(rows([2]))  # rewrites p0's base file
    [(partition, file_id)] = [k for k, (base, _) in builder.expected_latest_files().items() if base and update in base]
    newest = next((path / partition).glob(f"{file_id}_*_{update}.parquet"))
    newest.unlink()  # lost by storage; the older version is still there
    assert any((path / partition).glob(f"{file_id}_*_{first}.parquet"))
    with pytest.raises(MissingFileError, match=rf"{newest.name}: written by the completed commit {update}") as caught:
        HudiTable.open(str(path)).file_slices()
    assert caught.value.instant == update
    begin = first if version < 8 else HudiTable.open(str(path)).timeline.get(first).completion_time  # type: ignore[union-attr]
    with pytest.raises(MissingFileError):
        incremental(str(path), begin)
    cli = CliRunner().invoke(main, ["plan", str(path), "--where", "p = 'p0'"])
    assert cli.exit_code == 2
    assert newest.name in cli.stderr


def test_with_a_metadata_table_validate_says_which_file_storage_lacks(tmp_path: Path) -> None:
    from metadata.mdt.validate import validate_metadata

    path = tmp_path / "t"
    builder = TableBuilder(str(path), SCHEMA, version=8, partition_fields=["p"], metadata_table=True)
    builder.write(rows([0, 2]))
    update = builder.write(rows([2]))
    newest = next((path / "p=p0").glob(f"*_{update}.parquet"))
    newest.unlink()
    planned = plan(str(path), "p = 'p0'")
    assert newest.name in {s.base_file_name for s in planned.files}  # what the table committed
    report = validate_metadata(str(path))
    assert report.files_only_in_metadata == {"p=p0": [newest.name]}
    assert any("cannot serve the latest slices" in line and newest.name in line for line in report.differences())


def finish_later(file: Path, content: bytes, seconds: float = 0.1) -> threading.Thread:
    """Write `content` into `file` after a moment, as a Hudi writer does on
    local disk: it creates the completed instant's file, then writes it."""
    def write() -> None:
        time.sleep(seconds)
        file.write_bytes(content)
    thread = threading.Thread(target=write)
    thread.start()
    return thread


@pytest.mark.parametrize("version", [6, 8])
@pytest.mark.parametrize("cut", ["empty", "half"])
def test_a_commit_file_a_writer_is_writing_is_read_once_written(tmp_path: Path, version: int, cut: str) -> None:
    """The live-writer soak's failure: a pull listed the newest commit while
    Hudi had created its file but not written it yet, and refused the range.
    A completed instant written just now is read again until it stops changing."""
    path = tmp_path / "t"
    builder = TableBuilder(str(path), SCHEMA, version=version, partition_fields=["p"])
    first = builder.write(rows([0, 1]))
    second = builder.write(rows([2]))
    begin = first if version < 8 else HudiTable.open(str(path)).timeline.get(first).completion_time  # type: ignore[union-attr]
    whole = incremental(str(path), begin)
    file = completed_file(path, version, second, "commit")
    content = file.read_bytes()
    file.write_bytes(b"" if cut == "empty" else content[: len(content) // 2])
    writer = finish_later(file, content)
    try:
        pulled = incremental(str(path), begin)
    finally:
        writer.join()
    assert [s.file_id for s in pulled.files] == [s.file_id for s in whole.files]
    assert [(s.partition, s.file_id) for s in pulled.files] == [("p=p0", whole.files[0].file_id)]


@pytest.mark.parametrize("cut", ["empty", "half"])
def test_an_old_commit_file_that_is_empty_or_cut_short_is_not_waited_for(tmp_path: Path, cut: str) -> None:
    """Written long ago, it is damaged, not being written: refused naming it, as before."""
    path = tmp_path / "t"
    builder = TableBuilder(str(path), SCHEMA, version=8, partition_fields=["p"])
    first = builder.write(rows([0, 1]))
    second = builder.write(rows([2]))
    begin = HudiTable.open(str(path)).timeline.get(first).completion_time  # type: ignore[union-attr]
    file = completed_file(path, 8, second, "commit")
    content = file.read_bytes()
    file.write_bytes(b"" if cut == "empty" else content[: len(content) // 2])
    long_ago = time.time() - 3600
    os.utime(file, (long_ago, long_ago))
    with pytest.raises((IncrementalRangeError, HudiFormatError)) as caught:
        incremental(str(path), begin)
    assert file.name in str(caught.value)
