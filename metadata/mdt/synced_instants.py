"""Which instants of the metadata table count, and which data instants it
holds: delta commits of completed data instants (or of archived ones, or
the metadata table's own), and the data instants a build of this project's
writer took into its snapshot (`BUILT_THROUGH`, `PENDING_AT_BUILD`)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from metadata.table.stored_table import StoredTable
from metadata.timeline.instant import Action, Instant

log = logging.getLogger(__name__)

BUILT_THROUGH = "hudi-bridge.builtThrough"  # extraMetadata of an initialising deltacommit
PENDING_AT_BUILD = "hudi-bridge.pendingAtBuild"
# Data-table actions that change which files exist (and so the metadata table).
_FILE_CHANGING = frozenset({Action.COMMIT, Action.DELTA_COMMIT, Action.REPLACE_COMMIT, Action.CLEAN, Action.ROLLBACK, Action.RESTORE})


def is_initialisation(ts: str) -> bool:
    # v8+: 00000000000000000, ...001; v6: <instant> + 3-digit suffix (010 and up).
    return ts.startswith("00000000000000") or len(ts) > 17


def valid_mdt_instants(data_table: StoredTable, mdt: StoredTable, latest_instant: str) -> set[str]:
    """Metadata-table instants whose writes count: completed, not after `latest_instant`, and of a completed data
    instant (or the metadata table's own: compaction, clean, rollback, initialisation; or of an archived one)."""
    data_completed = {i.requested_time for i in data_table.timeline.completed()}
    data_all = {i.requested_time for i in data_table.timeline.instants}
    data_first = data_table.timeline.first_active_time()
    valid = set()
    for instant in mdt.timeline.completed():
        ts = instant.requested_time
        if ts > latest_instant:
            continue
        if ts in data_completed:
            valid.add(ts)
        elif instant.action is not Action.DELTA_COMMIT or is_initialisation(ts):
            valid.add(ts)  # MDT-only: compaction, clean, rollback, initialisation
        elif ts not in data_all and data_first is not None and ts < data_first:
            valid.add(ts)  # its data instant was archived, so it completed
        else:
            log.debug("MDT instant %s ignored: its data-table instant is not completed", ts)
    return valid


def synced_data_instants(data_table: StoredTable, mdt: StoredTable, valid: set[str]) -> frozenset[str]:
    """Completed data-table instants whose changes the metadata table holds:
    those with their own delta commit, and those a build's snapshot took in."""
    coverage = build_coverage(mdt)
    return frozenset(i.requested_time for i in data_table.timeline.completed() if i.requested_time in valid or coverage.covers(i.requested_time))


def unsynced_data_instants(data_table: StoredTable, valid: set[str], synced_instants: Callable[[], frozenset[str]]) -> list[Instant]:
    """Completed data instants newer than every one the metadata table
    holds (by requested time, and by completion time where the timeline
    has it): what a writer that does not keep the metadata table did.
    Older ones without their own delta commit came before the table was
    built and are part of its first snapshot. `synced_instants` is asked
    only when the newest instants lack delta commits of their own."""
    completed = [i for i in data_table.timeline.completed() if i.action in _FILE_CHANGING]
    if not completed:
        return []
    newest_requested = max(completed, key=lambda i: i.requested_time)
    newest_completed = max(completed, key=lambda i: i.completion_time or "")
    if newest_requested.requested_time in valid and newest_completed.requested_time in valid:
        return []  # the newest instants have delta commits of their own: nothing can be newer (no build record read)
    synced = synced_instants()
    held = [i for i in completed if i.requested_time in synced]
    if not held:
        return []
    held_requested = max(i.requested_time for i in held)
    held_completed = max((i.completion_time or "" for i in held), default="")
    return [i for i in completed if i.requested_time not in synced
            and (i.requested_time > held_requested or (i.completion_time or "") > held_completed > "")]


@dataclass(frozen=True)
class BuildCoverage:
    """The data instants a build of this project's writer took into its
    snapshot: completed ones up to `built_through`, except those pending then."""

    built_through: str = ""
    pending: frozenset[str] = frozenset()

    def covers(self, data_instant: str) -> bool:
        return bool(self.built_through) and data_instant <= self.built_through and data_instant not in self.pending


def build_coverage(mdt: StoredTable) -> BuildCoverage:
    """From the newest initialising delta commit that recorded a build (each
    build records the data timeline it saw, so the newest covers the most);
    covering nothing when none did (Hudi's own MDTs). Newest first, stopping
    at the first: on an object store each commit read is two requests."""
    initialisations = [i for i in mdt.timeline.completed()
                       if i.action is Action.DELTA_COMMIT and is_initialisation(i.requested_time)]
    for instant in sorted(initialisations, key=lambda i: i.requested_time, reverse=True):
        extra = mdt.timeline.commit_metadata(instant).extra_metadata
        if BUILT_THROUGH in extra:
            return BuildCoverage(extra[BUILT_THROUGH], frozenset(p for p in extra.get(PENDING_AT_BUILD, "").split(",") if p))
    return BuildCoverage()
