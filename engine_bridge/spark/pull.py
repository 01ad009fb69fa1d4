"""RFC-04's incremental puller on Spark: write the rows changed in a range of
instants, then move the checkpoint.

Each range goes to its own folder `<out>/range_<begin>_<end>`, written under
a staging name and renamed into place, and only then is the checkpoint
moved (written to a temporary file and renamed). A crash at any point
leaves either no folder for the range or a complete one with the
checkpoint behind it. The next run pulls from the checkpoint again, up to
the latest instant then (commits may have arrived), and replaces every
range with the same begin: each row is in the output once. Staging folders
a killed run left are removed first.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from engine_bridge.spark.fast_read import read
from listers.incremental import IncrementalPlan, incremental, range_key
from metadata import HudiTable
from metadata.errors import CleanedFilesError, HudiBridgeError
from metadata.timeline.instant import BEFORE_ALL_INSTANTS, check_begin_instant, check_instant_time, check_range

log = logging.getLogger(__name__)


class PullError(HudiBridgeError):
    """The pull cannot run as asked (a bad checkpoint, an output that is a file)."""


@dataclass(frozen=True)
class PullResult:
    table: str
    begin: str
    end: str | None
    instants: list[str]
    rows: int
    output: str | None
    checkpoint: str | None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def read_checkpoint(path: str) -> str | None:
    """The instant a checkpoint file says was pulled up to (None: no file yet)."""
    if not os.path.exists(path):
        return None
    try:
        with open(path, encoding="utf-8") as handle:
            instant = json.load(handle)["instant"]
        return check_instant_time(str(instant), f"checkpoint {path}")
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise PullError(f"checkpoint {path} cannot be read: {exc}") from None


def write_checkpoint(path: str, instant: str, table: str, output: str) -> None:
    temporary = f"{path}.{uuid.uuid4().hex}.tmp"
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(temporary, "w", encoding="utf-8") as handle:
        json.dump({"instant": instant, "table": table, "output": output}, handle)
    os.replace(temporary, path)


STAGING_PREFIX = "_staging_"
CHANGE_FEED = "cdc"  # --format cdc: the range's change feed (op, ts_ms, before, after), written as Parquet


def _remove_staging(out: Path) -> None:
    """Staging folders of runs that were killed (one pull writes an output at a time)."""
    for leftover in out.glob(f"{STAGING_PREFIX}*") if out.is_dir() else []:
        shutil.rmtree(leftover, ignore_errors=True)


def check_pull(out: str, begin: str | None, checkpoint: str | None) -> tuple[str, str]:
    """(the instant to pull after, the absolute output folder), or the error, before Spark starts."""
    if begin and checkpoint:
        raise PullError("give --begin or --checkpoint, not both")
    start = check_begin_instant((read_checkpoint(checkpoint) if checkpoint else None) or begin or BEFORE_ALL_INSTANTS)
    out = os.path.abspath(os.path.expanduser(out))
    if Path(out).exists() and not Path(out).is_dir():
        raise PullError(f"output {out} is a file, not a folder")
    return start, out


@dataclass(frozen=True)
class PullPlan:
    """What a pull will read, planned before any Spark session starts."""

    table: HudiTable
    start: str
    out: str
    end: str | None
    checkpoint: str | None
    planned: IncrementalPlan
    max_commits: int | None = None

    def again(self, progress: Callable[[str], None] = log.info) -> PullPlan:
        """The same pull planned afresh (the table as it is now)."""
        return plan_pull(self.table.base_uri, self.out, None if self.checkpoint else self.start, self.checkpoint, self.end,
                         self.max_commits, progress)

    @property
    def nothing_to_pull(self) -> bool:
        return not self.planned.instants

    def empty_result(self) -> PullResult:
        return PullResult(self.table.base_uri, self.start, self.end, [], 0, None, self.checkpoint)


def plan_pull(path: str, out: str, begin: str | None = None, checkpoint: str | None = None, end: str | None = None,
              max_commits: int | None = None, progress: Callable[[str], None] = log.info) -> PullPlan:
    """Check the arguments and plan (begin, end] (begin from the checkpoint when it exists)."""
    start, out = check_pull(out, begin, checkpoint)
    start, end = check_range(start, end)  # before any progress is said
    table = HudiTable.open(path)
    progress(f"planning ({start}, {end or 'latest'}] on {table.base_uri}")
    return PullPlan(table, start, out, end, checkpoint, incremental(table, start, end, max_commits), max_commits)


def pull(
    spark: Any,
    path: str,
    out: str,
    begin: str | None = None,
    checkpoint: str | None = None,
    end: str | None = None,
    max_commits: int | None = None,
    where: str | None = None,
    output_format: str = "parquet",
    progress: Callable[[str], None] = log.info,
    fault: Callable[[str], None] = lambda step: None,
) -> PullResult:
    """Pull (begin, end] (begin from the checkpoint when it exists) into a new
    range folder under `out`, then move the checkpoint to the range's end."""
    planned = plan_pull(path, out, begin, checkpoint, end, max_commits, progress)
    return run_pull_replanning(spark, planned, where, output_format, progress, fault)


REPLANS = 2


class FileRemovedWhileRead(CleanedFilesError):
    """A file the pull planned was removed (by a cleaner beside it) while Spark read it."""

    def __init__(self, path: str) -> None:
        self.path = path
        super().__init__(f"{path}: removed while the pull read it (a cleaner ran beside); planned again {REPLANS} times and "
                         "files kept going: run the pull again")


def removed_file(exc: BaseException) -> str | None:
    """The path Spark says was removed under its read (FAILED_READ_FILE.FILE_NOT_EXIST, FileNotFoundException), or None."""
    text = str(exc)
    found = (re.search(r"FILE_NOT_EXIST\] Encountered error while reading file (\S+?)\. File does not exist", text)
             or re.search(r"PATH_NOT_FOUND\] Path does not exist: (\S+?)\.?(?:\s|$)", text)
             or re.search(r"java\.io\.FileNotFoundException: (?:File )?(\S+?)(?: does not exist)?(?:\s|$)", text))
    return found.group(1) if found else None


@contextmanager
def _naming_a_removed_file() -> Iterator[None]:
    """Spark's error for a planned file removed under its read, as FileRemovedWhileRead; any other error as it is."""
    try:
        yield
    except Exception as exc:
        removed = removed_file(exc)
        if removed is None:
            raise
        raise FileRemovedWhileRead(removed) from None


def run_pull_replanning(spark: Any, plan: PullPlan, where: str | None = None, output_format: str = "parquet",
                        progress: Callable[[str], None] = log.info, fault: Callable[[str], None] = lambda step: None) -> PullResult:
    """`run_pull`, planned again when a cleaner beside removed a planned file while Spark read it (a plan as of
    a newer instant reads the files that replaced it), at most REPLANS times."""
    for _ in range(REPLANS):
        try:
            return run_pull(spark, plan, where, output_format, progress, fault)
        except FileRemovedWhileRead as exc:
            progress(f"{exc.path} was removed while it was read (a cleaner ran beside): planning again")
            plan = plan.again(progress)
    return run_pull(spark, plan, where, output_format, progress, fault)


def run_pull(spark: Any, plan: PullPlan, where: str | None = None, output_format: str = "parquet",
             progress: Callable[[str], None] = log.info, fault: Callable[[str], None] = lambda step: None) -> PullResult:
    """Write a planned pull's rows into a new range folder, then move the checkpoint."""
    if plan.nothing_to_pull:
        return plan.empty_result()
    table, start, out, planned = plan.table, plan.start, plan.out, plan.planned
    path = table.base_uri  # absolute from here on: Spark's workers and hudi-rs are handed it
    last = range_key(table, planned.instants[-1])
    instants = [i.requested_time for i in planned.instants]
    progress(f"{len(instants)} instant(s), {len(planned.files)} file slice(s) in {len(planned.partitions)} partition(s)")
    change_feed = output_format == CHANGE_FEED
    with _naming_a_removed_file():  # Spark checks the planned files exist here, and reads them at the save below
        frame = read(spark, path, where=where, query_type="incremental", begin=start, end=last, table=table,
                     incremental_format="cdc" if change_feed else None)
    output_format = "parquet" if change_feed else output_format
    final = Path(out) / f"range_{start}_{last}"
    _remove_staging(Path(out))
    staging = Path(out) / f"{STAGING_PREFIX}{start}_{last}_{uuid.uuid4().hex}"
    progress(f"writing {output_format} to {final}")
    try:
        with _naming_a_removed_file():
            frame.write.format(output_format).save(str(staging))
        rows = spark.read.format(output_format).load(str(staging)).count()
        fault("after staging")
        for earlier in sorted(Path(out).glob(f"range_{start}_*")):  # a run that stopped before its checkpoint moved
            progress(f"replacing {earlier.name}: its checkpoint never moved")
            shutil.rmtree(earlier)
        fault("after earlier ranges removed")
        os.replace(staging, final)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    fault("after rename")
    if plan.checkpoint:
        write_checkpoint(plan.checkpoint, last, path, str(final))
    return PullResult(path, start, last, instants, rows, str(final), plan.checkpoint)
