"""Instants: one action on the timeline, in one of three states.

File names (reference section 1):
- layout 1: `<ts>.<action>` completed, `<ts>.<action>.requested|.inflight`
  pending; a commit's inflight file is the bare `<ts>.inflight`.
- layout 2: completed `<ts>_<completion>.<action>`, pending as in layout 1.
Table services complete under another action: compaction as `commit`,
log compaction as `deltacommit`, clustering as `replacecommit`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timezone
from enum import IntEnum

from metadata.errors import InvalidInstantTime
from metadata.util.text_enum import TextEnum

INSTANT_TIME_PATTERN = re.compile(r"^\d{14,}$")
BEFORE_ALL_INSTANTS = "0" * 17  # earlier than every instant: "from the start" in a range

class Action(TextEnum):
    COMMIT = "commit"
    DELTA_COMMIT = "deltacommit"
    REPLACE_COMMIT = "replacecommit"
    CLEAN = "clean"
    ROLLBACK = "rollback"
    SAVEPOINT = "savepoint"
    RESTORE = "restore"
    COMPACTION = "compaction"
    LOG_COMPACTION = "logcompaction"
    CLUSTERING = "clustering"
    INDEXING = "indexing"
    SCHEMA_COMMIT = "schemacommit"

    @property
    def writes_data(self) -> bool:
        """Completing it writes data files (commit, deltacommit, replacecommit)."""
        return self in (Action.COMMIT, Action.DELTA_COMMIT, Action.REPLACE_COMMIT)

    @property
    def is_table_service_plan(self) -> bool:
        return self in _COMPLETES_AS


# Requested table services and the action each completes as.
_COMPLETES_AS = {
    Action.COMPACTION: Action.COMMIT,
    Action.LOG_COMPACTION: Action.DELTA_COMMIT,
    Action.CLUSTERING: Action.REPLACE_COMMIT,
}
_ACTIONS = {a.value: a for a in Action}

_COMPLETED_V2 = re.compile(r"^(\d+)_(\d+)\.([a-z_]+)$")
_PLAIN = re.compile(r"^(\d+)\.([a-z_]+)(?:\.(requested|inflight))?$")


class State(IntEnum):
    REQUESTED = 1
    INFLIGHT = 2
    COMPLETED = 3


@dataclass(frozen=True)
class InstantFile:
    """What one timeline file name says."""

    requested_time: str
    action: Action
    state: State
    completion_time: str | None
    file_name: str


def parse_instant_file_name(name: str) -> InstantFile | None:
    """Parse a timeline file name; None for files that are not instants."""
    match = _COMPLETED_V2.match(name)
    if match:
        ts, completion, action_text = match.groups()
        action = _ACTIONS.get(action_text)
        return None if action is None else InstantFile(ts, action, State.COMPLETED, completion, name)
    match = _PLAIN.match(name)
    if not match:
        return None
    ts, action_text, suffix = match.groups()
    if action_text == "inflight" and suffix is None:
        return InstantFile(ts, Action.COMMIT, State.INFLIGHT, None, name)
    action = _ACTIONS.get(action_text)
    if action is None:
        return None
    if suffix is None:
        return InstantFile(ts, action, State.COMPLETED, None, name)
    return InstantFile(ts, action, State.REQUESTED if suffix == "requested" else State.INFLIGHT, None, name)


@dataclass(frozen=True)
class Instant:
    """One instant with its most advanced state.

    `action` is what the instant is now (a completed compaction is a
    `commit`); `planned_action` is what was requested (`compaction`).
    `completion_time` is known on timeline layout 2 only.
    """

    requested_time: str
    action: Action
    state: State
    completion_time: str | None = None
    planned_action: Action | None = None
    file_name: str = ""
    requested_file_name: str | None = None

    @property
    def is_completed(self) -> bool:
        return self.state is State.COMPLETED

    @property
    def is_commit(self) -> bool:
        """A completed commit, deltacommit or replacecommit (writes data)."""
        return self.is_completed and self.action.writes_data

    @property
    def is_compaction(self) -> bool:
        return (self.planned_action or self.action) in (Action.COMPACTION, Action.LOG_COMPACTION)

    def __str__(self) -> str:
        done = f" completed {self.completion_time}" if self.completion_time else ""
        return f"{self.requested_time} {self.action} {self.state.name}{done}"


class DuplicateInstantError(ValueError):
    """Two completed instant files share a requested time."""

    def __init__(self, requested_time: str, file_names: list[str]) -> None:
        self.requested_time = requested_time
        self.file_names = file_names
        super().__init__(f"{len(file_names)} completed instants have requested time {requested_time}: {', '.join(file_names)}")


def fold_instant_files(files: list[InstantFile]) -> list[Instant]:
    """Merge the requested/inflight/completed files of each instant time.

    Two completed files of one time (other than a savepoint, which takes the
    time of the commit it keeps) make the timeline inconsistent: which one
    wrote the files is unknown, so this raises DuplicateInstantError."""
    by_time: dict[str, list[InstantFile]] = {}
    for f in files:
        by_time.setdefault(f.requested_time, []).append(f)
    instants = []
    for ts, group in by_time.items():
        completed = sorted(f.file_name for f in group if f.state is State.COMPLETED and f.action is not Action.SAVEPOINT)
        if len(completed) > 1:
            raise DuplicateInstantError(ts, completed)
        best = max(group, key=lambda f: f.state)
        pending = [f for f in group if f.state is not State.COMPLETED]
        planned = next((f.action for f in pending if f.action.is_table_service_plan), None)
        requested = next((f.file_name for f in group if f.state is State.REQUESTED), None)
        action = best.action
        if best.state is not State.COMPLETED and planned:
            action = planned
        instants.append(
            Instant(
                requested_time=ts,
                action=action,
                state=best.state,
                completion_time=best.completion_time,
                planned_action=planned,
                file_name=best.file_name,
                requested_file_name=requested,
            )
        )
    instants.sort(key=lambda i: i.requested_time)
    return instants


INSTANT_SECONDS_FORMAT = "%Y%m%d%H%M%S"  # an instant time's first 14 digits; milliseconds follow


def check_instant_time(text: str, what: str = "instant time") -> str:
    if not INSTANT_TIME_PATTERN.match(text or ""):
        raise InvalidInstantTime(text, what)
    return text


def check_begin_instant(text: str, what: str = "begin instant") -> str:
    """A range's exclusive start: an instant time that is a date, or zeros of
    any length (`0`, `000`: Hudi's "from the start"), which become BEFORE_ALL_INSTANTS."""
    if text and set(text) == {"0"}:
        return BEFORE_ALL_INSTANTS
    return check_calendar_instant(text, what)


def check_calendar_instant(text: str, what: str = "instant time") -> str:
    """An instant time a user gives: its digits must be a date and time
    (month 13 is no instant), not only the right number of digits."""
    check_instant_time(text, what)
    try:
        datetime.strptime(text[:14], INSTANT_SECONDS_FORMAT)
    except ValueError:
        raise InvalidInstantTime(text, what, "is not a date and time (yyyyMMddHHmmssSSS: month 01-12, day of that month, hour 00-23)") from None
    return text


def check_range(begin: str, end: str | None) -> tuple[str, str | None]:
    """A range (begin, end] a user gives: both instants checked, and an end
    before the begin is an error, not an empty answer."""
    begin = check_begin_instant(begin)
    if end is not None:
        check_calendar_instant(end, "end instant")
        if end < begin:
            raise InvalidInstantTime(end, "end instant", f"is before the begin instant {begin}: the range is empty")
    return begin, end


def instant_epoch_millis(instant_time: str, utc: bool) -> int | None:
    """Milliseconds since the epoch of an instant time, read in UTC or in this
    machine's zone (Hudi's `hoodie.table.timeline.timezone`: LOCAL or UTC).
    None for the initialising times that are not dates (`00000000000000000`)."""
    digits = instant_time[:17]
    try:
        moment = datetime.strptime(digits[:14], INSTANT_SECONDS_FORMAT)
    except ValueError:
        return None
    millis = int(digits[14:17] or 0) if digits[14:17].isdigit() else 0
    moment = moment.replace(tzinfo=timezone.utc) if utc else moment.astimezone()
    return int(moment.timestamp()) * 1000 + millis
