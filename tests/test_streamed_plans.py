"""Plans made in batches of partitions (`plan(on_slices=)`), and the service answering with a plan's first page
while the rest is planned: the slices, stages and notes are the plan's, page for page."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

import listers.planner as planner
from engine_bridge.service import Limits, ServiceConfig, TableEntry
from listers import plan
from listers.planner import partition_batches
from listers.service_client import ServiceClient
from metadata import FileSlice
from metadata.mdt.write.writer import MetadataTableWriter
from metadata.sample_tables.sample import build_sample_table
from tests.test_service import TRIPS_PREDICATES, _predicates, call, fixture_tables, serving


@pytest.fixture(scope="module")
def tables(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("streamed")
    trips = str(root / "trips")
    build_sample_table(trips, "MERGE_ON_READ", 8)
    MetadataTableWriter(trips).build(["files", "column_stats", "partition_stats", "record_index", "bloom_filters"])
    return {"trips": trips, **fixture_tables(root)}


@pytest.fixture
def one_partition_first(monkeypatch: pytest.MonkeyPatch) -> None:
    """Batches of 1, 2, 4, ... partitions: every table of more than one partition is planned in several."""
    monkeypatch.setattr(planner, "FIRST_BATCH_PARTITIONS", 1)


def test_partition_batches_double() -> None:
    assert [len(b) for b in partition_batches([str(i) for i in range(20)], 2)] == [2, 4, 8, 6]
    assert list(partition_batches([], 16)) == []


def test_a_plan_made_in_batches_is_the_plan(tables: dict[str, str], one_partition_first: None) -> None:
    compared = batched = 0
    for name, path in tables.items():
        for predicate in _predicates(name, path):
            handed: list[tuple[list[FileSlice], bool]] = []
            whole = plan(path, predicate)
            streamed = plan(path, predicate, on_slices=lambda slices, more, handed=handed: handed.append((list(slices), more)))
            assert streamed.files == whole.files, (name, predicate)
            assert [s for slices, _ in handed for s in slices] == list(whole.files), (name, predicate)
            assert [more for _, more in handed] == [True] * (len(handed) - 1) + [False] * bool(handed), (name, predicate)
            assert [(s.name, s.kept, s.total, s.unit, s.total_unit) for s in streamed.stages] == \
                   [(s.name, s.kept, s.total, s.unit, s.total_unit) for s in whole.stages], (name, predicate)
            assert [s.note for s in streamed.stages] == [s.note for s in whole.stages], (name, predicate)
            assert (streamed.not_used, streamed.residual, streamed.warnings) == (whole.not_used, whole.residual, whole.warnings)
            compared += 1
            batched += len(handed) > 2
    assert compared >= 3 * len(tables) - 2 and batched >= len(TRIPS_PREDICATES) - 2  # trips' four partitions: three batches


@pytest.fixture
def held_after_the_first_batch(monkeypatch: pytest.MonkeyPatch, one_partition_first: None) -> Iterator[threading.Event]:
    """A plan's planning thread waits for the event once a batch with more to come is handed on: a plan that is still
    planning, for as long as a test wants."""
    from engine_bridge.service.plans import PlanRecord

    gate = threading.Event()
    add = PlanRecord.add

    def held(self: PlanRecord, slices: Any, more: bool) -> None:
        add(self, slices, more)
        if more:
            assert gate.wait(30)

    monkeypatch.setattr(PlanRecord, "add", held)
    yield gate
    gate.set()


def _pages(url: str, plan_id: str, token: str | None, size: int) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    while token is not None:
        status, page, _ = call(f"{url}/v1/plans/{plan_id}/tasks?page_token={token}&page_size={size}")
        assert status == 200, page
        found += page["file_slices"]
        token = page["next_page_token"]
    return found


def test_the_first_page_is_answered_while_the_rest_is_planned(tables: dict[str, str], held_after_the_first_batch: threading.Event) -> None:
    local = plan(tables["trips"], "TRUE")
    limits = Limits(page_size=2, plan_deadline_seconds=0.5)
    with serving(ServiceConfig((TableEntry("trips", tables["trips"]),), limits)) as (url, _):
        status, first, _ = call(f"{url}/v1/tables/trips/plan", "POST", {"filter": "TRUE", "page_size": 1})
        assert status == 200 and first["status"] == "planning", first
        assert first["file_slices"] == [local.files[0].to_wire()] and "file_slices_total" not in first and "stages" not in first
        found = first["file_slices_found"]
        assert 1 <= found < len(local.files)
        started = time.monotonic()
        status, waited, _ = call(f"{url}/v1/plans/{first['plan_id']}/tasks?page_token={found}&page_size=1")  # not found yet
        assert status == 200 and waited["file_slices"] == [] and waited["next_page_token"] == str(found)
        assert time.monotonic() - started >= 0.4  # it waited for the page, up to the plan deadline
        held_after_the_first_batch.set()
        pages = first["file_slices"] + _pages(url, first["plan_id"], first["next_page_token"], 2)
        assert pages == [s.to_wire() for s in local.files]
        status, done, _ = call(f"{url}/v1/plans/{first['plan_id']}")
        assert done["status"] == "completed" and done["file_slices_total"] == len(local.files)
        assert [(s["stage"], s["kept"], s["of"]) for s in done["stages"]] == [(s.name, s.kept, s.total) for s in local.stages]
        asked = ServiceClient(url).plan("trips", "fare > 20", page_size=1)  # the client reads a planning answer to its end
        assert asked.plan.files == plan(tables["trips"], "fare > 20").files and asked.answer["status"] == "completed"


def test_a_plan_cancelled_while_planning_stops_at_its_next_batch(tables: dict[str, str], held_after_the_first_batch: threading.Event) -> None:
    with serving(ServiceConfig((TableEntry("trips", tables["trips"]),), Limits(page_size=1))) as (url, app):
        status, first, _ = call(f"{url}/v1/tables/trips/plan", "POST", {"filter": "TRUE"})
        assert status == 200 and first["status"] == "planning", first
        status, cancelled, _ = call(f"{url}/v1/plans/{first['plan_id']}", "DELETE")
        assert status == 200 and cancelled["status"] == "cancelled"
        held_after_the_first_batch.set()
        store = app.state.service.plans
        for _ in range(500):
            if store.active == 0:
                break
            time.sleep(0.01)
        assert store.active == 0 and store.get(first["plan_id"]).found == []
        status, refused, _ = call(f"{url}/v1/plans/{first['plan_id']}/tasks?page_token=1")
        assert status == 409 and refused["error"]["code"] == "plan_not_completed"
