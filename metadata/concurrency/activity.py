"""Who is writing a table now: the pending instants of the data table and of
its metadata table, each with its writer's last sign of life.

A Hudi writer in multi-writer mode (LAZY failed-writes cleaning) keeps
`.hoodie/.heartbeat/<instant>` fresh while it writes; Hudi takes an instant
for failed once that file is older than the heartbeat interval times the
tolerable misses (`HoodieHeartbeatClient.isHeartbeatExpired`). A single
writer (EAGER cleaning) keeps no heartbeat, so the newest of the instant's
timeline file and its marker folder (`.hoodie/.temp/<instant>`, which grows
as the writer creates files) stands in for it, judged by the same window.
Nothing here rolls anything back: it only tells whether a writer may be at work."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from metadata.concurrency.options import WriterOptions
from metadata.storage.paths import join
from metadata.storage.storage import Storage
from metadata.table.stored_table import TableParts
from metadata.timeline.instant import Instant, State

HEARTBEAT_FOLDER = ".hoodie/.heartbeat"
MARKER_FOLDER = ".hoodie/.temp"


@dataclass(frozen=True)
class LiveInstant:
    """A pending instant whose writer showed a sign of life within the heartbeat window."""

    instant_time: str
    action: str
    in_metadata_table: bool
    seconds_since: float  # since its last sign of life
    sign: str  # what showed it: "heartbeat", "timeline file" or "marker folder"

    def describe(self) -> str:
        where = "metadata-table" if self.in_metadata_table else "data"
        return f"{where} instant {self.instant_time} ({self.action}; {self.sign} {self.seconds_since:.0f} s ago)"


class WriterActivity:
    def __init__(self, storage: Storage, options: WriterOptions, clock: Callable[[], float] = time.time) -> None:
        self.storage = storage
        self.window = options.heartbeat_window_seconds
        self.clock = clock

    def last_sign_of_life(self, parts: TableParts, instant: Instant) -> tuple[float, str] | None:
        """(seconds since, what) of the freshest trace the instant's writer left."""
        ts = instant.requested_time
        # A metadata-table instant is written by its data instant's writer: the data table's heartbeat of that time counts.
        signs: list[tuple[float | None, str]] = [(self.storage.modified_time(join(HEARTBEAT_FOLDER, ts)), "heartbeat")]
        if parts.storage.base_path != self.storage.base_path:
            signs.append((parts.storage.modified_time(join(HEARTBEAT_FOLDER, ts)), "heartbeat"))
        signs += [(parts.storage.modified_time(parts.timeline.instant_path(instant)), "timeline file"),
                  (parts.storage.modified_time(join(MARKER_FOLDER, ts)), "marker folder")]
        known = [(modified, sign) for modified, sign in signs if modified is not None]
        if not known:
            return None
        modified, sign = max(known)
        return max(self.clock() - modified, 0.0), sign

    def live(self, parts: TableParts, skip: Iterable[str] = (), in_metadata_table: bool = False) -> list[LiveInstant]:
        """Pending instants of `parts` (not in `skip`) whose writer may be at
        work. A table service's plan that nobody has started (requested only)
        has no writer."""
        skipped = set(skip)
        found = []
        for instant in parts.timeline.pending():
            if instant.requested_time in skipped:
                continue
            if instant.planned_action is not None and instant.state is State.REQUESTED:
                continue
            sign = self.last_sign_of_life(parts, instant)
            if sign is not None and sign[0] <= self.window:
                found.append(LiveInstant(instant.requested_time, str(instant.action), in_metadata_table, sign[0], sign[1]))
        return found
