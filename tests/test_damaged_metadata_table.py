"""A damaged metadata table never makes a listing or a plan silently smaller.

An empty, truncated or zero-filled log file of a completed metadata-table
instant makes the metadata table unusable for the read: listing falls back to
storage and says why (or, strict, fails naming the file). A torn block of an
instant that never completed stays harmless.
"""

from __future__ import annotations

import gc
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pytest

from listers import DirectoryLister, plan
from metadata import HudiTable, MetadataTableDamaged
from metadata.sample_tables.builder import TableBuilder
from metadata.storage.listing import ListingSource
from tests.conftest import requires_fixtures, table_path

SCHEMA = pa.schema([("id", pa.int64()), ("region", pa.string()), ("amount", pa.float64())])


def build(path: Path, table_type: str) -> TableBuilder:
    builder = TableBuilder(str(path), SCHEMA, table_type=table_type, version=8, partition_fields=["region"], metadata_table=True)
    builder.write([{"id": i, "region": f"r{i % 3}", "amount": float(i)} for i in range(9)])
    builder.write([{"id": 100 + i, "region": f"r{i % 5}", "amount": 100.0 + i} for i in range(5)])
    return builder


def latest_files_log(path: Path) -> Path:
    logs = sorted((path / ".hoodie" / "metadata" / "files").glob(".files-*.log.*"))
    return logs[-1]  # the newest data instant's delta commit


def slices(table: HudiTable) -> set[tuple[str, str, str | None, tuple[str, ...]]]:
    return {(s.partition, s.file_id, s.base_file_name, tuple(s.log_file_names)) for s in table.file_slices()}


DAMAGE: dict[str, Callable[[Path], None]] = {
    "empty": lambda f: f.write_bytes(b""),
    "truncated": lambda f: f.write_bytes(f.read_bytes()[: f.stat().st_size // 2]),
    "zero-filled": lambda f: f.write_bytes(bytes(f.stat().st_size)),
}


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_damaged_log_of_a_completed_instant_falls_back_to_storage(tmp_path: Path, table_type: str, damage: str) -> None:
    path = tmp_path / "t"
    build(path, table_type)
    expected = slices(HudiTable.open(str(path), use_metadata=False))
    assert slices(HudiTable.open(str(path))) == expected  # intact: the MDT lists the same
    damaged = latest_files_log(path)
    DAMAGE[damage](damaged)

    table = HudiTable.open(str(path))
    assert table.listing.source is ListingSource.STORAGE
    assert "metadata table damaged" in table.listing_note
    assert damaged.name in table.listing_note
    assert slices(table) == expected
    assert table.partitions() == ["region=r0", "region=r1", "region=r2", "region=r3", "region=r4"]

    planned = plan(str(path), "region = 'r4'")
    assert "metadata table damaged" in planned.listing
    assert {s.partition for s in planned.files} == {"region=r4"}
    assert planned.to_dict()["listing"] == planned.listing

    with pytest.raises(MetadataTableDamaged, match=damaged.name) as strict:
        HudiTable.open(str(path), strict=True).partitions()
    assert strict.value.path.endswith(damaged.name)
    with pytest.raises(MetadataTableDamaged):
        HudiTable.open(str(path), use_metadata=True).partitions()


def test_torn_block_of_an_instant_that_never_completed_is_harmless(tmp_path: Path) -> None:
    path = tmp_path / "t"
    build(path, "MERGE_ON_READ")
    expected = slices(HudiTable.open(str(path), use_metadata=False))
    latest = latest_files_log(path)
    # A writer died while appending its delta commit: a log named by an
    # instant that has no completed file on the metadata table's timeline.
    torn = latest.with_name(latest.name.replace(latest.name.split("_")[1].split(".")[0], "29990101000000000"))
    torn.write_bytes(latest.read_bytes()[:40])
    table = HudiTable.open(str(path))
    assert table.listing.source is ListingSource.METADATA_TABLE
    assert slices(table) == expected
    mdt = table.metadata_table
    assert mdt is not None
    # The metadata table's own view does not list a log of an instant that
    # never completed, so the torn bytes are not even read.
    assert mdt.problems == []
    assert torn.exists()


def test_cli_warns_and_strict_fails(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from engine_bridge.cli import main

    path = tmp_path / "t"
    build(path, "COPY_ON_WRITE")
    DAMAGE["truncated"](latest_files_log(path))
    runner = CliRunner()
    listed = runner.invoke(main, ["table", "files", str(path), "--json"])
    assert listed.exit_code == 0, listed.output
    assert "metadata table damaged" in listed.stderr
    strict = runner.invoke(main, ["--strict", "table", "files", str(path)])
    assert strict.exit_code == 2
    assert "metadata table damaged" in strict.stderr
    assert "Traceback" not in strict.output


@requires_fixtures
def test_damaged_column_stats_log_keeps_every_file_in_a_plan(fixture_root: Path, tmp_path: Path) -> None:
    source = Path(table_path(fixture_root, "sample_table__cow__v9_txns_simple_meta"))
    path = tmp_path / source.name
    shutil.copytree(source, path)
    predicate = "amount > 900"
    intact = plan(str(path), predicate)
    no_stats = plan(str(path), predicate, use_metadata=False)
    assert len(intact.files) < len(no_stats.files)  # column_stats prunes when readable
    logs = sorted((path / ".hoodie" / "metadata" / "column_stats").glob(".col-stats-*.log.*"))
    newest = max(logs, key=lambda f: f.name.split("_")[1])
    DAMAGE["zero-filled"](newest)

    damaged = plan(str(path), predicate)
    assert [(s.partition, s.file_id) for s in damaged.files] == [(s.partition, s.file_id) for s in no_stats.files]
    assert any(reason.startswith("column_stats: metadata table damaged") for reason in damaged.not_used)
    with pytest.raises(MetadataTableDamaged, match=newest.name):
        plan(str(path), predicate, strict=True)


def open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counting open files needs /proc (Linux)")
def test_lister_close_releases_every_file_it_opened(tmp_path: Path) -> None:
    path = tmp_path / "t"
    build(path, "MERGE_ON_READ")
    with DirectoryLister.open(str(path)) as warm:  # imports and caches warmed once
        plan(warm, "region = 'r1'")
    gc.collect()  # files earlier tests left to the collector are not this test's
    before = open_descriptors()
    for _ in range(100):
        lister = DirectoryLister.open(str(path))
        assert lister.listing_source is ListingSource.METADATA_TABLE
        assert plan(lister, "region = 'r1' AND amount > 2").files
        lister.close()
        plan(str(path), "region = 'r2'")
    assert open_descriptors() <= before


def test_log_blocks_of_instants_that_do_not_count_are_skipped_unread(tmp_path: Path) -> None:
    import struct
    import tracemalloc

    from metadata.formats.log_format import MAGIC, BlockType, HeaderKey, LogBlock, _encode_map, encode_block, scan_log_blocks

    def small(instant: str) -> bytes:
        return encode_block(LogBlock(BlockType.DELETE, {HeaderKey.INSTANT_TIME: instant}, struct.pack(">ii", 3, 0)))

    big_size = 400 * 1024 * 1024  # a torn-off writer's 400 MB block
    log_file = tmp_path / ".f_1.log.1_0-0-0"
    with open(log_file, "wb") as out:
        out.write(small("001"))
        header = _encode_map({HeaderKey.INSTANT_TIME: "002"})
        footer = _encode_map({})
        body = 8 + len(header) + 8 + big_size + len(footer)
        out.write(MAGIC + struct.pack(">q", body + 8) + struct.pack(">ii", 1, int(BlockType.AVRO_DATA)) + header + struct.pack(">q", big_size))
        chunk = bytes(1024 * 1024)
        for _ in range(big_size // len(chunk)):
            out.write(chunk)
        out.write(footer + struct.pack(">q", len(MAGIC) + 8 + body))
        out.write(small("003"))
    with open(log_file, "rb") as handle:
        def read_at(offset: int, length: int) -> bytes:
            handle.seek(offset)
            return handle.read(length)

        tracemalloc.start()
        result = scan_log_blocks(read_at, log_file.stat().st_size, str(log_file), lambda block: block.instant_time != "002")
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    assert [b.instant_time for b in result.blocks] == ["001", "003"]
    assert result.problems == []
    assert peak < 2 * 1024 * 1024  # a header probe, not the block
    assert result.blocks[1].offset == log_file.stat().st_size - len(small("003"))
    log_file.unlink()


# Every fallback is said, and --strict refuses it in every command -----------------------------
DAMAGED_HFILE_FIXTURE = "sample_table__cow__v9_txns_simple_meta"


def _zero_newest_files_hfile(root: Path) -> Path:
    newest = sorted((root / ".hoodie/metadata/files").glob("*.hfile"), key=lambda p: p.name.rsplit("_", 1)[-1])[-1]
    newest.write_bytes(b"\0" * newest.stat().st_size)
    return newest


@requires_fixtures
@pytest.mark.parametrize("command", [["table", "files"], ["table", "partitions"], ["plan", "--where", "amount > 1"],
                                     ["incremental", "--begin", "0"]])
def test_a_zero_filled_metadata_hfile_warns_and_strict_refuses(fixture_root: Path, tmp_path: Path, command: list[str]) -> None:
    import json

    from click.testing import CliRunner

    from engine_bridge.cli import main

    root = tmp_path / "t"
    shutil.copytree(table_path(fixture_root, DAMAGED_HFILE_FIXTURE), root)
    damaged = _zero_newest_files_hfile(root)
    runner = CliRunner()
    args = [command[0], *command[1:2], str(root), *command[2:]] if command[0] == "table" else [command[0], str(root), *command[1:]]
    fallback = runner.invoke(main, [*args, "--json"])
    assert fallback.exit_code == 0, fallback.output
    warning = [line for line in fallback.stderr.splitlines() if line.startswith("warning:")]
    assert len(warning) == 1 and damaged.name in warning[0] and "listing storage instead" in warning[0]
    if command[0] == "plan":
        assert any(damaged.name in w for w in json.loads(fallback.stdout)["warnings"])
    strict = runner.invoke(main, ["--strict", *args])
    assert strict.exit_code == 2
    assert strict.stderr.count("\n") == 1 and damaged.name in strict.stderr and "Traceback" not in strict.stderr


@requires_fixtures
def test_an_unreadable_commit_warns_and_strict_refuses(fixture_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    from engine_bridge.cli import main
    from metadata.errors import StorageError
    from metadata.storage.storage import Storage

    root = tmp_path / "t"
    shutil.copytree(table_path(fixture_root, "sample_table__cow__v9_txns_simple_nometa"), root)
    newest = sorted((root / ".hoodie/timeline").glob("*.commit"))[-1]
    original = Storage.read_bytes

    def unreadable(self: Storage, relative: str, max_bytes: int | None = None) -> bytes:  # chmod 000 does not stop root
        if relative.endswith(newest.name):
            raise StorageError(f"{self.display_path(relative)}: permission denied (read)")
        return original(self, relative, max_bytes)

    monkeypatch.setattr(Storage, "read_bytes", unreadable)
    runner = CliRunner()
    for args in (["plan", str(root), "--where", "amount > 1"], ["--strict", "plan", str(root), "--where", "amount > 1"]):
        refused = runner.invoke(main, args)  # the view needs the commit's write stats: a clear error, never a quieter plan
        assert refused.exit_code == 2 and refused.stderr.count("\n") == 1, refused.output
        assert f"{newest.name}: permission denied" in refused.stderr


@requires_fixtures
def test_a_schema_that_cannot_be_read_is_a_warning_and_strict_refuses(fixture_root: Path, tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from metadata.errors import StorageError

    root = table_path(fixture_root, "sample_table__cow__v9_txns_simple_nometa")

    def unreadable(self: HudiTable) -> dict:
        raise StorageError(f"{root}/.hoodie/timeline/x.commit: permission denied (read)")

    monkeypatch.setattr(HudiTable, "avro_schema", unreadable)
    planned = plan(root, "region = 'us'")
    assert {s.partition for s in planned.files} == {"region=us"}
    assert planned.warnings == (f"table schema not read ({root}/.hoodie/timeline/x.commit: permission denied (read)); "
                                "partition values compared as text",)
    with pytest.raises(StorageError, match="permission denied"):
        plan(root, "region = 'us'", strict=True)


def test_a_missing_metadata_base_file_is_found_by_reading_only_the_doubted_commits(tmp_path: Path,
                                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The metadata table's view reads its delta commits only for slices that
    could hide a missing base file: none in an intact table kept in sync, the
    initialisation when a file group has lost its base file."""
    from metadata.errors import MissingFileError
    from metadata.storage.storage import Storage

    path = tmp_path / "t"
    build(path, "COPY_ON_WRITE")
    expected = slices(HudiTable.open(str(path), use_metadata=False))
    read: list[str] = []
    original = Storage.read_bytes
    monkeypatch.setattr(Storage, "read_bytes", lambda self, relative, max_bytes=None: read.append(relative) or original(self, relative, max_bytes))
    assert slices(HudiTable.open(str(path))) == expected
    assert not [r for r in read if r.endswith(".deltacommit")], read

    base = next((path / ".hoodie" / "metadata" / "files").glob("*.hfile"))
    base.unlink()
    table = HudiTable.open(str(path))
    assert table.listing.source is ListingSource.STORAGE and slices(table) == expected
    assert f"{base.name}: written by the completed deltacommit 00000000000000000 but missing from storage" in table.listing_note
    with pytest.raises(MissingFileError, match=base.name):
        HudiTable.open(str(path), strict=True).partitions()
