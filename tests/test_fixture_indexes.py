"""Every real Hudi table in the fixtures, its metadata table rebuilt with
every index hudi-bridge writes there: plans of predicates on its own values
keep every file slice holding a matching row (`verify_plan` reads the
slices ruled out), as on the builder's shapes (`tests/table_shapes.py`)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow as pa
import pytest

from expressions import parse_sql
from listers import plan
from listers.verify import verify_plan
from metadata import HudiTable
from metadata.mdt.file_groups import PARTITION_ORDER
from metadata.mdt.write.writer import MetadataTableWriter
from metadata.table.slice_rows import merged_rows
from tests.conftest import FIXTURE_ZIPS

STEMS = [z.stem for z in FIXTURE_ZIPS if "empty" not in z.stem] or ["no-fixtures"]


def _predicates(rows: pa.Table) -> list[str]:
    """Equality, a range and IN on up to three integer or string columns, with values the table holds."""
    found = []
    for field in rows.schema:
        if field.name.startswith("_hoodie_") or not (pa.types.is_integer(field.type) or pa.types.is_string(field.type)):
            continue
        values = [v for v in rows.column(field.name).to_pylist() if v is not None]
        if not values:
            continue
        low, high = min(values), max(values)
        text = (lambda v: f"'{v}'" if isinstance(v, str) else str(v))  # noqa: E731
        found += [f"`{field.name}` = {text(low)}", f"`{field.name}` >= {text(high)}", f"`{field.name}` IN ({text(low)}, {text(high)})"]
        if len(found) >= 9:
            break
    return found


@pytest.mark.parametrize("fixture_table", STEMS, indirect=True)
def test_plans_through_every_index_we_build_drop_no_file(fixture_table: str, tmp_path: Path) -> None:
    copy = tmp_path / "t"
    shutil.copytree(fixture_table, copy)
    table = HudiTable.open(str(copy))
    MetadataTableWriter(str(copy)).build(list(PARTITION_ORDER), rebuild=True)
    table = HudiTable.open(str(copy))
    slices = table.file_slices()
    rows = next((r for r in (merged_rows(table, s) for s in slices) if r.num_rows), None)
    assert rows is not None
    predicates = _predicates(rows)
    assert predicates
    for where in predicates:
        result = plan(str(copy), where)
        checked = verify_plan(table, result, parse_sql(where))
        assert checked.ok, f"{fixture_table}: {where} ruled out {checked.matches}"
