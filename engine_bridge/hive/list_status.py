"""`HoodieParquetInputFormat.listStatus` as RFC-04 describes it, over a job
configuration, with RFC-27 pruning from Hive's pushed filter.

Each input path is a Hudi table's partition (or base) folder, or not Hudi at
all. Per table, named by `hoodie.table.name` (or `<hoodie.database.name>.<name>`
with `hoodie.incremental.use.database=true`):
- `hoodie.<table>.consume.mode=INCREMENTAL`: the completed commits after
  `consume.start.timestamp` (requested time, as Hudi's Hive reader compares
  it), at most `consume.max.commits` (default 1, -1 all), stopping before
  the earliest pending compaction unless `hoodie.<table>.ro.stop.at.compaction`
  is false; only the partitions those commits wrote (and that are among the
  input paths) are listed, and each file group's newest base file written
  by one of them is returned (Hudi's `getLatestBaseFilesInRange`);
- otherwise snapshot: the latest base files (read-optimized on MOR) of the
  input partitions, as of `consume.commit` when set, including the files of
  pending commits when `consume.pending.commits=true`.
Paths outside any Hudi table are listed as Hadoop lists them (files, not
hidden ones). A predicate from `hive.io.filter.text` (or a SearchArgument
string) drops only files whose column_stats exclude it.
"""

from __future__ import annotations

import fnmatch
import logging
import os
import posixpath
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

import pyarrow.fs as pafs

from engine_bridge.hive.job_conf import flag, input_paths, integer
from expressions import Expr, ExpressionError, parse_hive_filter, parse_search_argument
from listers import DirectoryLister, plan
from metadata import FileSlice, HudiTable
from metadata.errors import HudiError
from metadata.storage.paths import hadoop_local_path, join
from metadata.storage.storage import Storage
from metadata.table.fs_view import FileSystemView
from metadata.timeline.instant import Action, Instant, check_begin_instant, check_instant_time

log = logging.getLogger(__name__)
CONSUME_MODE = "hoodie.{table}.consume.mode"
START = "hoodie.{table}.consume.start.timestamp"
MAX_COMMITS = "hoodie.{table}.consume.max.commits"
PENDING = "hoodie.{table}.consume.pending.commits"
COMMIT = "hoodie.{table}.consume.commit"
STOP_AT_COMPACTION = "hoodie.{table}.ro.stop.at.compaction"
USE_DATABASE = "hoodie.incremental.use.database"
FILTER_TEXT = "hive.io.filter.text"
FILTER_SERIALIZED = "hive.io.filter.expr.serialized"
SARG = "sarg.pushdown"
DEFAULT_MAX_COMMITS = 1


@dataclass(frozen=True)
class ListedFile:
    path: str
    length: int
    modification_time: int  # milliseconds since the epoch, as Hadoop's FileStatus


@dataclass(frozen=True)
class TableListing:
    base_path: str
    table: str
    mode: str
    instants: tuple[str, ...] = ()
    partitions_listed: tuple[str, ...] = ()
    files_kept: int = 0
    files_before_predicate: int = 0
    predicate: str | None = None
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class ListStatus:
    files: tuple[ListedFile, ...]
    tables: tuple[TableListing, ...]
    non_hudi_paths: tuple[str, ...] = ()
    predicate_note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"files": [asdict(f) for f in self.files], "tables": [asdict(t) for t in self.tables],
                "non_hudi_paths": list(self.non_hudi_paths), "predicate": self.predicate_note}

    def explain(self) -> str:
        lines = [f"predicate: {self.predicate_note}"]
        for t in self.tables:
            lines.append(f"{t.table} ({t.base_path}): {t.mode}, {len(t.instants)} instant(s), "
                         f"{len(t.partitions_listed)} partition(s) listed, {t.files_kept} of {t.files_before_predicate} file(s) kept")
            lines += [f"  {note}" for note in t.notes]
        if self.non_hudi_paths:
            lines.append(f"not Hudi, listed as they are: {', '.join(self.non_hudi_paths)}")
        lines.append(f"files: {len(self.files)}")
        return "\n".join(lines)


def predicate_of(conf: Mapping[str, str]) -> tuple[Expr | None, str]:
    """Hive's pushed filter, from its display text or a SearchArgument string."""
    text = conf.get(FILTER_TEXT, "").strip()
    sarg = conf.get(SARG, "").strip()
    try:
        if text:
            return parse_hive_filter(text), f"{FILTER_TEXT}: {text}"
        if sarg.startswith(("leaf-", "expr")):
            return parse_search_argument(sarg), f"{SARG} (SearchArgument text): {sarg}"
    except ExpressionError as exc:
        return None, f"the pushed filter was not used: {exc}"
    if sarg or conf.get(FILTER_SERIALIZED):
        return None, "only a serialized (Kryo) filter was pushed; it is not decoded, so no predicate was used"
    return None, "no predicate was pushed"


def _strip(path: str) -> str:
    return path.rstrip("/") or "/"


def find_table_base(path: str, filesystem: pafs.FileSystem | None = None) -> str | None:
    """The Hudi table folder at or above `path` (Hudi walks up to `.hoodie`)."""
    candidate = _strip(path)
    while True:
        try:
            if Storage.open(candidate, filesystem).exists(".hoodie/hoodie.properties"):
                return candidate
        except HudiError:
            return None
        parent = candidate.rpartition("/")[0]
        if not parent or parent == candidate or parent.endswith(":") or parent.endswith(":/"):
            return None
        candidate = parent


def _table_key(table: HudiTable, conf: Mapping[str, str]) -> str:
    name = table.config.name
    database = table.config.raw.get("hoodie.database.name", "")
    return f"{database}.{name}" if flag(conf, USE_DATABASE, False) and database else name


def _incremental_instants(table: HudiTable, key: str, conf: Mapping[str, str], notes: list[str]) -> list[Instant]:
    start = conf.get(START.format(table=key), "").strip()
    if not start:
        raise HudiError(f"{CONSUME_MODE.format(table=key)}=INCREMENTAL needs {START.format(table=key)}")
    start = check_begin_instant(start, START.format(table=key))
    return consumed_instants(table, start, integer(conf, MAX_COMMITS.format(table=key), DEFAULT_MAX_COMMITS),
                             flag(conf, STOP_AT_COMPACTION.format(table=key), True), notes)


def consumed_instants(table: HudiTable, start: str, max_commits: int, stop_at_compaction: bool = True,
                      notes: list[str] | None = None) -> list[Instant]:
    """The commits Hudi's Hive reader consumes after `start` (requested time):
    at most `max_commits` (-1: all), before the earliest pending compaction."""
    notes = notes if notes is not None else []
    commits = table.timeline.commits()
    if stop_at_compaction:
        pending = [i.requested_time for i in table.timeline.instants
                   if not i.is_completed and (i.planned_action or i.action) is Action.COMPACTION]
        if pending:
            stop = min(pending)
            kept = [i for i in commits if i.requested_time < stop]
            if len(kept) < len(commits):
                notes.append(f"stopped before the pending compaction {stop} ({len(commits) - len(kept)} later commit(s) wait)")
            commits = kept
    after = sorted((i for i in commits if i.requested_time > start), key=lambda i: i.requested_time)
    return after if max_commits < 0 else after[:max_commits]


def written_partitions(table: HudiTable, instants: list[Instant]) -> list[str]:
    """The partitions the instants' write stats name (Hudi's `getAffectedPartitions`)."""
    written: set[str] = set()
    for instant in instants:
        written |= set(table.timeline.commit_metadata(instant).partition_to_write_stats)
    return sorted(written)


def newest_base_files_in_range(table: HudiTable, partitions: list[str], instants: list[Instant]) -> list[FileSlice]:
    """Hudi's `getLatestBaseFilesInRange` on a view whose timeline is the range: per file group the
    range's commits wrote, the newest base file they wrote that storage still holds; a group another
    commit of the range replaced (clustering, insert overwrite) is left out, one replaced later is not
    (what the range wrote is still what it wrote)."""
    wanted, extension = set(partitions), table.config.base_file_format.extension
    newest: dict[tuple[str, str], tuple[str, str]] = {}
    replaced: set[tuple[str, str]] = set()
    for instant in sorted(instants, key=lambda i: i.requested_time):
        meta = table.timeline.commit_metadata(instant)
        for stat in meta.write_stats():
            if stat.partition_path in wanted and stat.path and stat.path.endswith(extension):
                newest[(stat.partition_path, stat.file_id)] = (instant.requested_time, stat.path)
        replaced |= {(p, file_id) for p, ids in meta.partition_to_replace_file_ids.items() for file_id in ids}
    present = {p: {f.name for f in files} for p, files in table.listing.files_for(sorted(wanted)).items()}
    return [FileSlice(partition, file_id, written, path) for (partition, file_id), (written, path) in sorted(newest.items())
            if (partition, file_id) not in replaced and path.rsplit("/", 1)[-1] in present.get(partition, set())]


def _prune(table: HudiTable, as_of: str | None, expr: Expr, candidates: list[FileSlice], notes: list[str]) -> list[FileSlice]:
    """Drop a candidate only when it is a latest slice the plan saw and excluded."""
    with_lister = DirectoryLister(table, as_of)
    result = plan(with_lister, expr, dialect="hive")
    partitions = sorted({s.partition for s in candidates})
    considered = {(s.partition, s.file_id, s.base_file) for s in with_lister.view.latest_file_slices(partitions)}
    kept = {(s.partition, s.file_id, s.base_file) for s in result.files}
    notes += [f"not used: {reason}" for reason in result.not_used]
    return [s for s in candidates if (s.partition, s.file_id, s.base_file) not in considered - kept]


def _listed(storage: Storage, relative: str, info: pafs.FileInfo) -> ListedFile:
    return ListedFile(join(storage.uri, relative), info.size or 0, (info.mtime_ns or 0) // 1_000_000)


def _file_records(storage: Storage, slices: list[FileSlice]) -> list[ListedFile]:
    paths = [s.base_file for s in slices if s.base_file]
    infos = storage.filesystem.get_file_info([storage.full_path(p) for p in paths]) if paths else []
    return [_listed(storage, p, info) for p, info in zip(paths, infos)]


def _list_table(base: str, relative: list[str], conf: Mapping[str, str], expr: Expr | None,
                filesystem: pafs.FileSystem | None) -> tuple[TableListing, list[ListedFile]]:
    table = HudiTable.open(base, filesystem=filesystem)
    key = _table_key(table, conf)
    notes: list[str] = []
    whole_table = "" in relative
    incremental = conf.get(CONSUME_MODE.format(table=key), "SNAPSHOT").strip().upper() == "INCREMENTAL"
    as_of = None
    if incremental:
        instants = _incremental_instants(table, key, conf, notes)
        partitions = [p for p in written_partitions(table, instants) if whole_table or p in relative]
        candidates = newest_base_files_in_range(table, partitions, instants)
        mode, instant_times = "incremental", tuple(i.requested_time for i in instants)
    else:
        as_of = conf.get(COMMIT.format(table=key), "").strip() or None
        if as_of:
            check_instant_time(as_of, COMMIT.format(table=key))
        pending = flag(conf, PENDING.format(table=key), False)
        if pending:
            table = HudiTable.open(base, filesystem=filesystem, use_metadata=False)  # pending writes are not in the MDT yet
            view = FileSystemView(table.config, table.timeline, table.listing, as_of, include_pending=True)
            notes.append("files of pending commits included (consume.pending.commits)")
        else:
            view = table.view(as_of)
        partitions = (view.partitions() if table.config.is_partitioned else [""]) if whole_table else sorted(set(relative))
        candidates = [s for s in view.latest_file_slices(partitions) if s.base_file]
        mode, instant_times = "snapshot", (as_of,) if as_of else ()
    before = len(candidates)
    if expr is not None and candidates:
        candidates = _prune(table, None if incremental else as_of, expr, candidates, notes)
    files = _file_records(table.storage, candidates)
    listing = TableListing(table.base_uri, key, mode, instant_times, tuple(partitions), len(files), before,
                           None if expr is None else "pushed filter", tuple(notes))
    return listing, files


def _list_plain(path: str, filesystem: pafs.FileSystem | None) -> list[ListedFile]:
    storage = Storage.open(path, filesystem)
    infos = storage.filesystem.get_file_info(pafs.FileSelector(storage.base_path, allow_not_found=True))
    return [_listed(storage, info.base_name, info) for info in sorted(infos, key=lambda i: i.base_name)
            if info.type == pafs.FileType.File and not info.base_name.startswith(("_", "."))]


_GLOB_CHARACTERS = frozenset("*?[{")


def normalise_input_path(path: str) -> str:
    """An input path as Hadoop qualifies it: absolute (a relative local path
    from the working directory), `.` and `..` resolved, the scheme kept."""
    if path.startswith("file:"):
        return "file:" + posixpath.normpath(os.path.abspath(hadoop_local_path(path)))
    if "://" in path:
        scheme, _, rest = path.partition("://")
        authority, _, inner = rest.partition("/")
        return f"{scheme}://{authority}" + (posixpath.normpath("/" + inner) if inner else "")
    return os.path.abspath(os.path.expanduser(path))


def _expand_braces(pattern: str) -> list[str]:
    """Hadoop's `{a,b}` alternation, innermost first."""
    match = re.search(r"\{([^{}]*)\}", pattern)
    if match is None:
        return [pattern]
    return [expanded for choice in match.group(1).split(",")
            for expanded in _expand_braces(pattern[:match.start()] + choice + pattern[match.end():])]


def _glob(pattern: str, filesystem: pafs.FileSystem | None) -> list[str]:
    """Paths matching a Hadoop glob (`*`, `?`, `[...]`, `{a,b}`), segment by segment, sorted."""
    found: set[str] = set()
    for expanded in _expand_braces(pattern):
        head, _, rest = expanded.partition("://") if "://" in expanded else ("", "", expanded)
        prefix = f"{head}://" if head else ""
        segments = rest.split("/")
        fixed = next((n for n, segment in enumerate(segments) if _GLOB_CHARACTERS & set(segment)), len(segments))
        current = ["/".join(segments[:fixed]) or "/"]  # all of it when braces were the only glob
        for segment in segments[fixed:]:
            following = []
            for folder in current:
                if not _GLOB_CHARACTERS & set(segment):
                    following.append(posixpath.join(folder, segment))
                    continue
                files, folders = Storage.open(prefix + folder, filesystem).list_dir()
                following += [posixpath.join(folder, name) for name in [*(f.name for f in files), *folders]
                              if fnmatch.fnmatchcase(name, segment)]
            current = following
        found |= {prefix + path for path in current if _exists(prefix + path, filesystem)}
    return sorted(found)


def _exists(path: str, filesystem: pafs.FileSystem | None) -> bool:
    return Storage.open(path, filesystem).exists("")


def resolved_input_paths(conf: Mapping[str, str], filesystem: pafs.FileSystem | None = None) -> list[str]:
    """The job's input paths qualified and globs expanded; a path that does not
    exist, or a glob matching nothing, fails as in Hadoop's FileInputFormat."""
    resolved: list[str] = []
    for raw in input_paths(conf):
        path = normalise_input_path(raw)
        if _GLOB_CHARACTERS & set(path):
            matches = _glob(path, filesystem)
            if not matches:
                raise HudiError(f"Input Pattern {path} matches 0 files")
            resolved += matches
        elif not _exists(path, filesystem):
            raise HudiError(f"Input path does not exist: {path}")
        else:
            resolved.append(path)
    return list(dict.fromkeys(resolved))


def list_status(conf: Mapping[str, str], filesystem: pafs.FileSystem | None = None) -> ListStatus:
    expr, predicate_note = predicate_of(conf)
    by_table: dict[str, list[str]] = {}
    plain: list[str] = []
    for path in resolved_input_paths(conf, filesystem):
        base = find_table_base(path, filesystem)
        if base is None:
            plain.append(path)
            continue
        by_table.setdefault(base, []).append(_strip(path)[len(base):].lstrip("/"))
    files: list[ListedFile] = []
    tables = []
    for base, partitions in by_table.items():
        listing, found = _list_table(base, partitions, conf, expr, filesystem)
        tables.append(listing)
        files += found
    for path in plain:
        files += _list_plain(path, filesystem)
    return ListStatus(tuple(files), tuple(tables), tuple(plain), predicate_note)


__all__ = ["ListStatus", "ListedFile", "TableListing", "find_table_base", "list_status", "predicate_of"]
