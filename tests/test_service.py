"""`hudi-bridge serve`: the HTTP API gives the local planner's answers (every
fixture table, SQL and Iceberg's JSON filters, pages, submitted plans and
cancels), follows new commits, keeps its limits and its token, and the
clients (`plan --service`, `scan(service=)`) answer as locally."""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from engine_bridge.cli import main
from engine_bridge.service import Limits, ServiceConfig, ServiceConfigError, TableEntry, create_app
from listers import plan, scan
from listers.service_client import ServiceClient, ServiceRequestError
from metadata import FileSlice, HudiTable
from metadata.mdt.write.writer import MetadataTableWriter
from metadata.sample_tables.sample import build_sample_table, trip_rows
from metadata.table.slice_rows import table_read_schema
from tests.conftest import FIXTURE_ZIPS, table_path
from tests.http_services import asgi_server

TRIPS_PREDICATES = ("TRUE", "city = 'chennai'", "fare > 50", "uuid = 'trip-00003'", "city IN ('amsterdam', 'sao_paulo') AND fare < 20")


@contextmanager
def serving(config: ServiceConfig, token: str | None = None) -> Iterator[tuple[str, Any]]:
    """The service on 127.0.0.1 in a thread: its URL and its application."""
    app = create_app(config, token)
    with asgi_server(app, "the service") as url:
        yield url, app


def call(url: str, method: str = "GET", body: Any = None, token: str | None = None, raw: bytes | None = None) -> tuple[int, Any, dict[str, str]]:
    data = raw if raw is not None else None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=60) as answer:
            text = answer.read()
            return answer.status, json.loads(text) if answer.headers.get_content_type() == "application/json" else text.decode(), dict(answer.headers)
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read()), dict(exc.headers)


@pytest.fixture(scope="module")
def tables(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """name -> path: the sample trips table (with column stats built) and every fixture table."""
    root = tmp_path_factory.mktemp("served")
    trips = str(root / "trips")
    build_sample_table(trips, "MERGE_ON_READ", 8)
    MetadataTableWriter(trips).build()
    return {"trips": trips, **fixture_tables(root)}


def fixture_tables(root: Path) -> dict[str, str]:
    """name -> path of every fixture table, unpacked below `root`."""
    import zipfile

    found = {}
    for archive in FIXTURE_ZIPS:
        with zipfile.ZipFile(archive) as zf:
            zf.extractall(root / archive.stem, [m for m in zf.namelist() if not m.startswith("__MACOSX")])
        found[archive.stem] = table_path(root, archive.stem)
    return found


@pytest.fixture(scope="module")
def service(tables: dict[str, str]) -> Iterator[str]:
    config = ServiceConfig(tuple(TableEntry(name, path) for name, path in tables.items()), Limits(page_size=3))
    with serving(config) as (url, _):
        yield url


def _predicates(name: str, path: str) -> list[str]:
    if name == "trips":
        return list(TRIPS_PREDICATES)
    try:
        column = next(f.name for f in table_read_schema(HudiTable.open(path)) if not f.name.startswith("_hoodie"))
    except Exception:  # noqa: BLE001 - a table without a schema yet (the empty fixture): TRUE alone
        return ["TRUE"]
    return ["TRUE", f"{column} IS NOT NULL", f"{column} IS NULL"]


def test_every_plan_over_http_is_the_local_planners(service: str, tables: dict[str, str]) -> None:
    client = ServiceClient(service)
    assert sorted(client.tables()) == sorted(tables)
    compared = 0
    for name, path in tables.items():
        for predicate in _predicates(name, path):
            local = plan(path, predicate)
            asked = client.plan(name, predicate, page_size=2)  # every page read
            assert [s.to_wire() for s in asked.plan.files] == [s.to_wire() for s in local.files], (name, predicate)
            assert asked.plan.residual == local.residual and [s.name for s in asked.plan.stages] == [s.name for s in local.stages]
            assert [(s.kept, s.total) for s in asked.plan.stages] == [(s.kept, s.total) for s in local.stages], (name, predicate)
            assert asked.base_uri == HudiTable.open(path).base_uri
            compared += 1
    assert compared >= 3 * len(tables) - 2


def test_an_iceberg_json_filter_plans_as_its_sql(service: str, tables: dict[str, str]) -> None:
    document = {"type": "and", "left": {"type": "in", "term": "city", "values": ["amsterdam", "sao_paulo"]},
                "right": {"type": "lt", "term": {"type": "reference", "term": "fare"}, "value": 20}}
    status, answer, _ = call(f"{service}/v1/tables/trips/plan", "POST", {"filter": document, "page_size": 100})
    assert status == 200, answer
    local = plan(tables["trips"], "city IN ('amsterdam', 'sao_paulo') AND fare < 20")
    assert answer["file_slices"] == [s.to_wire() for s in local.files]
    assert 0 < answer["file_slices_total"] < len(HudiTable.open(tables["trips"]).file_slices())
    status, answer, _ = call(f"{service}/v1/tables/trips/plan", "POST", {"filter": {"type": "and", "left": True, "right": {"type": "gt"}}})
    assert (status, answer["error"]["code"]) == (400, "bad_filter") and answer["error"]["message"] == "$.right: 'gt' needs 'term'"


def test_plan_tasks_come_in_pages(service: str, tables: dict[str, str]) -> None:
    everything = [s.to_wire() for s in plan(tables["trips"], "TRUE").files]
    assert len(everything) > 3
    status, first, _ = call(f"{service}/v1/tables/trips/plan", "POST", {})  # the service's page size: 3
    assert status == 200 and first["file_slices_total"] == len(everything) and len(first["file_slices"]) == 3
    pages, token = [first["file_slices"]], first["next_page_token"]
    while token is not None:
        status, page, _ = call(f"{service}/v1/plans/{first['plan_id']}/tasks?page_token={token}&page_size=2")
        assert status == 200
        pages.append(page["file_slices"])
        token = page["next_page_token"]
    assert [s for page in pages for s in page] == everything
    assert [len(p) for p in pages[1:-1]] == [2] * (len(pages) - 2)
    for bad in ("page_token=x", f"page_token={len(everything) + 1}", "page_size=0", "page_size=10001"):
        status, answer, _ = call(f"{service}/v1/plans/{first['plan_id']}/tasks?{bad}")
        assert status == 400 and answer["error"]["code"] == "bad_request", bad
    status, answer, _ = call(f"{service}/v1/plans/no-such-plan/tasks")
    assert status == 404 and answer["error"]["code"] == "plan_not_found"


def test_time_travel_and_incremental_plans_are_the_local_ones(service: str, tables: dict[str, str]) -> None:
    from listers import incremental

    table = HudiTable.open(tables["trips"])
    commits = table.timeline.commits()
    first = commits[0]
    status, answer, _ = call(f"{service}/v1/tables/trips/plan", "POST", {"as_of": first.requested_time, "page_size": 1000})
    assert status == 200 and answer["instant"] == first.requested_time
    assert answer["file_slices"] == [s.to_wire() for s in plan(tables["trips"], "TRUE", as_of=first.requested_time).files]
    begin = first.completion_time or first.requested_time
    status, answer, _ = call(f"{service}/v1/tables/trips/plan", "POST", {"incremental": {"begin": begin}, "page_size": 1000})
    pulled = incremental(tables["trips"], begin)
    assert status == 200 and answer["kind"] == "incremental"
    assert answer["file_slices"] == [s.to_wire() for s in pulled.files] and answer["residual"] == pulled.row_filter
    assert answer["instants"] == [i.requested_time for i in pulled.instants]
    status, answer, _ = call(f"{service}/v1/tables/trips/changes?begin=0&page_size=4")
    assert status == 200 and len(answer["changes"]) == 4 and answer["next_page_token"] == "4"
    from listers import changes

    assert answer["changes_total"] == changes(tables["trips"], "0").num_rows
    assert answer["changes"] == changes(tables["trips"], "0").slice(0, 4).to_pylist()
    status, second, _ = call(f"{service}/v1/tables/trips/changes?begin=0&page_size=4&page_token=4")  # from the feed read once
    assert status == 200 and second["changes"] == changes(tables["trips"], "0").slice(4, 4).to_pylist()


def test_requests_are_bounded_and_errors_are_one_line_of_json(service: str) -> None:
    cases = [
        ({"filter": "fare > "}, 400, "bad_filter"),
        ({"filter": "x" * 70_000}, 413, "filter_too_large"),
        ({"filter": "TRUE", "extra": 1}, 400, "bad_request"),
        ({"filter": "TRUE", "mode": "later"}, 400, "bad_request"),
        ({"filter": "nope = 1"}, 422, "refused"),
        ({"filter": "TRUE", "columns": ["fare", "nope"]}, 400, "bad_columns"),
        ({"filter": "TRUE", "as_of": "2024", "incremental": {"begin": "0"}}, 400, "bad_request"),
    ]
    for body, code, error in cases:
        status, answer, _ = call(f"{service}/v1/tables/trips/plan", "POST", body)
        assert (status, answer["error"]["code"]) == (code, error), (body, answer)
        assert "\n" not in answer["error"]["message"] and "Traceback" not in answer["error"]["message"]
    status, answer, _ = call(f"{service}/v1/tables/trips/plan", "POST", raw=b"{" * 10)
    assert status == 400 and answer["error"]["code"] == "bad_request"
    import http.client
    from urllib.parse import urlsplit

    connection = http.client.HTTPConnection(urlsplit(service).netloc, timeout=30)  # a body too large is refused before it is read
    connection.putrequest("POST", "/v1/tables/trips/plan")
    connection.putheader("Content-Length", str(2 << 20))
    connection.endheaders()
    answer_413 = connection.getresponse()
    assert answer_413.status == 413 and json.loads(answer_413.read())["error"]["code"] == "body_too_large"
    connection.close()
    status, answer, _ = call(f"{service}/v1/tables/..%2F..%2Fetc/plan", "POST", {})
    assert status == 404 and answer["error"]["code"] == "not_found"
    status, answer, _ = call(f"{service}/v1/tables/trips/plan", "GET")
    assert status == 405 and answer["error"]["code"] == "method_not_allowed"


def test_a_new_commit_is_seen_on_the_next_request(tmp_path: Path) -> None:
    path = str(tmp_path / "live")
    builder = build_sample_table(path, "COPY_ON_WRITE", 8)
    with serving(ServiceConfig((TableEntry("live", path),), Limits(refresh_seconds=0.0))) as (url, app):
        client = ServiceClient(url)
        before = client.plan("live", "TRUE")
        assert client.plan("live", "TRUE").plan.files == before.plan.files
        assert app.state.service.tables.get("live").answers_reused == 1  # the same question on the same table: answered from memory
        written = builder.write(trip_rows(900, 12), operation="insert")
        after = client.plan("live", "TRUE")
        assert after.instant == written != before.instant
        assert [s.to_wire() for s in after.plan.files] == [s.to_wire() for s in plan(path, "TRUE").files]
        assert len(after.plan.files) > len(before.plan.files) or {s.base_instant for s in after.plan.files} != {s.base_instant for s in before.plan.files}
        again = client.plan("live", "TRUE")
        assert app.state.service.tables.get("live").opened == 2 and again.instant == written  # unchanged: not opened again


def test_submitted_plans_are_polled_cancelled_and_bounded(tables: dict[str, str]) -> None:
    limits = Limits(max_concurrent_plans=1, max_queued_plans=3, plan_deadline_seconds=0.3)
    with serving(ServiceConfig((TableEntry("trips", tables["trips"]),), limits)) as (url, app):
        status, submitted, _ = call(f"{url}/v1/tables/trips/plan", "POST", {"filter": "fare > 50", "mode": "async"})
        assert status == 202 and submitted["status"] in ("submitted", "completed")
        for _ in range(200):
            status, polled, _ = call(f"{url}/v1/plans/{submitted['plan_id']}")
            if polled["status"] != "submitted":
                break
            time.sleep(0.02)
        assert polled["status"] == "completed"
        assert polled["file_slices"] == [s.to_wire() for s in plan(tables["trips"], "fare > 50").files]

        gate = threading.Event()
        store = app.state.service.plans
        store.submit("trips", lambda _: (gate.wait(30), ({}, []))[1])  # the one planning thread is busy until the gate opens
        try:
            status, queued, _ = call(f"{url}/v1/tables/trips/plan", "POST", {"mode": "async"})
            assert status == 202 and queued["status"] == "submitted"
            status, cancelled, _ = call(f"{url}/v1/plans/{queued['plan_id']}", "DELETE")
            assert status == 200 and cancelled["status"] == "cancelled"
            status, late, _ = call(f"{url}/v1/tables/trips/plan", "POST", {})  # queued behind the busy thread past its deadline
            assert status == 504 and late["error"]["code"] == "deadline_exceeded" and '"mode": "async"' in late["error"]["message"]
            for _ in range(2):  # three in all, queued or running
                assert call(f"{url}/v1/tables/trips/plan", "POST", {"mode": "async"})[0] == 202
            for body in ({"mode": "async"}, {}):
                status, refused, headers = call(f"{url}/v1/tables/trips/plan", "POST", body)
                assert status == 429 and refused["error"]["code"] == "too_many_plans" and headers.get("retry-after") == "1"
        finally:
            gate.set()
        for _ in range(200):
            if store.active == 0:
                break
            time.sleep(0.02)
        assert store.active == 0
        status, still, _ = call(f"{url}/v1/plans/{queued['plan_id']}")
        assert still["status"] == "cancelled" and "file_slices" not in still
        status, text, _ = call(f"{url}/metrics")
        assert 'hudi_bridge_requests_total{method="POST",route="/v1/tables/{name}/plan",status="429"} 2' in text
        assert 'hudi_bridge_plans_finished_total{status="cancelled"}' in text


def test_a_token_guards_everything_but_liveness(tables: dict[str, str]) -> None:
    secret = "s3cr3t-token-value"
    with serving(ServiceConfig((TableEntry("trips", tables["trips"]),)), token=secret) as (url, _):
        assert call(f"{url}/health")[0] == 200
        for route in ("/", "/v1/tables", "/metrics", "/openapi.json", "/tables/trips"):
            status, answer, headers = call(f"{url}{route}")
            assert status == 401 and answer["error"]["code"] == "unauthorized" and headers.get("www-authenticate") == "Bearer", route
            assert call(f"{url}{route}", token="wrong")[0] == 401
            assert call(f"{url}{route}", token=secret)[0] == 200, route
        status, answer, _ = call(f"{url}/v1/tables/trips/plan", "POST", {"filter": "fare > 50"}, token=secret)
        assert status == 200 and secret not in json.dumps(answer)
        with pytest.raises(ServiceRequestError, match="unauthorized"):
            ServiceClient(url, token="").tables()
        assert ServiceClient(url, token=secret).tables() == ["trips"]


def test_credentials_in_a_uri_are_refused_and_never_shown() -> None:
    with pytest.raises(ServiceConfigError) as refused:
        ServiceConfig((TableEntry("t", "s3://AKIAXXXX:verysecretkey@bucket/t"),))
    assert "verysecretkey" not in str(refused.value) and "bucket" in str(refused.value)
    with pytest.raises(ServiceConfigError, match="letters, digits"):
        ServiceConfig((TableEntry("a/b", "/tmp/x"),))


def test_serve_refuses_a_public_address_without_a_token(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["serve", "--table", f"t={tmp_path}", "--host", "0.0.0.0"], env={"HUDI_BRIDGE_SERVICE_TOKEN": ""})
    assert result.exit_code == 2
    [line] = [line for line in result.output.splitlines() if line]
    assert line.startswith("error: binding 0.0.0.0 (not a loopback address) needs a bearer token: --token-file FILE or HUDI_BRIDGE_SERVICE_TOKEN")
    result = CliRunner().invoke(main, ["serve"])
    assert result.exit_code == 2 and "nothing to serve" in result.output


def test_the_clients_answer_as_the_local_planner(service: str, tables: dict[str, str]) -> None:
    predicate = "city = 'chennai' AND fare > 20"
    result = CliRunner().invoke(main, ["plan", "trips", "--service", service, "--where", predicate, "--json"])
    assert result.exit_code == 0, result.output
    answered = json.loads(result.stdout)
    local = plan(tables["trips"], predicate).to_dict()
    assert answered["files"] == local["files"] and answered["residual"] == local["residual"]
    assert [s["kept"] for s in answered["stages"]] == [s["kept"] for s in local["stages"]]
    refused = CliRunner().invoke(main, ["plan", "trips", "--service", service, "--where", predicate, "--verify"])
    assert refused.exit_code == 2 and "--verify plan here" in refused.output

    ours = scan("trips", where=predicate, columns=["uuid", "fare"], service=service).to_table()
    here = scan(tables["trips"], where=predicate, columns=["uuid", "fare"]).to_table()
    assert ours.num_rows > 0 and ours.sort_by("uuid").equals(here.sort_by("uuid"))
    begin = HudiTable.open(tables["trips"]).timeline.commits()[1]
    begin_time = begin.completion_time or begin.requested_time
    pulled = scan("trips", columns=["uuid"], query_type="incremental", begin=begin_time, service=service).to_table()
    assert pulled.sort_by("uuid").equals(scan(tables["trips"], columns=["uuid"], query_type="incremental", begin=begin_time).to_table().sort_by("uuid"))
    with pytest.raises(ServiceRequestError, match="table_not_found"):
        scan("nope", service=service)


def test_the_openapi_document_names_every_route(service: str) -> None:
    status, document, _ = call(f"{service}/openapi.json")
    assert status == 200 and document["openapi"].startswith("3.")
    from starlette.routing import Route

    served = {route.path for route in create_app(ServiceConfig(())).routes if isinstance(route, Route)}
    pages = {"/", "/tables/{name}", "/openapi.json"}
    assert served - pages == set(document["paths"])
    status, health, _ = call(f"{service}/v1/tables/trips/health")
    assert status == 200 and health["file_groups"] == len(HudiTable.open(health["table"]["base_uri"]).file_slices())


def test_secrets_in_storage_options_never_reach_an_answer_or_the_log(tables: dict[str, str], caplog: pytest.LogCaptureFixture) -> None:
    secret = "verysecretvalue-4711"
    entry = TableEntry("trips", tables["trips"], {"aws_secret_access_key": secret, "aws_access_key_id": "AKIAEXAMPLE"})
    with caplog.at_level("INFO", logger="hudi_bridge.service"), serving(ServiceConfig((entry,))) as (url, _):
        seen = [call(f"{url}{route}")[1] for route in ("/v1/tables/trips", "/v1/tables/trips/health", "/metrics", "/", "/tables/trips")]
        seen.append(call(f"{url}/v1/tables/trips/plan", "POST", {"filter": f"rider = '{secret}'"})[1])  # named in a filter: still masked
        seen.append(call(f"{url}/v1/tables/trips/plan", "POST", {"filter": f"nope = '{secret}'"})[1])
    for answer in seen:
        assert secret not in (answer if isinstance(answer, str) else json.dumps(answer))
    assert seen[-1]["error"]["code"] == "refused"
    assert any('"route": "/v1/tables/{name}/plan"' in r.getMessage() for r in caplog.records)
    assert all(secret not in r.getMessage() for r in caplog.records)


def test_an_answer_names_the_state_it_was_planned_on(tmp_path: Path) -> None:
    """The soak's case as an explicit example: a commit lands while a plan is being answered (here, just after the
    service looks at the table a second time). The answer's instant and its file slices must come from one state of
    the table: the slices are the local planner's as of the instant the answer names."""
    from engine_bridge.service.planning import PlanRequest, plan_answer
    from engine_bridge.service.registry import ServedTable

    path = str(tmp_path / "live")
    builder = build_sample_table(path, "COPY_ON_WRITE", 8)
    served = ServedTable(TableEntry("live", path), Limits(refresh_seconds=0.0))
    looks, original = [], served.lister

    def lister_then_a_commit() -> Any:
        found = original()
        looks.append(found)
        if len(looks) == 2:
            builder.write(trip_rows(900, 12), operation="insert")
        return found

    served.lister = lister_then_a_commit  # type: ignore[method-assign]
    summary, slices = plan_answer(served, PlanRequest.parse({"filter": "TRUE"}, Limits()))
    builder.write(trip_rows(950, 12), operation="insert")  # a commit after the answer, whichever way it went
    expected = plan(path, "TRUE", as_of=summary["instant"]).files
    assert [s.to_wire() if isinstance(s, FileSlice) else s for s in slices] == [s.to_wire() for s in expected]


def test_a_bug_in_a_plan_is_an_internal_error_and_a_refusal_the_librarys(caplog: pytest.LogCaptureFixture) -> None:
    """A plan failing on an error of ours answers 500 `internal` (logged with its traceback); one the library refuses
    answers 422 `refused` with its line (a KeyError of block offsets once answered as a refusal)."""
    import asyncio

    from engine_bridge.service.errors import ServiceError
    from engine_bridge.service.plans import PlanStore
    from metadata.errors import HudiError

    def failing(exc: BaseException) -> Any:
        def work(_: Any) -> Any:
            raise exc
        return work

    async def run(exc: BaseException) -> ServiceError:
        store = PlanStore(Limits())
        try:
            await store.run("t", failing(exc))
        except ServiceError as error:
            return error
        finally:
            store.close()
        raise AssertionError("the plan did not fail")

    with caplog.at_level("ERROR"):
        internal = asyncio.run(run(KeyError((7673, 7815))))
    assert (internal.status, internal.code, internal.message) == (500, "internal", "unexpected KeyError: (7673, 7815)")
    assert "Traceback" in caplog.text and "KeyError" in caplog.text
    refused = asyncio.run(run(HudiError("a.hfile: block fails its checksum")))
    assert (refused.status, refused.code, refused.message) == (422, "refused", "a.hfile: block fails its checksum")
