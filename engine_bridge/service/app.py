"""The service's HTTP application (Starlette, run by uvicorn): routes, the
bearer-token check, request limits, one-line JSON errors, a structured log
line per request and the metrics."""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from engine_bridge.service.config import ServiceConfig
from engine_bridge.service.errors import ServiceError
from engine_bridge.service.health import HealthKeeper
from engine_bridge.service.metrics import Metrics
from engine_bridge.service.openapi import openapi_document
from engine_bridge.service.page import content_security_policy, index_page, new_nonce, table_page
from engine_bridge.service.planning import PlanRequest, plan_answer
from engine_bridge.service.plans import PlanStore
from engine_bridge.service.registry import TableRegistry
from listers import changes
from listers.planner import SlicesSink
from metadata.errors import HudiBridgeError
from metadata.formats.avro_schema import avro_to_arrow_schema
from metadata.storage.secrets import redact
from metadata.table.table_summary import table_summary

log = logging.getLogger("hudi_bridge.service")
OPEN_ROUTES = ("/health",)  # answered without a token: liveness says nothing about the tables


def _version() -> str:
    try:
        return version("hudi-bridge")
    except PackageNotFoundError:
        return "0"


class JSON(JSONResponse):
    def render(self, content: Any) -> bytes:
        return json.dumps(content, separators=(",", ":"), default=str).encode()


def _error(exc: ServiceError) -> Response:
    return JSON(exc.body(), status_code=exc.status, headers=exc.headers())


class Service:
    """What every request shares: the tables, the plans, the health pages and the metrics."""

    def __init__(self, config: ServiceConfig, token: str | None = None) -> None:
        self.config = config
        self.limits = config.limits
        self.token = token
        self.tables = TableRegistry(config)
        self.plans = PlanStore(config.limits)
        self.health = HealthKeeper()
        self.metrics = Metrics()

    # Plumbing ------------------------------------------------------------------
    async def body(self, request: Request) -> Any:
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.limits.max_body_bytes:
            raise ServiceError("body_too_large", 413, f"the body has {int(declared):,} bytes; at most {self.limits.max_body_bytes:,} are taken")
        chunks, size = [], 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > self.limits.max_body_bytes:
                raise ServiceError("body_too_large", 413, f"the body passed {self.limits.max_body_bytes:,} bytes; at most that many are taken")
            chunks.append(chunk)
        try:
            return json.loads(b"".join(chunks) or b"{}")
        except (ValueError, RecursionError) as exc:
            raise ServiceError.bad_request(f"the body is not JSON ({str(exc)[:120]})") from None

    def check_token(self, request: Request) -> None:
        if self.token is None or request.url.path in OPEN_ROUTES:
            return
        given = request.headers.get("authorization", "")
        scheme, _, credential = given.partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(credential.strip().encode(), self.token.encode()):
            raise ServiceError("unauthorized", 401, "this service needs a bearer token (Authorization: Bearer ...)")

    async def handle(self, request: Request, route: str, call: Callable[[Request], Awaitable[Response]]) -> Response:
        started = time.perf_counter()
        try:
            self.check_token(request)
            response = await call(request)
        except Exception as exc:  # noqa: BLE001 - one line, never a traceback, to the client
            response = _error(ServiceError.of(exc, route))
        if response.status_code == 401:
            response.headers["WWW-Authenticate"] = "Bearer"
        took = time.perf_counter() - started
        self.metrics.request(request.method, route, response.status_code)
        log.info(redact(json.dumps({"method": request.method, "route": route, "status": response.status_code, "ms": round(took * 1000, 2)})))
        return response

    # API -------------------------------------------------------------------------
    async def list_tables(self, request: Request) -> Response:
        return JSON({"tables": [{"name": name} for name in self.tables.names()]})

    async def show_table(self, request: Request) -> Response:
        served = self.tables.get(request.path_params["name"])
        table = await asyncio.to_thread(served.table)
        problem: str | None = None
        try:
            schema = [{"name": f.name, "type": str(f.type), "nullable": f.nullable} for f in avro_to_arrow_schema(table.avro_schema())]
        except HudiBridgeError as exc:
            schema, problem = [], redact(str(exc))
        summary = {**table_summary(table), "base_uri": redact(table.base_uri)}
        return JSON({"name": served.name, **{k: v for k, v in summary.items() if k != "name"}, "hudi_table_name": table.name,
                     "schema": schema, "schema_problem": problem, "indexes": summary["metadata_partitions"]})

    async def plan(self, request: Request) -> Response:
        served = self.tables.get(request.path_params["name"])
        wanted = PlanRequest.parse(await self.body(request), self.limits)
        started = time.perf_counter()
        if wanted.asynchronous:
            record = self.plans.submit(served.name, lambda sink: plan_answer(served, wanted, sink), wanted.page_size)
            return JSON(record.answer(wanted.page_size), status_code=202)
        record = await self.plans.run(served.name, lambda sink: plan_answer(served, wanted, sink), wanted.page_size)
        self.metrics.plan_took(time.perf_counter() - started)
        return JSON(record.answer(wanted.page_size))

    async def get_plan(self, request: Request) -> Response:
        record = self.plans.get(request.path_params["plan_id"])
        return JSON(record.answer(self._page_size(request)))

    async def plan_tasks(self, request: Request) -> Response:
        record = self.plans.get(request.path_params["plan_id"])
        return JSON(await self.plans.page_when_found(record, self._page_token(request), self._page_size(request)))

    async def cancel_plan(self, request: Request) -> Response:
        return JSON(self.plans.cancel(request.path_params["plan_id"]).answer(1))

    async def changes(self, request: Request) -> Response:
        served = self.tables.get(request.path_params["name"])
        begin = request.query_params.get("begin")
        if not begin:
            raise ServiceError.bad_request("changes need begin (the instant after which changes are read)")
        end, offset, size = request.query_params.get("end"), self._page_token(request), self._page_size(request)

        def work(_: SlicesSink) -> tuple[dict[str, Any], list[dict[str, Any]]]:
            # The feed is read once per state of the table and kept like a plan's answer, so its pages do not read it again.
            feed: Any = served.answer(("changes", begin, end), lambda lister: ({}, changes(lister.table, begin, end)))[1]
            rows = feed.slice(offset, size).to_pylist()
            following = offset + size
            return {"begin": begin, "end": end, "changes_total": feed.num_rows,
                    "next_page_token": str(following) if following < feed.num_rows else None}, rows

        record = await self.plans.run(served.name, work)
        return JSON({**record.summary, "changes": record.slices})

    async def table_health(self, request: Request) -> Response:
        served = self.tables.get(request.path_params["name"])
        return JSON(await asyncio.to_thread(self.health.health, served))

    async def hive_sync(self, request: Request) -> Response:
        from engine_bridge.service.metastore import sync_status

        served = self.tables.get(request.path_params["name"])
        target = served.entry.hive
        if target is None:
            raise ServiceError("no_hive_target", 404, f"table {served.name!r} names no metastore to compare with "
                               "(give it hive = {metastore = ..., database = ...} in the configuration)")
        return JSON(await asyncio.to_thread(lambda: sync_status(served.table(), target)))

    async def validate(self, request: Request) -> Response:
        served = self.tables.get(request.path_params["name"])
        return JSON(await asyncio.to_thread(self.health.validate, served))

    def _page_size(self, request: Request) -> int:
        text = request.query_params.get("page_size", str(self.limits.page_size))
        if not text.isdigit() or not 1 <= int(text) <= self.limits.max_page_size:
            raise ServiceError.bad_request(f"page_size is a whole number from 1 to {self.limits.max_page_size}")
        return int(text)

    def _page_token(self, request: Request) -> int:
        text = request.query_params.get("page_token", "0")
        if not text.isdigit():
            raise ServiceError.bad_request("page_token is a token from next_page_token")
        return int(text)

    # Operations and pages ----------------------------------------------------------
    async def liveness(self, request: Request) -> Response:
        return JSON({"status": "ok", "tables": len(self.tables.names()), "plans_active": self.plans.active})

    async def prometheus(self, request: Request) -> Response:
        opens = [(name, self.tables.get(name).opened) for name in self.tables.names()]
        text = self.metrics.render(self.plans.active, {s.value: n for s, n in self.plans.finished.items()}, opens)
        return PlainTextResponse(text, media_type="text/plain; version=0.0.4")

    async def openapi(self, request: Request) -> Response:
        return JSON(openapi_document(_version()))

    async def index(self, request: Request) -> Response:
        rows = []
        for name in self.tables.names():
            try:
                rows.append({**table_summary(await asyncio.to_thread(self.tables.get(name).table)), "name": name})
            except ServiceError as exc:
                rows.append({"name": name, "error": exc.message})
        nonce = new_nonce()
        return HTMLResponse(index_page(rows, nonce), headers={"Content-Security-Policy": content_security_policy(nonce)})

    async def table_page(self, request: Request) -> Response:
        served = self.tables.get(request.path_params["name"])
        health = await asyncio.to_thread(self.health.health, served)
        nonce = new_nonce()
        where = request.query_params.get("where", "")[: self.limits.max_filter_chars]
        return HTMLResponse(table_page(served.name, health, nonce, where), headers={"Content-Security-Policy": content_security_policy(nonce)})


def create_app(config: ServiceConfig, token: str | None = None) -> Starlette:
    """The ASGI application serving `config`'s tables (`token`: every request but /health needs it as a bearer token)."""
    service = Service(config, token)

    def route(path: str, call: Callable[[Request], Awaitable[Response]], methods: list[str]) -> Route:
        async def endpoint(request: Request) -> Response:
            return await service.handle(request, path, call)
        return Route(path, endpoint, methods=methods)

    routes = [
        route("/", service.index, ["GET"]),
        route("/tables/{name}", service.table_page, ["GET"]),
        route("/health", service.liveness, ["GET"]),
        route("/metrics", service.prometheus, ["GET"]),
        route("/openapi.json", service.openapi, ["GET"]),
        route("/v1/tables", service.list_tables, ["GET"]),
        route("/v1/tables/{name}", service.show_table, ["GET"]),
        route("/v1/tables/{name}/plan", service.plan, ["POST"]),
        route("/v1/tables/{name}/changes", service.changes, ["GET"]),
        route("/v1/tables/{name}/health", service.table_health, ["GET"]),
        route("/v1/tables/{name}/validate", service.validate, ["POST"]),
        route("/v1/tables/{name}/hive-sync", service.hive_sync, ["GET"]),
        route("/v1/plans/{plan_id}", service.get_plan, ["GET"]),
        route("/v1/plans/{plan_id}/tasks", service.plan_tasks, ["GET"]),
        route("/v1/plans/{plan_id}", service.cancel_plan, ["DELETE"]),
    ]
    @asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        yield
        service.plans.close()

    async def no_route(request: Request, exc: Exception) -> Response:
        status = getattr(exc, "status_code", 404)
        code = "method_not_allowed" if status == 405 else "not_found"
        service.metrics.request(request.method, "(none)", status)
        return _error(ServiceError(code, status, f"{request.method} {request.url.path}: no such route (GET /openapi.json lists them)"))

    app = Starlette(routes=routes, lifespan=lifespan, exception_handlers={404: no_route, 405: no_route})
    app.state.service = service
    return app
