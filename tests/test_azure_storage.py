"""Tables on Azure Storage (Azurite, its emulator from the npm registry, on
127.0.0.1) read as on local disk, through pyarrow's AzureFileSystem and the
storage options deltalake and object_store spell; an index build on it
validates. (GCS: the emulator on PyPI, gcp-storage-emulator, answers
pyarrow's whole-object reads but never returns pyarrow's ranged reads, so
GCS is checked by the filesystem it configures, in test_object_storage.)"""

from __future__ import annotations

from pathlib import Path

import pyarrow.fs as pafs
import pytest

from listers import incremental, plan
from metadata import HudiTable
from metadata.storage.listing import ListingSource
from tests.azure_services import ACCOUNT, AzureServer
from tests.conftest import requires_fixtures, table_path
from tests.test_object_storage import _slices

FIXTURES = ["quickstart_trips_table__mor__avro__v6_trips_8i1u", "sample_table__cow__v8_complexkeygen_hivestyle",
            "sample_table__mor__avro__v9_txns_simple_meta"]


def _upload(server: AzureServer, local: str, container: str) -> str:
    client = server.client()
    client.create_dir(container)
    pafs.copy_files(local, f"{container}/{Path(local).name}", source_filesystem=pafs.LocalFileSystem(), destination_filesystem=client)
    return f"abfs://{container}@{ACCOUNT}.dfs.core.windows.net/{Path(local).name}"


@requires_fixtures
@pytest.mark.parametrize("stem", FIXTURES)
def test_fixtures_read_the_same_from_azure(azure_server: AzureServer, fixture_root: Path, stem: str) -> None:
    local = table_path(fixture_root, stem)
    remote = _upload(azure_server, local, f"fixture{FIXTURES.index(stem)}")
    options = azure_server.options()
    there = HudiTable.open(remote, storage_options=options)
    assert there.storage.is_object_store
    assert _slices(there) == _slices(HudiTable.open(local)) and there.partitions() == HudiTable.open(local).partitions()
    listed = HudiTable.open(remote, storage_options=options, use_metadata=False)
    assert _slices(listed) == _slices(HudiTable.open(local, use_metadata=False))
    predicate = "_hoodie_record_key >= 'a' OR _hoodie_record_key IS NULL"
    assert [(s.partition, s.file_id) for s in plan(remote, predicate, storage_options=options).files] == \
        [(s.partition, s.file_id) for s in plan(local, predicate).files]
    assert [i.requested_time for i in incremental(remote, "0", storage_options=options).instants] == \
        [i.requested_time for i in incremental(local, "0").instants]


@requires_fixtures
def test_an_index_build_on_azure_validates(azure_server: AzureServer, fixture_root: Path) -> None:
    from metadata.mdt.validate import validate_metadata
    from metadata.mdt.write.writer import MetadataTableWriter

    local = table_path(fixture_root, "sample_table__cow__v9_txns_simple_nometa")
    remote = _upload(azure_server, local, "build")
    options = azure_server.options()
    report = MetadataTableWriter(remote, storage_options=options).build()
    assert report.files_indexed > 0
    table = HudiTable.open(remote, storage_options=options)
    assert table.listing.source is ListingSource.METADATA_TABLE
    assert _slices(table) == _slices(HudiTable.open(local))
    assert validate_metadata(HudiTable.open(remote, storage_options=options, use_metadata=False)).ok
