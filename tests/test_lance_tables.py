"""Tables with Lance base files (Hudi 1.2), as hudi-rs keeps them for its tests
(tests/data/hudi_rs_lance): opened, planned without statistics that are not
there, read through hudi-rs (rows equal hudi-rs's own snapshot), validated;
index writes and Hive sync refused in one line, the table left as it was."""

from __future__ import annotations

import filecmp
import shutil
import zipfile
from pathlib import Path

import hudi
import pyarrow as pa
import pytest
from click.testing import CliRunner

from engine_bridge.cli import main
from expressions import parse_sql
from listers import plan, scan
from listers.verify import verify_plan
from metadata import HudiTable
from metadata.mdt.validate import validate_metadata
from metadata.table.config import BaseFileFormat

DATA = Path(__file__).parent / "data" / "hudi_rs_lance"
TABLES = sorted(p.stem for p in DATA.glob("*.zip"))
PREDICATES = {
    "cow_v9_lance_txns_simple": ["region = 'us'", "txn_id = 'TXN-003'", "amount > 1000", "region = 'eu' AND is_international"],
    "mor_v9_lance_nonhivestyle": ["event_id = 'EVT-001'", "TRUE"],
    "mor_v9_trips_lance": ["city = 'san_francisco'", "fare > 30", "uuid = 'e3cf430c-889d-4015-bc98-59bdce1e530c'"],
}


@pytest.fixture(params=TABLES)
def lance_table(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, str]:
    with zipfile.ZipFile(DATA / f"{request.param}.zip") as zf:
        zf.extractall(tmp_path)
    [folder] = [p for p in tmp_path.iterdir() if p.is_dir()]
    return request.param, str(folder)


def _rows(rows: pa.Table) -> list[tuple[str, ...]]:
    return sorted(tuple(str(v) for v in row.values()) for row in rows.select(sorted(rows.column_names)).to_pylist())


def test_a_lance_table_reads_as_hudi_rs_reads_it_and_plans_soundly(lance_table: tuple[str, str]) -> None:
    name, path = lance_table
    table = HudiTable.open(path)
    assert table.config.base_file_format is BaseFileFormat.LANCE and table.config.version == 9
    assert all((s.base_file or ".lance").endswith(".lance") for s in table.file_slices())
    oracle = pa.Table.from_batches(hudi.HudiTableBuilder.from_base_uri(path).build().read())
    ours = scan(path).to_table()
    common = sorted(set(oracle.column_names) & set(ours.column_names))
    assert ours.num_rows == oracle.num_rows > 0
    assert _rows(ours.select(common)) == _rows(oracle.select(common))
    for predicate in PREDICATES[name]:
        planned = plan(path, predicate)
        check = verify_plan(table, planned, parse_sql(predicate))  # no slice ruled out holds a matching row
        assert check.ok, f"{name}: {predicate}: {check.describe()}"
        picked = scan(path, where=predicate).to_table()
        assert picked.num_rows <= ours.num_rows
    report = validate_metadata(path)
    assert report.ok, report.differences()


def test_index_writes_and_hive_sync_refuse_a_lance_table_in_one_line(lance_table: tuple[str, str], tmp_path: Path) -> None:
    _, path = lance_table
    before = tmp_path / "before"
    shutil.copytree(path, before)
    for command, says in ((["index", "build", path, "--rebuild"], "hudi-bridge builds the metadata table from Parquet footers"),
                          (["sync", path, "--database", "d", "--dry-run"], "which Hive's Hudi input formats")):
        result = CliRunner().invoke(main, command)
        assert result.exit_code == 2, result.output
        [line] = [line for line in result.output.splitlines() if line]
        assert line.startswith("error: ") and "LANCE" in line and says in line
    compared = filecmp.dircmp(before, path)
    assert not compared.diff_files and not compared.left_only and not compared.right_only
