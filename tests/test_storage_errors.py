"""OS and connection errors from storage become the project's errors, naming
the path; remote storage gives up within the timeout instead of hanging."""

from __future__ import annotations

import time
from pathlib import Path

import pyarrow as pa
import pyarrow.fs as pafs
import pytest
from click.testing import CliRunner

from engine_bridge.cli import main
from metadata import HudiError, HudiTable
from metadata.errors import StorageError, StoredFileNotFound
from metadata.sample_tables.builder import TableBuilder
from metadata.storage.calls import DEFAULT_TIMEOUT_SECONDS, set_default_timeout
from tests.test_listers import CountingHandler

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string())])


class FailingHandler(CountingHandler):
    """A local filesystem that fails chosen calls the way object stores do."""

    def __init__(self, fail_listing: str = "", fail_open: str = "", error: type[OSError] = PermissionError) -> None:
        super().__init__()
        self.fail_listing, self.fail_open, self.error = fail_listing, fail_open, error

    def get_file_info_selector(self, selector):  # type: ignore[no-untyped-def]
        if self.fail_listing and selector.base_dir.endswith(self.fail_listing):
            raise self.error(13, "Permission denied", selector.base_dir)
        return super().get_file_info_selector(selector)

    def open_input_file(self, path):  # type: ignore[no-untyped-def]
        if self.fail_open and self.fail_open in path:
            raise self.error(2, "No such file or directory", path)
        return super().open_input_file(path)


def built(tmp_path: Path, metadata_table: bool = False) -> Path:
    path = tmp_path / "t"
    builder = TableBuilder(str(path), SCHEMA, version=8, partition_fields=["p"], metadata_table=metadata_table)
    builder.write([{"id": 1, "p": "a"}, {"id": 2, "p": "b"}])
    return path


def test_permission_denied_names_the_folder(tmp_path: Path) -> None:
    path = built(tmp_path)
    fs = pafs.PyFileSystem(FailingHandler(fail_listing="p=b"))
    with pytest.raises(StorageError, match=r"p=b: permission denied \(list\)") as caught:
        HudiTable.open(str(path), filesystem=fs, use_metadata=False).file_slices()
    assert isinstance(caught.value, HudiError)
    assert isinstance(caught.value, PermissionError) or isinstance(caught.value, OSError)


def test_a_file_gone_after_listing_names_the_file(tmp_path: Path) -> None:
    path = built(tmp_path, metadata_table=True)
    fs = pafs.PyFileSystem(FailingHandler(fail_open=".hfile", error=FileNotFoundError))
    table = HudiTable.open(str(path), filesystem=fs, use_metadata=True)
    with pytest.raises(StoredFileNotFound, match=r"files-0000-0_.*\.hfile: not found \(open\)"):
        table.file_slices()


def test_gs_without_network_fails_within_the_timeout() -> None:
    set_default_timeout(2)
    try:
        started = time.monotonic()
        with pytest.raises(HudiError, match=r"gs://hudi-bridge-no-such-bucket/t"):
            HudiTable.open("gs://hudi-bridge-no-such-bucket/t")
        assert time.monotonic() - started < 20
    finally:
        set_default_timeout(DEFAULT_TIMEOUT_SECONDS)


def test_cli_timeout_option_and_one_line_errors() -> None:
    started = time.monotonic()
    result = CliRunner().invoke(main, ["--timeout", "2", "table", "show", "gs://hudi-bridge-no-such-bucket/t"])
    assert time.monotonic() - started < 20
    assert result.exit_code == 2
    assert result.stderr.startswith("error: ")
    assert result.stderr.count("\n") == 1
    assert "Traceback" not in result.output
    set_default_timeout(DEFAULT_TIMEOUT_SECONDS)
