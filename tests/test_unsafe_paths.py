"""Partition paths and file names read from a table never resolve outside its
base path; the sample-table writer refuses to write such values."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from listers import incremental
from metadata import HudiFormatError, HudiTable
from metadata.errors import HudiError, UnsafePathError
from metadata.sample_tables.builder import TableBuilder
from metadata.storage.storage import Storage
from metadata.table.partition_path import check_partition_path, check_partition_paths

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string())])


@pytest.mark.parametrize("value", ["..", "."])
def test_builder_refuses_dot_dot_even_url_encoded(tmp_path: Path, value: str) -> None:
    for url_encode in (False, True):
        builder = TableBuilder(str(tmp_path / f"t{url_encode}"), SCHEMA, partition_fields=["p"], hive_style=False, url_encode=url_encode)
        with pytest.raises(ValueError, match="no folder or the parent folder"):
            builder.write([{"id": 1, "p": value}])
    hive = TableBuilder(str(tmp_path / "hive"), SCHEMA, partition_fields=["p"])  # p=.. is a plain folder name
    hive.write([{"id": 1, "p": value}])
    assert HudiTable.open(str(tmp_path / "hive")).partitions() == [f"p={value}"]


@pytest.mark.parametrize("value", ["../outside", "a/b", "a\\b"])
def test_builder_refuses_separators_unless_url_encoded(tmp_path: Path, value: str) -> None:
    builder = TableBuilder(str(tmp_path / "t"), SCHEMA, partition_fields=["p"], hive_style=False)
    with pytest.raises(ValueError, match="url-encoding"):
        builder.write([{"id": 1, "p": value}])
    encoded = TableBuilder(str(tmp_path / "e"), SCHEMA, partition_fields=["p"], hive_style=False, url_encode=True)
    encoded.write([{"id": 1, "p": value}])
    table = HudiTable.open(str(tmp_path / "e"))
    [partition] = table.partitions()
    assert "/" not in partition
    assert partition not in ("..", ".")
    assert not (tmp_path / "outside").exists()


@pytest.mark.parametrize("path", ["../x", "a/../../x", "/etc", "a/./b", "a//b", "..\\x"])
def test_reader_refuses_paths_that_leave_the_base(path: str) -> None:
    with pytest.raises(HudiFormatError, match="would resolve outside the table or nowhere"):
        check_partition_path(path, "commit 1")
    assert check_partition_path("year=2024/month=01", "commit 1") == "year=2024/month=01"


def test_storage_never_reads_outside_its_base(tmp_path: Path) -> None:
    storage = Storage.open(str(tmp_path / "base"))
    (tmp_path / "secret").write_text("x")
    with pytest.raises(UnsafePathError, match=r"'\.\./secret' has a '\.\.' segment"):
        storage.read_bytes("../secret")
    with pytest.raises(UnsafePathError):
        storage.list_dir("a/../../")


def test_commit_metadata_naming_a_partition_outside_the_table_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "t"
    builder = TableBuilder(str(path), SCHEMA, partition_fields=["p"])
    first = builder.write([{"id": 1, "p": "a"}])
    builder.write([{"id": 2, "p": "b"}])
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / ".hoodie_partition_metadata").write_text("commitTime=1\n")
    commit = sorted((path / ".hoodie").glob("*.commit"))[-1]
    content = json.loads(commit.read_text())
    stats = content["partitionToWriteStats"].pop("p=b")
    for stat in stats:
        stat["partitionPath"] = "../outside"
    content["partitionToWriteStats"]["../outside"] = stats
    commit.write_text(json.dumps(content))
    with pytest.raises(HudiFormatError, match=r"partition path '\.\./outside' has a '\.\.' segment") as caught:
        incremental(str(path), first)
    assert caught.value.path.endswith(commit.name)


@settings(max_examples=2000, deadline=None)
@given(st.lists(st.lists(st.sampled_from(["a", "/", ".", "\\", "b=1", "\n"]), max_size=5).map("".join), min_size=1, max_size=4))
def test_many_paths_are_refused_exactly_when_one_is(paths: list[str]) -> None:
    """check_partition_paths (one scan when all look plain) refuses exactly what the path-by-path check refuses."""
    def refused(check: Callable[[], object]) -> bool:
        try:
            check()
        except HudiError:
            return True
        return False

    one_by_one = refused(lambda: [check_partition_path(p, "where") for p in paths])
    assert refused(lambda: check_partition_paths(paths, "where")) == one_by_one
