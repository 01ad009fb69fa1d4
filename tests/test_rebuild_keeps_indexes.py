"""`index build --rebuild` touches only the partitions it names: Hudi's own
secondary indexes survive, bad input changes nothing, and a crash at any step
leaves the old partition readable until the swap (issue: a failed rebuild
destroyed the metadata table)."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from engine_bridge.cli import main
from metadata.mdt.file_groups import MdtPartition
from metadata.mdt.validate import validate_metadata
from metadata.mdt.write.writer import MetadataTableWriter
from metadata.storage.storage import Storage
from metadata.table.config import METADATA_PARTITIONS_INFLIGHT_KEY, TableConfig
from tests.conftest import requires_fixtures
from tests.test_index_writer import Crash, _crash_at, _held_values, _live, _record_locations, _rs_slices

V9_WITH_SECONDARY = ["sample_table__cow__v9_txns_simple_meta", "sample_table__mor__avro__v9_txns_simple_meta"]


def tree_digest(root: Path) -> dict[str, str]:
    """Every file below root, by relative path, with its bytes' digest."""
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(root.rglob("*")) if p.is_file()}


def _copy(fixture_table: str, tmp_path: Path) -> Path:
    copy = tmp_path / "table"
    shutil.copytree(fixture_table, copy)
    return copy


def _partitions(path: Path) -> tuple[str, ...]:
    return TableConfig.load(Storage.open(str(path))).metadata_partitions


@requires_fixtures
@pytest.mark.parametrize("fixture_table", V9_WITH_SECONDARY, indirect=True)
def test_a_rebuild_with_a_bad_column_changes_nothing(fixture_table: str, tmp_path: Path) -> None:
    copy = _copy(fixture_table, tmp_path)
    before = tree_digest(copy)
    result = CliRunner().invoke(main, ["index", "build", str(copy), "--columns", "nosuchcol", "--rebuild"])
    assert result.exit_code == 2
    assert result.stderr.strip().endswith("no column 'nosuchcol' in the table schema")
    assert len(result.stderr.strip().splitlines()) == 1
    assert tree_digest(copy) == before


@requires_fixtures
@pytest.mark.parametrize("fixture_table", V9_WITH_SECONDARY, indirect=True)
def test_rebuilding_the_record_index_keeps_hudis_secondary_indexes(fixture_table: str, tmp_path: Path) -> None:
    copy = _copy(fixture_table, tmp_path)
    partitions = _partitions(copy)
    assert {"secondary_index_merchant_idx", "secondary_index_txn_date_idx"} <= set(partitions)
    secondary = {name: tree_digest(copy / ".hoodie/metadata" / name) for name in partitions if name.startswith("secondary_index_")}
    files_before, stats_before = _live(str(copy))
    locations = _record_locations(str(copy))
    result = CliRunner().invoke(main, ["index", "build", str(copy), "--partitions", "record_index", "--rebuild", "--json"])
    assert result.exit_code == 0, result.output
    assert _partitions(copy) == partitions
    assert METADATA_PARTITIONS_INFLIGHT_KEY not in TableConfig.load(Storage.open(str(copy))).raw or \
        not TableConfig.load(Storage.open(str(copy))).raw[METADATA_PARTITIONS_INFLIGHT_KEY]
    for name, digest in secondary.items():
        assert tree_digest(copy / ".hoodie/metadata" / name) == digest, name
    assert _live(str(copy)) == (files_before, stats_before)
    assert _record_locations(str(copy)) == locations
    assert validate_metadata(str(copy)).ok
    assert _rs_slices(str(copy)) == _rs_slices(fixture_table)  # hudi-rs reads the swapped-in slices
    assert "already built" not in result.output  # files was not asked for


@requires_fixtures
@pytest.mark.parametrize("fixture_table", V9_WITH_SECONDARY[:1], indirect=True)
def test_a_crashed_rebuild_leaves_the_old_partition_and_a_rerun_completes(fixture_table: str, tmp_path: Path) -> None:
    template = _copy(fixture_table, tmp_path / "template")
    MetadataTableWriter(str(template)).sync()  # anything the fixture's MDT lacks is applied once, outside the crash
    held = _held_values(template)
    all_steps, counting = _crash_at(10**6)
    clean = _copy(str(template), tmp_path / "count")
    MetadataTableWriter(str(clean), fault=counting).build([MdtPartition.COLUMN_STATS], rebuild=True)
    rebuilt = _held_values(clean)  # partition_stats is rebuilt along (same columns); its sizes are ours, not Hudi's
    assert rebuilt["column_stats"] == held["column_stats"] and rebuilt["record_index"] == held["record_index"]
    assert any(s.startswith("rebuild: after column_stats/") for s in all_steps)
    for target in range(1, len(all_steps) + 1):
        copy = _copy(str(template), tmp_path / f"crash{target}")
        secondary = tree_digest(copy / ".hoodie/metadata/secondary_index_merchant_idx")
        steps, fault = _crash_at(target)
        with pytest.raises(Crash):
            MetadataTableWriter(str(copy), fault=fault).build([MdtPartition.COLUMN_STATS], rebuild=True)
        if target < len(all_steps):  # before the commit completes, readers see the old slices
            assert _held_values(copy) == held, steps[-1]
        MetadataTableWriter(str(copy)).build([MdtPartition.COLUMN_STATS], rebuild=True)
        assert _held_values(copy) == rebuilt, steps[-1]
        assert tree_digest(copy / ".hoodie/metadata/secondary_index_merchant_idx") == secondary
        assert validate_metadata(str(copy)).ok, steps[-1]
