"""Plans the service made: run with a bound on how many at once, a deadline
for those asked synchronously, submitted ones polled by id and cancellable,
and every finished plan's file slices paged as plan tasks.

Planning is a blocking library call, so it runs on a pool of
`max_concurrent_plans` threads, with at most `max_queued_plans` queued or
running. A request beyond that is answered 429 with Retry-After at once,
rather than queued without end. A synchronous plan
past its deadline answers 504; its thread finishes on its own and its
result is dropped."""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from engine_bridge.service.config import Limits
from engine_bridge.service.errors import ServiceError
from metadata import FileSlice
from metadata.text_enum import TextEnum

# A plan's summary (everything but its file slices) and its file slices: FileSlices held as the planner made them
# (a 1M-file plan's wire dicts would take a gigabyte; a page is made when asked), or plain rows.
Answer = tuple[dict[str, Any], Sequence[Any]]


class PlanStatus(TextEnum):
    SUBMITTED = "submitted"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"


@dataclass
class PlanRecord:
    plan_id: str
    table: str
    status: PlanStatus = PlanStatus.SUBMITTED
    created: float = field(default_factory=time.monotonic)
    summary: dict[str, Any] = field(default_factory=dict)  # the plan without its file slices
    slices: Sequence[Any] = ()  # FileSlices as the planner made them (sent a page at a time), or rows as sent
    error: ServiceError | None = None
    future: Future[Answer] | None = None

    def page(self, offset: int, size: int) -> dict[str, Any]:
        """One page of plan tasks (file slices) from `offset`."""
        if offset < 0 or offset > len(self.slices):
            raise ServiceError.bad_request(f"page_token {offset} is outside plan {self.plan_id}'s {len(self.slices)} file slices")
        end = offset + size
        page = [item.to_wire() if isinstance(item, FileSlice) else item for item in self.slices[offset:end]]
        return {"plan_id": self.plan_id, "file_slices": page,
                "next_page_token": str(end) if end < len(self.slices) else None}

    def answer(self, size: int) -> dict[str, Any]:
        """What a request for the plan gets: its status, and once completed the plan with its first page."""
        head: dict[str, Any] = {"plan_id": self.plan_id, "table": self.table, "status": self.status.value}
        if self.status is PlanStatus.COMPLETED:
            return {**head, **self.summary, "file_slices_total": len(self.slices), **self.page(0, size)}
        if self.status is PlanStatus.FAILED and self.error is not None:
            return {**head, **self.error.body()}
        return head


Work = Callable[[], Answer]


class PlanStore:
    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self._pool = ThreadPoolExecutor(max_workers=limits.max_concurrent_plans, thread_name_prefix="hudi-bridge-plan")
        self._lock = threading.Lock()
        self._records: OrderedDict[str, PlanRecord] = OrderedDict()
        self._active = 0  # plans queued or running
        self.finished = dict.fromkeys(PlanStatus, 0)

    @property
    def active(self) -> int:
        return self._active

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)

    def _admit(self, bound: int, what: str) -> None:
        with self._lock:
            if self._active >= bound:
                raise ServiceError("too_many_plans", 429, f"{self._active} plans are running or queued (at most {bound} {what}); ask again",
                                   retry_after=1)
            self._active += 1

    def _start(self, table: str, work: Work) -> PlanRecord:
        record = PlanRecord(uuid.uuid4().hex, table)

        def run() -> Answer:
            try:
                return work()
            finally:
                with self._lock:
                    self._active -= 1

        record.future = self._pool.submit(run)
        record.future.add_done_callback(lambda done: self._finish(record, done))
        with self._lock:
            self._records[record.plan_id] = record
            self._evict()
        return record

    def _finish(self, record: PlanRecord, done: Future[Answer]) -> None:
        """The future's done callback: it runs before any waiter on the future resumes."""
        if record.status is PlanStatus.CANCELLED or done.cancelled():
            if done.cancelled():  # never started: its slot is given back here
                with self._lock:
                    self._active -= 1
            record.status = PlanStatus.CANCELLED
        elif (exc := done.exception()) is not None:
            record.error = exc if isinstance(exc, ServiceError) else ServiceError.refused(exc)
            record.status = PlanStatus.FAILED
        else:
            record.summary, record.slices = done.result()
            record.status = PlanStatus.COMPLETED
        with self._lock:
            self.finished[record.status] += 1

    def _evict(self) -> None:
        """Finished plans beyond `plans_kept`, or older than the TTL, are dropped (oldest first)."""
        now = time.monotonic()
        for plan_id, record in list(self._records.items()):
            too_many = len(self._records) > self.limits.plans_kept
            if record.status is not PlanStatus.SUBMITTED and (too_many or now - record.created > self.limits.plan_ttl_seconds):
                del self._records[plan_id]

    async def run(self, table: str, work: Work) -> PlanRecord:
        """Plan now, answering within the deadline (429 when too many are queued or running, 504 past the deadline)."""
        self._admit(self.limits.max_queued_plans, "queued or running")
        record = self._start(table, work)
        assert record.future is not None
        try:
            await asyncio.wait_for(asyncio.shield(asyncio.wrap_future(record.future)), self.limits.plan_deadline_seconds)
        except asyncio.TimeoutError:
            record.status = PlanStatus.CANCELLED
            record.future.cancel()  # still queued: it never runs (running: its result is dropped)
            raise ServiceError("deadline_exceeded", 504, f"the plan took longer than {self.limits.plan_deadline_seconds:g} s; "
                               "submit it with \"mode\": \"async\" and poll it") from None
        except Exception:  # noqa: BLE001 - the done callback (which ran first) keeps it on the record, raised below
            pass
        if record.error is not None:
            raise record.error
        return record

    def submit(self, table: str, work: Work) -> PlanRecord:
        """Plan in the background; the record is polled by id."""
        self._admit(self.limits.max_queued_plans, "queued")
        return self._start(table, work)

    def get(self, plan_id: str) -> PlanRecord:
        with self._lock:
            record = self._records.get(plan_id)
        if record is None:
            raise ServiceError("plan_not_found", 404, f"no plan {plan_id!r} (finished plans are kept {self.limits.plan_ttl_seconds:g} s, "
                               f"the last {self.limits.plans_kept} of them)")
        return record

    def cancel(self, plan_id: str) -> PlanRecord:
        record = self.get(plan_id)
        if record.status is PlanStatus.SUBMITTED:
            record.status = PlanStatus.CANCELLED
            if record.future is not None:
                record.future.cancel()  # not started yet: it never runs; running: its result is dropped
        return record
