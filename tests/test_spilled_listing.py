"""The spilled listing (what a build walks once and reads back a run at a
time) answers as the storage listing does, whatever order it is asked in."""

from __future__ import annotations

import gc
import os
import random
from pathlib import Path

import pytest

from metadata.storage.listing import StorageListing
from metadata.storage.paths import StoredFile
from metadata.storage.spilled_listing import SpilledListing
from metadata.storage.storage import Storage
from tests.conftest import fixture_ids


def _files(listed: dict[str, list[StoredFile]]) -> dict[str, list[tuple[str, int]]]:
    return {p: sorted((f.relative_path, f.size) for f in files) for p, files in listed.items()}


@pytest.mark.parametrize("fixture_table", fixture_ids(), indirect=True)
def test_every_fixture_lists_the_same_spilled(fixture_table: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("metadata.storage.spilled_listing.SPILL_BATCH_FILES", 3)  # partitions across batches, batches of many
    storage = Storage.open(fixture_table)
    expected = StorageListing(storage)
    spilled = SpilledListing(storage)
    partitions = expected.partitions()
    assert spilled.partitions() == partitions
    whole = _files(expected.files_for(partitions))
    assert all(whole[p] for p in partitions)  # each holds its partition metadata at least
    shuffled = partitions[::-1] + random.Random(7).sample(partitions, len(partitions))
    assert _files(spilled.files_for(shuffled)) == whole
    for partition in shuffled:  # one at a time, read back again each time
        assert _files(spilled.files_for([partition])) == {partition: whole[partition]}


def test_a_partition_the_walk_did_not_find_is_listed_from_storage(tmp_path: Path) -> None:
    (tmp_path / "p=1").mkdir()
    (tmp_path / "p=1" / ".hoodie_partition_metadata").write_text("x")
    (tmp_path / "p=1" / "a.parquet").write_bytes(b"12345")
    (tmp_path / "loose").mkdir()  # no partition metadata: the walk skips it
    (tmp_path / "loose" / "b.parquet").write_bytes(b"123")
    listing = SpilledListing(Storage.open(str(tmp_path)))
    assert listing.partitions() == ["p=1"]
    found = _files(listing.files_for(["loose", "p=1"]))
    assert found == {"loose": [("loose/b.parquet", 3)], "p=1": [("p=1/.hoodie_partition_metadata", 1), ("p=1/a.parquet", 5)]}


def test_the_spill_is_removed_with_the_listing(tmp_path: Path) -> None:
    (tmp_path / "p=1").mkdir()
    (tmp_path / "p=1" / ".hoodie_partition_metadata").write_text("x")
    listing = SpilledListing(Storage.open(str(tmp_path)))
    listing.partitions()
    folder = listing._folder.name
    assert os.listdir(folder) == ["files.arrow"]
    del listing
    gc.collect()
    assert not os.path.exists(folder)
