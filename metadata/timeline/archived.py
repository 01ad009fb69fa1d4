"""The archived timeline: the completed commits Hudi's archival moved out of
the active timeline, with their commit metadata, so that incremental pulls,
change feeds and time travel reach back as Hudi 1.x's readers do.

- Layout 2 (table version 8+): Hudi's LSM timeline. `<timeline>/history/_version_`
  names the current manifest (`manifest_<n>`, JSON), which lists the Parquet
  files; each row is one instant: `instantTime`, `completionTime`, `action`
  and its `metadata` (an Avro container or JSON, as an active instant file).
- Layout 1 (version 6): archive logs `.commits_.archive.<n>_<token>` in
  `.hoodie/<hoodie.archivelog.folder>` (Hudi 0.x: `archived`; Hudi 1.x
  writing version 6: `history`): Avro data blocks of HoodieArchivedMetaEntry
  records, one per instant state; the COMPLETED ones count.

Every file is read whole but bounded (MAX_ARCHIVE_FILE_BYTES), and links are
not followed (Storage's rules).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from metadata.errors import HudiFormatError
from metadata.formats.log_format import BlockType, decode_avro_records, read_log_blocks
from metadata.storage.paths import join
from metadata.storage.storage import Storage
from metadata.table.config import TableConfig
from metadata.table.file_naming import is_log_file_name
from metadata.timeline.commit_metadata import CommitMetadata
from metadata.timeline.instant import Action, Instant, State
from metadata.timeline.instant_content import decode_instant_content

MAX_ARCHIVE_FILE_BYTES = 512 * 1024 * 1024  # one archive file; Hudi rolls them at 1 GiB of instants, most are far smaller
_COMMIT_FIELDS = {"commit": "hoodieCommitMetadata", "deltacommit": "hoodieCommitMetadata",
                  "replacecommit": "hoodieReplaceCommitMetadata"}


@dataclass(frozen=True)
class ArchivedCommit:
    instant: Instant
    metadata: CommitMetadata


def archive_folder(config: TableConfig) -> str:
    """Where the archived timeline lives, relative to the base path."""
    if config.timeline_layout_version >= 2:
        return join(config.timeline_path, config.raw.get("hoodie.timeline.history.path") or "history")
    return join(".hoodie", config.raw.get("hoodie.archivelog.folder") or "archived")


def read_archived_commits(storage: Storage, config: TableConfig) -> list[ArchivedCommit]:
    """The completed commits, delta commits and replace commits in the archive, oldest requested first."""
    folder = archive_folder(config)
    found = _lsm_commits(storage, folder) if config.timeline_layout_version >= 2 else _log_commits(storage, folder)
    return sorted(found, key=lambda c: c.instant.requested_time)


def _lsm_commits(storage: Storage, folder: str) -> list[ArchivedCommit]:
    import io

    import pyarrow.parquet as pq

    files, _ = storage.list_dir(folder)
    if not any(f.name == "_version_" for f in files):
        return []
    version_path = join(folder, "_version_")
    version = storage.read_bytes(version_path, max_bytes=64).decode(errors="replace").strip()
    if not version.isdigit():
        raise HudiFormatError(storage.full_path(version_path), f"names no manifest version ({version[:20]!r})")
    manifest_path = join(folder, f"manifest_{version}")
    try:
        manifest = json.loads(storage.read_bytes(manifest_path, max_bytes=64 * 1024 * 1024))
        names = [entry["fileName"] for entry in manifest["files"]]
    except (ValueError, KeyError, TypeError) as exc:
        raise HudiFormatError(storage.full_path(manifest_path), f"is not an LSM timeline manifest ({exc})") from None
    found = []
    for name in names:
        if "/" in name or name.startswith("."):
            raise HudiFormatError(storage.full_path(manifest_path), f"names {name!r}, which is not a file in the history folder")
        path = join(folder, name)
        try:
            rows = pq.ParquetFile(io.BytesIO(storage.read_bytes(path, max_bytes=MAX_ARCHIVE_FILE_BYTES))).read(
                columns=["instantTime", "completionTime", "action", "metadata"]).to_pylist()
        except Exception as exc:  # pyarrow's errors, a file cut short: one line naming it
            raise HudiFormatError(storage.full_path(path), f"archived timeline file unreadable ({exc})") from None
        for row in rows:
            action = _writing_action(row.get("action"))
            if action is None or not row.get("metadata"):
                continue
            source = f"{storage.full_path(path)} (instant {row['instantTime']})"
            instant = Instant(row["instantTime"], action, State.COMPLETED, row.get("completionTime") or row["instantTime"])
            found.append(ArchivedCommit(instant, CommitMetadata.from_dict(source, decode_instant_content(source, row["metadata"]))))
    return found


def _log_commits(storage: Storage, folder: str) -> list[ArchivedCommit]:
    files, _ = storage.list_dir(folder)
    found: dict[str, ArchivedCommit] = {}
    for stored in sorted(files, key=lambda f: f.name):
        if not is_log_file_name(stored.name) or ".archive." not in stored.name or stored.name.endswith(".crc"):
            continue
        path = join(folder, stored.name)
        where = storage.full_path(path)
        result = read_log_blocks(storage.read_bytes(path, max_bytes=MAX_ARCHIVE_FILE_BYTES), where)
        for block in result.blocks:
            if block.block_type is not BlockType.AVRO_DATA:
                continue
            for record in decode_avro_records(block, where):
                commit = _archived_entry(record, where)
                if commit is not None:
                    found[commit.instant.requested_time] = commit
        if result.problems:
            raise HudiFormatError(where, f"archive log damaged: {result.problems[0].problem}", result.problems[0].offset)
    return list(found.values())


def _archived_entry(record: dict[str, Any], where: str) -> ArchivedCommit | None:
    """A HoodieArchivedMetaEntry of a completed writing instant, or None."""
    action = _writing_action(record.get("actionType"))
    if action is None or (record.get("actionState") or "COMPLETED") != "COMPLETED":
        return None
    requested = record.get("commitTime") or ""
    metadata = record.get(_COMMIT_FIELDS[action.value])
    if not requested or not isinstance(metadata, dict):
        return None
    source = f"{where} (instant {requested})"
    return ArchivedCommit(Instant(requested, action, State.COMPLETED, None), CommitMetadata.from_dict(source, metadata))


def _writing_action(text: Any) -> Action | None:
    try:
        action = Action(text)
    except ValueError:
        return None
    return action if action.writes_data else None
