"""A plan request as the service takes it, and the work that answers it:
the same library calls the CLI and `listers.scan` make, so an answer over
HTTP is the local planner's answer.

    {"filter": "city = 'sf'" | {Iceberg JSON expression} | true, "dialect": "spark",
     "columns": ["id", "fare"], "as_of": "20240101000000000",
     "incremental": {"begin": "...", "end": "..."}, "mode": "sync" | "async", "page_size": 1000}
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from engine_bridge.service.config import Limits
from engine_bridge.service.errors import ServiceError
from engine_bridge.service.plans import Answer
from engine_bridge.service.registry import ServedTable
from expressions import Dialect, Expr, parse_iceberg_json, parse_sql, to_sql
from listers import DirectoryLister, incremental, plan
from listers.planner import SlicesSink
from metadata.errors import HudiBridgeError
from metadata.storage.secrets import redact
from metadata.table.slice_rows import table_read_schema

KNOWN = ("filter", "dialect", "columns", "as_of", "incremental", "mode", "page_size")


@dataclass(frozen=True)
class PlanRequest:
    expr: Expr
    text: str  # the filter as SQL, for the answer
    from_sql: bool  # given as SQL text (else as Iceberg's JSON form)
    dialect: Dialect
    columns: tuple[str, ...] | None
    as_of: str | None
    begin: str | None
    end: str | None
    asynchronous: bool
    page_size: int

    @classmethod
    def parse(cls, body: Any, limits: Limits) -> PlanRequest:
        if not isinstance(body, dict):
            raise ServiceError.bad_request("a plan request is a JSON object")
        unknown = sorted(set(body) - set(KNOWN))
        if unknown:
            raise ServiceError.bad_request(f"unknown field(s) {', '.join(unknown)}; known: {', '.join(KNOWN)}")
        try:
            dialect = Dialect.of(_string(body, "dialect") or "spark")
        except ValueError as exc:
            raise ServiceError.bad_request(str(exc)) from None
        expr, text = _filter(body.get("filter", True), dialect, limits)
        columns = body.get("columns")
        if columns is not None and (not isinstance(columns, list) or not all(isinstance(c, str) for c in columns)):
            raise ServiceError.bad_request("columns is a list of column names")
        window = body.get("incremental")
        if window is not None and (not isinstance(window, dict) or not isinstance(window.get("begin"), str)
                                   or set(window) - {"begin", "end"}):
            raise ServiceError.bad_request('incremental is {"begin": instant, "end": instant (optional)}')
        as_of = _string(body, "as_of")
        if window is not None and as_of is not None:
            raise ServiceError.bad_request("as_of and incremental do not go together (an incremental range ends at its end)")
        mode = _string(body, "mode") or "sync"
        if mode not in ("sync", "async"):
            raise ServiceError.bad_request(f"mode is sync or async, not {mode!r}")
        size = body.get("page_size", limits.page_size)
        if not isinstance(size, int) or isinstance(size, bool) or not 1 <= size <= limits.max_page_size:
            raise ServiceError.bad_request(f"page_size is a whole number from 1 to {limits.max_page_size}")
        return cls(expr, text, isinstance(body.get("filter", True), str), dialect, None if columns is None else tuple(columns), as_of,
                   None if window is None else window["begin"], None if window is None else _string(window, "end"), mode == "async", size)


def _string(body: dict[str, Any], name: str) -> str | None:
    value = body.get(name)
    if value is not None and not isinstance(value, str):
        raise ServiceError.bad_request(f"{name} is a string")
    return value


def _filter(value: Any, dialect: Dialect, limits: Limits) -> tuple[Expr, str]:
    """SQL text in `dialect`, or Iceberg's JSON expression form; either way at most `max_filter_chars`."""
    size = len(value) if isinstance(value, str) else len(json.dumps(value))
    if size > limits.max_filter_chars:
        raise ServiceError("filter_too_large", 413, f"the filter has {size:,} characters; at most {limits.max_filter_chars:,} are taken")
    try:
        if isinstance(value, str):
            return parse_sql(value, dialect), value
        expr = parse_iceberg_json(value)
        return expr, to_sql(expr, dialect)
    except HudiBridgeError as exc:
        raise ServiceError("bad_filter", 400, str(exc)) from None


def plan_answer(served: ServedTable, request: PlanRequest, sink: SlicesSink | None = None) -> Answer:
    """The plan (without its file slices) and its file slices, as the local planner makes them (or made them for the
    same request while the table has not changed); a snapshot plan hands `sink` its slices as they are found."""
    key = (request.text if request.from_sql else repr(request.expr), request.from_sql, request.dialect, request.columns, request.as_of,
           request.begin, request.end)
    return served.answer(key, lambda lister: _redacted(*_plan_answer(served, lister, request, sink)))


def _redacted(summary: dict[str, Any], slices: Sequence[Any]) -> Answer:
    """The plan's words (predicate, residual, notes, warnings) through the one redaction rule: a secret in force is
    never echoed, not even one a filter named. File slices are names the table holds."""
    return json.loads(redact(json.dumps(summary))), slices


def _plan_answer(served: ServedTable, current: DirectoryLister, request: PlanRequest, sink: SlicesSink | None) -> Answer:
    """The answer on `current`, the lister of one state of the table: a lister read twice might see two states."""
    try:
        table = current.table
        columns = list(request.columns) if request.columns is not None else None
        if columns is not None:
            known = set(table_read_schema(table).names)
            missing = [c for c in columns if c not in known]
            if missing:
                raise ServiceError("bad_columns", 400, f"unknown column(s) {', '.join(missing)} in table {served.name!r}")
        latest = table.timeline.latest_completed()
        head: dict[str, Any] = {"base_uri": redact(table.base_uri), "columns": columns,
                                "instant": request.as_of or (latest.requested_time if latest else None)}
        if request.begin is not None:
            pulled = incremental(table, request.begin, request.end)
            residual = pulled.row_filter if request.text.strip().upper() == "TRUE" else f"({pulled.row_filter}) AND ({request.text})"
            summary = {**head, "kind": "incremental", "predicate": request.text, "residual": residual, "stages": [], "not_used": [],
                       "warnings": [], "begin": pulled.begin, "end": pulled.end, "instants": [i.requested_time for i in pulled.instants],
                       "full_scan": pulled.full_scan, "fallback_reason": pulled.fallback_reason}
            return summary, pulled.files
        with served.lister_as_of(request.as_of, current) as lister:
            planned = plan(lister, request.text if request.from_sql else request.expr, dialect=request.dialect, on_slices=sink)
        summary = {**head, "kind": "snapshot", **{k: v for k, v in planned.to_dict().items() if k != "files"}, "predicate": request.text}
        return summary, planned.files
    except ServiceError:
        raise
    except HudiBridgeError as exc:
        raise ServiceError.refused(exc) from None
