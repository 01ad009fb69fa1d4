"""The OpenAPI 3.1 document of the service (served at /openapi.json)."""

from __future__ import annotations

from typing import Any

ERROR = {"$ref": "#/components/schemas/Error"}


def _op(summary: str, ok: dict[str, Any] | None = None, body: dict[str, Any] | None = None,
        parameters: list[dict[str, Any]] | None = None, status: str = "200") -> dict[str, Any]:
    responses: dict[str, Any] = {status: {"description": "answered", "content": {"application/json": {"schema": ok or {"type": "object"}}}}}
    for code, what in (("400", "bad request"), ("401", "no or wrong bearer token"), ("404", "no such table or plan"),
                       ("413", "body or filter too large"), ("422", "the table or request is refused, naming what and where"),
                       ("429", "too many plans; see Retry-After"), ("504", "past the plan deadline")):
        responses[code] = {"description": what, "content": {"application/json": {"schema": ERROR}}}
    operation: dict[str, Any] = {"summary": summary, "responses": responses}
    if body is not None:
        operation["requestBody"] = {"required": True, "content": {"application/json": {"schema": body}}}
    if parameters:
        operation["parameters"] = parameters
    return operation


def _path(name: str) -> dict[str, Any]:
    return {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}


def _query(name: str, description: str, kind: str = "string") -> dict[str, Any]:
    return {"name": name, "in": "query", "required": False, "description": description, "schema": {"type": kind}}


PLAN_REQUEST = {
    "type": "object", "additionalProperties": False,
    "properties": {
        "filter": {"description": "SQL text (a WHERE clause) in `dialect`, or Iceberg's JSON expression form", "default": True},
        "dialect": {"type": "string", "enum": ["spark", "hive", "trino", "presto"], "default": "spark"},
        "columns": {"type": "array", "items": {"type": "string"}},
        "as_of": {"type": "string", "description": "an instant time: plan the table as it was then"},
        "incremental": {"type": "object", "properties": {"begin": {"type": "string"}, "end": {"type": "string"}}, "required": ["begin"]},
        "mode": {"type": "string", "enum": ["sync", "async"], "default": "sync"},
        "page_size": {"type": "integer", "minimum": 1},
    },
}
FILE_SLICE = {"type": "object", "properties": {
    "partition": {"type": "string"}, "file_id": {"type": "string"}, "base_instant": {"type": "string"},
    "base_file": {"type": ["string", "null"]}, "log_files": {"type": "array", "items": {"type": "string"}},
    "size": {"type": "integer"}, "base_file_size": {"type": ["integer", "null"]}, "log_file_sizes": {"type": "array", "items": {"type": "integer"}}}}
PLAN = {"type": "object", "properties": {
    "plan_id": {"type": "string"}, "status": {"type": "string", "enum": ["submitted", "planning", "completed", "failed", "cancelled"]},
    "table": {"type": "string"}, "instant": {"type": ["string", "null"]}, "base_uri": {"type": "string"},
    "predicate": {"type": "string"}, "residual": {"type": "string"},
    "stages": {"type": "array", "items": {"type": "object"}}, "not_used": {"type": "array", "items": {"type": "string"}},
    "file_slices_total": {"type": "integer"}, "file_slices_found": {"type": "integer"}, "file_slices": {"type": "array", "items": {"$ref": "#/components/schemas/FileSlice"}},
    "next_page_token": {"type": ["string", "null"]}}}


def openapi_document(version: str) -> dict[str, Any]:
    name, plan_id = _path("name"), _path("plan_id")
    paging = [_query("page_token", "where the page starts (from next_page_token)"), _query("page_size", "items per page", "integer")]
    return {
        "openapi": "3.1.0",
        "info": {"title": "hudi-bridge scan planning", "version": version,
                 "description": "Apache Hudi scan planning over HTTP: one warm planner for every client, tables by registered name."},
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            "schemas": {"Error": {"type": "object", "properties": {"error": {"type": "object", "properties": {
                "code": {"type": "string"}, "message": {"type": "string"}}}}},
                "PlanRequest": PLAN_REQUEST, "FileSlice": FILE_SLICE, "Plan": PLAN},
        },
        "security": [{"bearer": []}],
        "paths": {
            "/v1/tables": {"get": _op("The tables served, by name")},
            "/v1/tables/{name}": {"get": _op("A table: schema, partition fields, indexes kept, latest instant", parameters=[name])},
            "/v1/tables/{name}/plan": {"post": _op("Plan a scan: the candidate file slices, the explain stages and the residual predicate",
                                                   {"$ref": "#/components/schemas/Plan"}, {"$ref": "#/components/schemas/PlanRequest"}, [name])},
            "/v1/plans/{plan_id}": {"get": _op("A plan's status: once completed the plan with its first page; while planning its first page", PLAN, parameters=[plan_id]),
                                    "delete": _op("Cancel a plan", parameters=[plan_id])},
            "/v1/plans/{plan_id}/tasks": {"get": _op("A page of a plan's file slices (plan tasks); while planning, served as they are found", parameters=[plan_id, *paging])},
            "/v1/tables/{name}/changes": {"get": _op("The change feed of (begin, end], paged", parameters=[
                name, _query("begin", "exclusive start instant"), _query("end", "inclusive end instant"), *paging])},
            "/v1/tables/{name}/health": {"get": _op("Timeline, partitions, file sizes and metadata-table health", parameters=[name])},
            "/v1/tables/{name}/hive-sync": {"get": _op("What the Hive metastore holds against the table: the drift a sync would mend",
                                                       parameters=[name])},
            "/v1/tables/{name}/validate": {"post": _op("Run `table validate` now; the page shows the last answer", parameters=[name])},
            "/health": {"get": {"summary": "Liveness (no token needed)", "security": [], "responses": {"200": {"description": "up"}}}},
            "/metrics": {"get": {"summary": "Prometheus metrics", "responses": {"200": {"description": "text exposition format"}}}},
        },
    }
