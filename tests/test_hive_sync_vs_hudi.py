"""hudi-bridge's Hive sync against Apache Hudi 1.2.0's own `HiveSyncTool`
(hms mode, from the Spark bundle), on tables Hudi 1.2.0 wrote (version 9,
COPY_ON_WRITE and MERGE_ON_READ, one and two partition levels).

Into the Hive 2.3 metastore both register the same tables, column for
column and partition for partition, with the same formats, serde and
markers; the differences left are the documented ones (docs/engines.md).
Into the Hive 4 metastore on PostgreSQL, Hudi's tool cannot register at
all from Spark 3.5 (its Hive 2.3 client calls `get_table`, which Hive 4
removed, and its JDBC fallback needs a HiveServer2): the test checks that
this still holds, and that ours registers there what it registers in 2.3.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from hmsclient.genthrift.hive_metastore import ttypes

from hive_sync import SyncOptions, sync
from hive_sync.hms import HmsClient
from metadata import HudiTable
from tests.hudi_oracle import hive_sync_tool, missing_setup, release_shapes, tables
from tests.needs import require

pytestmark = [pytest.mark.services, pytest.mark.slow]
RELEASE = "1.2.0"
SHAPES = {"cow_v9_simple": "region", "mor_v9_complex_added_column": "region,grp"}
EXTRACTOR = "org.apache.hudi.hive.MultiPartKeysValueExtractor"
# Set by us only, or spelled differently, on purpose (docs/engines.md says why); and Hive's own bookkeeping.
OURS_ONLY = {"spark.sql.partitionProvider"}
HUDI_ONLY = {"hudi_writer_version"}  # Hudi 1.1+: the version of the Hudi library that ran the sync; we are not one
HIVE_BOOKKEEPING = {"transient_lastDdlTime", "numFiles", "totalSize", "numRows", "rawDataSize", "COLUMN_STATS_ACCURATE"}


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    require(missing_setup(RELEASE), f"Hudi {RELEASE}'s HiveSyncTool")
    found = tables(release_shapes(RELEASE), RELEASE)
    root = tmp_path_factory.mktemp("hudi-vs-ours")
    copies = {}
    for name in SHAPES:
        copies[name] = root / name
        shutil.copytree(found[name][0], copies[name])
    return copies


def _registered(uri: str, database: str, names: list[str]) -> dict[str, dict[str, Any]]:
    """What a metastore holds of each table: its shape, parameters and partitions (values -> location)."""
    held = {}
    with HmsClient(uri) as client:
        for name in names:
            table = client._client.get_table_req(ttypes.GetTableRequest(dbName=database, tblName=name)).table
            sd = table.sd
            partitions = client._client.get_partitions(database, name, -1)
            held[name] = {
                "type": table.tableType,
                "parameters": {k: v for k, v in (table.parameters or {}).items() if k not in HIVE_BOOKKEEPING},
                "input": sd.inputFormat, "output": sd.outputFormat, "serde": sd.serdeInfo.serializationLib,
                "serde_parameters": dict(sd.serdeInfo.parameters or {}),
                "columns": [(c.name, c.type) for c in sd.cols], "partition_keys": [(c.name, c.type) for c in table.partitionKeys],
                "location": sd.location.replace("file:", "", 1),
                "partitions": {tuple(p.values): p.sd.location.replace("file:", "", 1) for p in partitions},
            }
    return held


def _table_names(path: Path, name: str) -> list[str]:
    return [name] if HudiTable.open(str(path)).config.table_type.value == "COPY_ON_WRITE" else [f"{name}_ro", f"{name}_rt"]


def test_hudi_1_2s_hive_sync_tool_and_ours_register_the_same_tables_in_hive_2_3(written: dict[str, Path], metastore: Any,
                                                                                  tmp_path: Path) -> None:
    specs = [{"name": name, "path": str(path), "partition_fields": SHAPES[name], "extractor": EXTRACTOR} for name, path in written.items()]
    assert hive_sync_tool(RELEASE, metastore.uri, "by_hudi", specs, tmp_path) == dict.fromkeys(written)
    for name, path in written.items():
        with HmsClient(metastore.uri) as client:
            assert sync(HudiTable.open(str(path)), client, SyncOptions(database="by_us", table=name)).applied
    for name, path in written.items():
        names = _table_names(path, name)
        theirs, ours = _registered(metastore.uri, "by_hudi", names), _registered(metastore.uri, "by_us", names)
        for table in names:
            hudi, us = theirs[table], ours[table]
            assert {k: v for k, v in us["parameters"].items() if k not in OURS_ONLY} == \
                {k: v for k, v in hudi["parameters"].items() if k not in HUDI_ONLY}, table
            assert hudi["parameters"]["hudi_writer_version"] == RELEASE
            assert us["serde_parameters"]["path"].replace("file:", "", 1) == hudi["serde_parameters"]["path"], table
            assert {k: v for k, v in us["serde_parameters"].items() if k != "path"} == \
                {k: v for k, v in hudi["serde_parameters"].items() if k != "path"}, table
            for key in ("type", "input", "output", "serde", "columns", "partition_keys", "location", "partitions"):
                assert us[key] == hudi[key], (table, key)
            assert len(us["partitions"]) == len(HudiTable.open(str(path)).partitions())


def test_hudi_1_2s_hive_sync_tool_cannot_reach_hive_4_and_ours_does(written: dict[str, Path], metastore: Any, hive4_metastore: Any,
                                                                     tmp_path: Path) -> None:
    name, path = "cow_v9_simple", written["cow_v9_simple"]
    spec = [{"name": name, "path": str(path), "partition_fields": SHAPES[name], "extractor": EXTRACTOR}]
    failed = hive_sync_tool(RELEASE, hive4_metastore.uri, "by_hudi", spec, tmp_path)[name]
    assert failed is not None and "Invalid method name: 'get_table'" in failed, failed
    for uri in (metastore.uri, hive4_metastore.uri):
        with HmsClient(uri) as client:
            sync(HudiTable.open(str(path)), client, SyncOptions(database="hive4_too", table=name))
    hive2, hive4 = (_registered(uri, "hive4_too", [name])[name] for uri in (metastore.uri, hive4_metastore.uri))
    assert hive2 == hive4
