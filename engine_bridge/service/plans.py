"""Plans the service made: run with a bound on how many at once, a deadline
for those asked synchronously, submitted ones polled by id and cancellable,
and every finished plan's file slices paged as plan tasks.

Planning is a blocking library call, so it runs on a pool of
`max_concurrent_plans` threads, with at most `max_queued_plans` queued or
running. A request beyond that is answered 429 with Retry-After at once,
rather than queued without end. A synchronous plan
past its deadline answers 504; its thread finishes on its own and its
result is dropped.

A plan's slices come to its record as the planner finds them (a batch of
partitions at a time, in the plan's order), so a synchronous request is
answered as soon as its first page is found: a 1M-file plan's first page
does not wait for the millionth slice. Such an answer says "planning"; its
pages are served as they are found, and its summary (stages, totals) comes
with the plan once it completes."""

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
from listers.planner import SlicesSink
from metadata import FileSlice
from metadata.util.text_enum import TextEnum

# A plan's summary (everything but its file slices) and its file slices: FileSlices held as the planner made them
# (a 1M-file plan's wire dicts would take a gigabyte; a page is made when asked), or plain rows.
Answer = tuple[dict[str, Any], Sequence[Any]]
PAGE_POLL_SECONDS = 0.02  # how often a request for a page not found yet looks again


class PlanStatus(TextEnum):
    SUBMITTED = "submitted"
    PLANNING = "planning"  # its first page is found and served; the rest is being planned
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"


class PlanCancelled(Exception):
    """Raised into the planner by a cancelled plan's sink: planning stops at its next batch."""


@dataclass
class PlanRecord:
    plan_id: str
    table: str
    first_page: int = 1  # slices in its first page: once they are found, a synchronous request is answered
    status: PlanStatus = PlanStatus.SUBMITTED
    created: float = field(default_factory=time.monotonic)
    summary: dict[str, Any] = field(default_factory=dict)  # the plan without its file slices
    slices: Sequence[Any] = ()  # FileSlices as the planner made them (sent a page at a time), or rows as sent
    found: list[Any] = field(default_factory=list)  # the slices found while it plans, in the plan's order
    error: ServiceError | None = None
    future: Future[Answer] | None = None
    on_first_page: Callable[[], None] | None = None  # called (on the planning thread) once the first page is found

    @property
    def running(self) -> bool:
        return self.status in (PlanStatus.SUBMITTED, PlanStatus.PLANNING)

    def add(self, slices: Sequence[Any], more: bool) -> None:
        """The planner's sink, on the planning thread: slices found, in the plan's order. A plan found in one batch
        (a small one) completes at once: it is answered completed, never planning."""
        if self.status is PlanStatus.CANCELLED:
            raise PlanCancelled(self.plan_id)
        self.found.extend(slices)
        if more and self.status is PlanStatus.SUBMITTED and len(self.found) >= self.first_page:
            self.status = PlanStatus.PLANNING
            if self.on_first_page is not None:
                self.on_first_page()

    def available(self, offset: int, size: int) -> bool:
        """Whether a page from `offset` can be served now (the plan is done, or the page is found)."""
        return not self.running or len(self.found) >= offset + size

    def page(self, offset: int, size: int) -> dict[str, Any]:
        """One page of plan tasks (file slices) from `offset`: while planning, of those found so far (the next
        page token then stands where they end)."""
        complete = self.status is PlanStatus.COMPLETED
        held = self.slices if complete else self.found
        if offset < 0 or offset > len(held) and complete:
            raise ServiceError.bad_request(f"page_token {offset} is outside plan {self.plan_id}'s {len(held)} file slices")
        items = held[offset:offset + size]
        end = offset + len(items)
        page = [item.to_wire() if isinstance(item, FileSlice) else item for item in items]
        return {"plan_id": self.plan_id, "file_slices": page,
                "next_page_token": str(end) if end < len(held) or not complete else None}

    def answer(self, size: int) -> dict[str, Any]:
        """What a request for the plan gets: its status, and once completed the plan with its first page (while
        planning, the first page alone)."""
        head: dict[str, Any] = {"plan_id": self.plan_id, "table": self.table, "status": self.status.value}
        if self.status is PlanStatus.COMPLETED:
            return {**head, **self.summary, "file_slices_total": len(self.slices), **self.page(0, size)}
        if self.status is PlanStatus.PLANNING:
            return {**head, "file_slices_found": len(self.found), **self.page(0, size)}
        if self.status is PlanStatus.FAILED and self.error is not None:
            return {**head, **self.error.body()}
        return head


Work = Callable[[SlicesSink], Answer]  # given the record's sink for the slices it finds


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

    def _start(self, table: str, work: Work, first_page: int, on_first_page: Callable[[], None] | None = None) -> PlanRecord:
        record = PlanRecord(uuid.uuid4().hex, table, first_page, on_first_page=on_first_page)

        def run() -> Answer:
            try:
                return work(record.add)
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
            record.error = ServiceError.of(exc, f"plan {record.plan_id} of table {record.table}")
            record.status = PlanStatus.FAILED
        else:
            record.summary, record.slices = done.result()
            record.status = PlanStatus.COMPLETED
        record.found = []  # the slices are the plan's now (or gone with it)
        with self._lock:
            self.finished[record.status] += 1

    def _evict(self) -> None:
        """Finished plans beyond `plans_kept`, or older than the TTL, are dropped (oldest first)."""
        now = time.monotonic()
        for plan_id, record in list(self._records.items()):
            too_many = len(self._records) > self.limits.plans_kept
            if not record.running and (too_many or now - record.created > self.limits.plan_ttl_seconds):
                del self._records[plan_id]

    async def run(self, table: str, work: Work, first_page: int = 1) -> PlanRecord:
        """Plan now, answering within the deadline once the plan completes or its first `first_page` slices are
        found (429 when too many are queued or running, 504 past the deadline)."""
        self._admit(self.limits.max_queued_plans, "queued or running")
        loop = asyncio.get_running_loop()
        found = asyncio.Event()
        def first_page_found() -> None:
            loop.call_soon_threadsafe(found.set)

        record = self._start(table, work, first_page, first_page_found)
        assert record.future is not None
        planned: asyncio.Future[Any] = asyncio.wrap_future(record.future)
        planned.add_done_callback(lambda done: done.cancelled() or done.exception())  # kept on the record, read below
        first: asyncio.Future[Any] = asyncio.ensure_future(found.wait())
        try:
            done, _ = await asyncio.wait([planned, first], timeout=self.limits.plan_deadline_seconds, return_when=asyncio.FIRST_COMPLETED)
        finally:
            first.cancel()
        if not done:
            record.status = PlanStatus.CANCELLED
            record.future.cancel()  # still queued: it never runs (running: its next batch stops it)
            raise ServiceError("deadline_exceeded", 504, f"the plan took longer than {self.limits.plan_deadline_seconds:g} s; "
                               "submit it with \"mode\": \"async\" and poll it")
        if record.error is not None:
            raise record.error
        return record

    def submit(self, table: str, work: Work, first_page: int = 1) -> PlanRecord:
        """Plan in the background; the record is polled by id."""
        self._admit(self.limits.max_queued_plans, "queued")
        return self._start(table, work, first_page)

    async def page_when_found(self, record: PlanRecord, offset: int, size: int) -> dict[str, Any]:
        """A page of plan tasks, waiting (up to the plan deadline) while the plan is still finding it: then what is
        found by then. A failed or cancelled plan has no pages."""
        deadline = time.monotonic() + self.limits.plan_deadline_seconds
        while not record.available(offset, size) and time.monotonic() < deadline:
            await asyncio.sleep(PAGE_POLL_SECONDS)
        if record.status is PlanStatus.FAILED and record.error is not None:
            raise record.error
        if record.status is PlanStatus.CANCELLED:
            raise ServiceError("plan_not_completed", 409, f"plan {record.plan_id} is cancelled; it has no tasks")
        return record.page(offset, size)

    def get(self, plan_id: str) -> PlanRecord:
        with self._lock:
            record = self._records.get(plan_id)
        if record is None:
            raise ServiceError("plan_not_found", 404, f"no plan {plan_id!r} (finished plans are kept {self.limits.plan_ttl_seconds:g} s, "
                               f"the last {self.limits.plans_kept} of them)")
        return record

    def cancel(self, plan_id: str) -> PlanRecord:
        record = self.get(plan_id)
        if record.running:
            record.status = PlanStatus.CANCELLED
            if record.future is not None:
                record.future.cancel()  # not started yet: it never runs; running: its result is dropped
        return record
