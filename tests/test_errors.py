"""Acceptance: bad input gets a clear error naming the file and the problem."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pytest

from metadata import HudiError, HudiFormatError, HudiTable, HudiTableNotFound, UnsupportedTableError
from metadata.sample_tables.builder import TableBuilder

SCHEMA = pa.schema([("id", pa.int64()), ("city", pa.string())])


def built(tmp_path: Path, version: int = 6) -> Path:
    path = tmp_path / f"t{version}"
    builder = TableBuilder(str(path), SCHEMA, version=version, partition_fields=["city"])
    builder.write([{"id": 1, "city": "sf"}, {"id": 2, "city": "la"}])
    builder.write([{"id": 1, "city": "sf"}])
    return path


def set_property(path: Path, key: str, value: str) -> None:
    props = path / ".hoodie" / "hoodie.properties"
    lines = [line for line in props.read_text().splitlines() if not line.startswith(key + "=")]
    props.write_text("\n".join(lines + [f"{key}={value}"]) + "\n")


def test_missing_properties(tmp_path: Path) -> None:
    (tmp_path / "nothing").mkdir()
    with pytest.raises(HudiTableNotFound, match=r"hoodie\.properties.*not a Hudi table"):
        HudiTable.open(str(tmp_path / "nothing"))


def test_unreadable_properties(tmp_path: Path) -> None:
    path = built(tmp_path)
    props = path / ".hoodie" / "hoodie.properties"
    props.unlink()
    props.mkdir()  # a folder where the file should be: unreadable as a file
    with pytest.raises(HudiTableNotFound, match="hoodie.properties"):
        HudiTable.open(str(path))


def test_properties_not_utf8(tmp_path: Path) -> None:
    path = built(tmp_path)
    (path / ".hoodie" / "hoodie.properties").write_bytes(b"hoodie.table.name=\xff\xfe\n")
    with pytest.raises(HudiFormatError, match=r"hoodie\.properties at offset 18: not UTF-8"):
        HudiTable.open(str(path))


def test_unknown_table_version(tmp_path: Path) -> None:
    path = built(tmp_path)
    set_property(path, "hoodie.table.version", "7")
    with pytest.raises(UnsupportedTableError, match=r"hoodie\.properties: table version 7 is not supported"):
        HudiTable.open(str(path))


def test_missing_table_name(tmp_path: Path) -> None:
    path = built(tmp_path)
    props = path / ".hoodie" / "hoodie.properties"
    props.write_text("\n".join(line for line in props.read_text().splitlines() if not line.startswith("hoodie.table.name=")))
    with pytest.raises(HudiFormatError, match="hoodie.table.name is missing"):
        HudiTable.open(str(path))


def test_an_unknown_base_format(tmp_path: Path) -> None:
    path = built(tmp_path, version=8)
    set_property(path, "hoodie.table.base.file.format", "ORC")
    with pytest.raises(UnsupportedTableError, match="base file format 'ORC' is not supported"):
        HudiTable.open(str(path))


def _completed_commit_file(path: Path) -> Path:
    timeline = path / ".hoodie"
    return sorted(p for p in timeline.iterdir() if p.name.endswith(".commit"))[-1]


def test_malformed_commit_json(tmp_path: Path) -> None:
    path = built(tmp_path)
    commit = _completed_commit_file(path)
    commit.write_text('{\n  "partitionToWriteStats": {,\n}')
    table = HudiTable.open(str(path))
    with pytest.raises(HudiFormatError) as info:
        table.timeline.commit_metadata(table.timeline.commits()[-1])
    assert commit.name in str(info.value)
    assert "malformed JSON" in str(info.value)
    assert "line 2, column 29" in str(info.value)


def test_wrongly_typed_commit_field(tmp_path: Path) -> None:
    path = built(tmp_path)
    _completed_commit_file(path).write_text('{"partitionToWriteStats": {"city=sf": "oops"}}')
    table = HudiTable.open(str(path))
    with pytest.raises(HudiFormatError, match=r"partitionToWriteStats\['city=sf'\] is not a list"):
        table.timeline.commit_metadata(table.timeline.commits()[-1])


def test_truncated_avro_instant(tmp_path: Path) -> None:
    path = built(tmp_path, version=8)
    timeline = path / ".hoodie" / "timeline"
    commit = sorted(p for p in timeline.iterdir() if p.name.endswith(".commit"))[-1]
    data = commit.read_bytes()
    commit.write_bytes(data[: len(data) // 2])
    table = HudiTable.open(str(path))
    with pytest.raises(HudiFormatError) as info:
        table.timeline.commit_metadata(table.timeline.commits()[-1])
    assert commit.name in str(info.value)
    assert "Avro" in str(info.value)


def test_base_file_name_that_does_not_parse(tmp_path: Path) -> None:
    path = built(tmp_path)
    bad = path / "city=sf" / "not-a-hudi-name.parquet"
    bad.write_bytes(b"PAR1")
    with pytest.raises(HudiFormatError) as info:
        HudiTable.open(str(path)).file_slices()
    assert "city=sf/not-a-hudi-name.parquet" in str(info.value)
    assert "looks like a base file" in str(info.value)


def test_bad_as_of(tmp_path: Path) -> None:
    path = built(tmp_path)
    with pytest.raises(ValueError, match="as-of instant 'yesterday' is not an instant time"):
        HudiTable.open(str(path)).file_slices(as_of="yesterday")


def test_as_of_before_archived_timeline_says_so(tmp_path: Path) -> None:
    path = built(tmp_path)
    archived = path / ".hoodie" / "archived"
    archived.mkdir(exist_ok=True)
    (archived / ".commits_.archive.1_1-0-1").write_bytes(b"#HUDI#")
    (archived / "commits_.archive.1_1-0-1").write_bytes(b"#HUDI#")
    with pytest.raises(HudiError, match="older than the active timeline"):
        HudiTable.open(str(path)).file_slices(as_of="20000101000000000")
    assert os.path.exists(archived)


def test_checksum_matches_what_hudi_writes(fixture_root: Path) -> None:
    from metadata.table.config import table_checksum
    from tests.conftest import table_path

    for stem in ("sample_table__cow__v9_txns_simple_meta", "sample_table__cow__v6_empty"):
        props = HudiTable.open(table_path(fixture_root, stem)).config.raw
        assert int(props["hoodie.table.checksum"]) == table_checksum(props)


def test_checksum_mismatch_names_the_file_and_the_backup_is_read(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = built(tmp_path, version=8)
    props = path / ".hoodie" / "hoodie.properties"
    good = props.read_bytes()
    assert b"hoodie.table.checksum=" in good  # the builder writes it, as Hudi does
    props.write_bytes(good.replace(b"hoodie.table.name=sample", b"hoodie.table.name=sampl"))  # a torn rewrite
    with pytest.raises(HudiFormatError, match=r"hoodie\.properties: hoodie\.table\.checksum \d+ does not match the table name"):
        HudiTable.open(str(path))
    (path / ".hoodie" / "hoodie.properties.backup").write_bytes(good)
    with caplog.at_level("WARNING"):
        table = HudiTable.open(str(path))
    assert table.name == "sample"
    assert "hoodie.properties.backup" in caplog.text
    assert "does not match the table name" in caplog.text


def test_missing_properties_with_a_backup_reads_the_backup(tmp_path: Path) -> None:
    path = built(tmp_path)
    props = path / ".hoodie" / "hoodie.properties"
    props.rename(path / ".hoodie" / "hoodie.properties.backup")  # Hudi died between deleting and rewriting it
    table = HudiTable.open(str(path))
    assert table.partitions() == ["city=la", "city=sf"]


@pytest.mark.parametrize("key,value,message", [
    ("hoodie.timeline.layout.version", "two", "hoodie.timeline.layout.version is 'two', not a number"),
    ("hoodie.table.version", "eight", "hoodie.table.version is 'eight', not a number"),
    ("hoodie.table.checksum", "abc", "hoodie.table.checksum is 'abc', not a number"),
    ("hoodie.table.type", "COPY_ON_READ", "hoodie.table.type is 'COPY_ON_READ'"),
])
def test_values_that_are_not_what_hudi_writes(tmp_path: Path, key: str, value: str, message: str) -> None:
    path = built(tmp_path, version=8)
    set_property(path, key, value)
    with pytest.raises(HudiFormatError, match=message.replace(".", r"\.")) as caught:
        HudiTable.open(str(path))
    assert caught.value.path.endswith("hoodie.properties")


@pytest.mark.parametrize("version", [6, 8])
def test_two_completed_instants_with_one_requested_time_name_both_files(tmp_path: Path, version: int) -> None:
    path = built(tmp_path, version=version)
    timeline = path / ".hoodie" / ("timeline" if version >= 8 else "")
    commit = _completed_commit_file(path) if version < 8 else sorted(timeline.glob("*.commit"))[-1]
    ts = commit.name.split(".")[0].split("_")[0]
    twin = timeline / (f"{ts}.replacecommit" if version < 8 else f"{ts}_29990101000000000.replacecommit")
    twin.write_bytes(commit.read_bytes())
    with pytest.raises(HudiFormatError, match=rf"inconsistent timeline: 2 completed instants have requested time {ts}") as caught:
        HudiTable.open(str(path))
    assert commit.name in str(caught.value)
    assert twin.name in str(caught.value)
    twin.unlink()
    (timeline / f"{ts}.savepoint").write_bytes(b"")  # a savepoint shares the time of the commit it keeps
    assert HudiTable.open(str(path)).timeline.is_completed(ts)


@pytest.mark.parametrize("version", [6, 8])
def test_a_properties_file_cut_before_its_checksum_is_damage(tmp_path: Path, version: int, caplog: pytest.LogCaptureFixture) -> None:
    """A cut that removes the checksum line (written last) is not a pre-0.11 table: the backup is read, or the file is refused."""
    from metadata.table.config import parse_java_properties

    path = built(tmp_path, version=version)
    props = path / ".hoodie" / "hoodie.properties"
    good = props.read_bytes()
    keep = (b"hoodie.table.name=", b"hoodie.table.version=", b"hoodie.table.type=")  # what a reader cannot do without
    lines = [line for line in good.splitlines(keepends=True) if line.startswith(keep)]
    props.write_bytes(b"".join(lines) + b"hoodie.table.partition.fie")  # the rest lost: partition fields, checksum
    with pytest.raises(HudiFormatError, match=rf"no hoodie\.table\.checksum, which table version {version} always carries"):
        HudiTable.open(str(path))
    (path / ".hoodie" / "hoodie.properties.backup").write_bytes(good)
    with caplog.at_level("WARNING"):
        assert HudiTable.open(str(path)).config.raw == parse_java_properties(good.decode())
    assert "cut short" in caplog.text
