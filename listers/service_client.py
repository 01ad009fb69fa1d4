"""Asking a `hudi-bridge serve` for a plan instead of planning here: the
plan comes back as the local planner gives it (`Plan`, its file slices
whole), read page by page. Only the standard library speaks HTTP here.

The token is `token=` or the environment's HUDI_BRIDGE_SERVICE_TOKEN; it is
sent as a bearer token and never printed."""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from listers.planner import Plan, Stage
from metadata import FileSlice
from metadata.errors import HudiBridgeError
from metadata.storage.secrets import redact

TOKEN_VARIABLE = "HUDI_BRIDGE_SERVICE_TOKEN"
MAX_ANSWER_BYTES = 256 << 20  # one answer (a page); a service cannot make a client read without end


class ServiceRequestError(HudiBridgeError):
    """The service refused or could not be reached; `code` is its stable error code."""

    def __init__(self, code: str, message: str) -> None:
        self.code = code
        super().__init__(redact(f"{code}: {message}"))


@dataclass(frozen=True)
class ServicePlan:
    """A plan the service made: the plan as `listers.plan` returns it, the table's base URI, and the instant planned at."""

    plan: Plan
    base_uri: str
    instant: str | None
    answer: dict[str, Any]


class ServiceClient:
    def __init__(self, url: str, token: str | None = None, timeout: float = 120.0) -> None:
        self.url = url.rstrip("/")
        self.token = token if token is not None else os.environ.get(TOKEN_VARIABLE)
        self.timeout = timeout

    def _call(self, method: str, path: str, body: Any = None) -> Any:
        request = urllib.request.Request(self.url + path, method=method, data=None if body is None else json.dumps(body).encode(),
                                         headers={"Content-Type": "application/json", "Accept": "application/json"})
        if self.token:
            request.add_header("Authorization", f"Bearer {self.token}")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as answer:  # noqa: S310 - the user's service URL
                return json.loads(answer.read(MAX_ANSWER_BYTES + 1)[:MAX_ANSWER_BYTES])
        except urllib.error.HTTPError as exc:
            try:
                error = json.loads(exc.read(1 << 16))["error"]
                raise ServiceRequestError(str(error["code"]), str(error["message"])) from None
            except (ValueError, KeyError, TypeError):
                raise ServiceRequestError(f"http_{exc.code}", f"{self.url}{path}: {exc.reason}") from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise ServiceRequestError("unreachable", f"{self.url}: {reason}") from None

    def tables(self) -> list[str]:
        return [t["name"] for t in self._call("GET", "/v1/tables")["tables"]]

    def table(self, name: str) -> dict[str, Any]:
        return dict(self._call("GET", f"/v1/tables/{urllib.parse.quote(name, safe='')}"))

    def plan(self, name: str, where: str | dict[str, Any] | bool = True, dialect: str = "spark", as_of: str | None = None,
             begin: str | None = None, end: str | None = None, columns: Sequence[str] | None = None, page_size: int = 1000) -> ServicePlan:
        """Plan on the service, then read every page of its file slices."""
        body: dict[str, Any] = {"filter": where, "dialect": dialect, "page_size": page_size}
        if as_of is not None:
            body["as_of"] = as_of
        if begin is not None:
            body["incremental"] = {"begin": begin, **({"end": end} if end is not None else {})}
        if columns is not None:
            body["columns"] = list(columns)
        answer = self._call("POST", f"/v1/tables/{urllib.parse.quote(name, safe='')}/plan", body)
        slices = list(answer["file_slices"])
        token = answer.get("next_page_token")
        while token is not None:
            page = self._call("GET", f"/v1/plans/{answer['plan_id']}/tasks?page_token={token}&page_size={page_size}")
            slices += page["file_slices"]
            token = page.get("next_page_token")
        if answer["status"] != "completed":  # answered while still planning: its summary comes with the completed plan
            answer = self._call("GET", f"/v1/plans/{answer['plan_id']}?page_size=1")
            if answer["status"] != "completed":
                raise ServiceRequestError(answer.get("error", {}).get("code", answer["status"]),
                                          answer.get("error", {}).get("message", f"plan {answer['plan_id']} is {answer['status']}"))
        return ServicePlan(plan_of(answer, slices), answer["base_uri"], answer.get("instant"), answer)


def plan_of(answer: dict[str, Any], slices: list[dict[str, Any]]) -> Plan:
    """The `Plan` a service answer stands for."""
    stages = tuple(Stage(s["stage"], s["kept"], s["of"], s["seconds"], s.get("note", ""), s["unit"],
                         None if s.get("of_unit") == s["unit"] else s.get("of_unit"), s.get("requests", 0))
                   for s in answer.get("stages", ()))
    return Plan(answer.get("predicate", ""), tuple(FileSlice.from_wire(s) for s in slices), stages, tuple(answer.get("not_used", ())),
                answer.get("residual", ""), answer.get("listing", ""), tuple(answer.get("warnings", ())), dict(answer.get("requests", {})))
