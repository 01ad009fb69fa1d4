"""The service with a Hive metastore (Hive 2.3 and Hive 4): tables served from
a database by their Hive names, and a table's sync status, which shows the
drift a new commit makes and none once `sync` ran."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from engine_bridge.service import ServiceConfig
from hive_sync import SyncOptions, sync
from hive_sync.hms import HmsClient
from listers import plan
from listers.service_client import ServiceClient
from metadata import HudiTable
from metadata.sample_tables.sample import build_sample_table, trip_rows
from tests.test_service import call, serving

pytestmark = [pytest.mark.services, pytest.mark.slow]


def test_a_database_is_served_by_hive_names_with_its_sync_status(hms: Any, tmp_path: Path) -> None:
    cow, mor = str(tmp_path / "cow"), str(tmp_path / "mor")
    writer = build_sample_table(cow, "COPY_ON_WRITE", 8)
    build_sample_table(mor, "MERGE_ON_READ", 8)
    database = f"served_{tmp_path.name[-12:].lower().replace('-', '_')}"
    with HmsClient(hms.uri) as client:
        sync(HudiTable.open(cow), client, SyncOptions(database, "cow_trips"))
        sync(HudiTable.open(mor), client, SyncOptions(database, "mor_trips"))  # mor_trips_ro and mor_trips_rt
        assert client.list_tables(database) == ["cow_trips", "mor_trips_ro", "mor_trips_rt"]

    config = ServiceConfig.from_document({"metastore": {"uri": hms.uri, "databases": [database]}, "limits": {"refresh_seconds": 0}},
                                         "test", tmp_path)
    assert [e.name for e in config.tables] == [f"{database}.cow_trips", f"{database}.mor_trips_rt"]  # the pair served once
    assert [e.uri.removeprefix("file:") for e in config.tables] == [cow, mor]  # where the metastore says they are
    with serving(config) as (url, _):
        client = ServiceClient(url)
        asked = client.plan(f"{database}.cow_trips", "city = 'chennai'")
        assert [s.to_wire() for s in asked.plan.files] == [s.to_wire() for s in plan(cow, "city = 'chennai'").files]

        status, synced, _ = call(f"{url}/v1/tables/{database}.cow_trips/hive-sync")
        assert status == 200 and synced["in_sync"] and synced["partition_and_column_changes"] == 0, synced
        assert synced["last_synced"] == {f"{database}.cow_trips": synced["latest_completed"]}

        writer.write([{**row, "city": "lisbon"} for row in trip_rows(500, 3)], operation="insert")  # a new partition
        status, drift, _ = call(f"{url}/v1/tables/{database}.cow_trips/hive-sync")
        assert status == 200 and not drift["in_sync"] and drift["partition_and_column_changes"] == 1
        assert drift["tables"][0]["partitions"]["ADD"] == ["city=lisbon"]
        with HmsClient(hms.uri) as hive:
            sync(HudiTable.open(cow), hive, SyncOptions(database, "cow_trips"))
        status, again, _ = call(f"{url}/v1/tables/{database}.cow_trips/hive-sync")
        assert again["in_sync"] and again["last_synced"][f"{database}.cow_trips"] == again["latest_completed"]

        status, refused, _ = call(f"{url}/v1/tables/{database}.mor_trips_rt/plan", "POST", {"filter": "nope = 1"})
        assert status == 422 and refused["error"]["code"] == "refused"
