"""The file-system view: which files make up the table as of an instant.

Rules (reference section 2):
- a base file is visible when the instant that wrote it completed at or
  before the view's instant (or is older than the active timeline);
- files of pending or failed instants are never listed;
- file groups replaced by a completed replacecommit disappear;
- a pending compaction's base file is not visible; logs written against it
  are served with the slice before it;
- log files join slices by base instant (v6) or, on v8+, by the completion
  time of the delta commit that wrote them.
Times in `as_of` are requested instant times.
"""

from __future__ import annotations

import logging

import pyarrow as pa

from metadata.storage.listing import FILE_TABLE_SCHEMA, StorageListing
from metadata.storage.paths import StoredFile, join
from metadata.table.file_group import FileSlice
from metadata.table.file_naming import classify, file_id_of
from metadata.table.fs_view_building import ViewBuilding, paused_gc

log = logging.getLogger(__name__)

GROUP_SLICES_KEPT = 250_000  # file groups' latest slices a view keeps beyond whole partitions' (~300 bytes each)


class FileSystemView(ViewBuilding):
    """The view's queries: the latest file slices of partitions or of file groups."""

    def _base_only_latest_slices(self, partitions: list[str]) -> dict[str, list[FileSlice]]:
        """Latest slices of the partitions that hold base files only (no logs),
        in a view of the latest state with no pending compaction: the newest
        visible base file of each group that is not replaced, found without
        building file groups (most partitions of most tables; the general
        path below handles the rest, and any name that is not plainly
        `<fileId>_<token>_<instant><ext>` sends its partition there)."""
        if not partitions or not self._base_only_applies:
            return {}
        with paused_gc():
            listed = self.listing.files_for(partitions)
            return self._base_only_latest_slices_of({p: listed.get(p, []) for p in partitions})

    @property
    def _base_only_applies(self) -> bool:
        """Whether base-only partitions' slices may be found without file groups: the latest state, no pending compaction."""
        return self.is_latest and not self._pending_compactions

    def _base_only_latest_slices_of(self, listed: dict[str, list[StoredFile]],
                                    groups: dict[str, set[str]] | None = None) -> dict[str, list[FileSlice]]:
        """`_base_only_latest_slices` of listed files: each partition's, or
        (with `groups`) those of some of its file groups, all listed here."""
        if not self._base_only_applies:
            return {}
        extension = self.config.base_file_format.extension
        out: dict[str, list[FileSlice]] = {}
        for partition, files in listed.items():
            newest = self._newest_bases_by_name(partition, files, extension)
            if newest is None:
                continue
            if isinstance(self.listing, StorageListing) and self.check_committed_bases:
                self._check_newest_bases(partition, {fid: instant for fid, (instant, _) in newest.items()}, self.listing.storage,
                                         None if groups is None else groups[partition])
            out[partition] = [FileSlice(partition, fid, instant, f.relative_path, (), f.size, ())
                              for fid, (instant, f) in sorted(newest.items()) if (partition, fid) not in self._replaced]
        return out

    def _newest_bases_by_name(self, partition: str, files: list[StoredFile],
                              extension: str) -> dict[str, tuple[str, StoredFile]] | None:
        """File id -> (instant, file) of its newest visible base file, or None
        when a name needs the full parser (a log, or anything unusual)."""
        newest: dict[str, tuple[str, StoredFile]] = {}
        for f in files:
            name = f.relative_path.rpartition("/")[2]
            if not name.endswith(extension) or name[0] in "._":
                if classify(name, extension, f.relative_path) is not None:
                    return None  # a log file: the general path
                continue
            file_id, _, rest = name.partition("_")
            token, _, tail = rest.partition("_")
            instant = tail[: len(tail) - len(extension)]
            if not file_id or not token or "_" in tail or not instant.isdigit() or len(instant) < 14:
                return None  # let the parser name what is wrong
            if not self._is_visible_instant(instant):
                continue
            held = newest.get(file_id)
            if held is None or instant >= held[0]:  # a tie: the later name wins, as in the general path
                newest[file_id] = (instant, f)
        return newest

    # Public queries -----------------------------------------------------------
    def check_slices(self, slices: list[FileSlice]) -> None:
        """Raise MissingFileError where a visible commit wrote a newer base
        file for a slice's file group than the slice holds.

        A metadata-table partition dropped and built again keeps, on the
        timeline, the commits that wrote its old base files. The new build
        writes no base file for a file group no record routes to (as Hudi's
        does), so those old commits' bases are not owed: only commits from the
        partition's new `.hoodie_partition_metadata` on count. The file is
        read only when a base would otherwise be missing."""
        if not isinstance(self.listing, StorageListing):
            return
        for partition in sorted({s.partition for s in slices}):
            held = {s.file_id: s.base_instant if s.base_file else "" for s in slices if s.partition == partition}
            self._check_newest_bases(partition, held, self.listing.storage, set(held), since_made=True)

    def latest_file_slices_of_groups(self, groups: dict[str, set[str]], files: pa.Table | None = None) -> list[FileSlice]:
        """Latest slices of only these file groups (partition -> file ids), by
        partition then file id: a plan that has already ruled out most files
        builds only what is left. Partitions built before are served whole
        from their cache, and groups built before from theirs (up to
        GROUP_SLICES_KEPT: a warm planner's next predicate mostly keeps
        groups an earlier one kept). `files` (partition, fileName, size)
        holds every file of the groups when a caller listed them already
        (Spark tasks): the listing is not read, and nothing is kept."""
        out: list[FileSlice] = []
        with self._lock, paused_gc():
            groups = {p: ids for p, ids in groups.items() if ids}  # a plan's groups name every partition, most with none kept
            cached = {p: self._latest_slices[p] for p in groups if p in self._latest_slices}
            known = self._group_slices if files is None else {}
            missing = {p: ids - known[p].keys() if p in known else set(ids) for p, ids in groups.items() if p not in cached}
            built = self._slices_of_groups({p: ids for p, ids in missing.items() if ids}, files) if any(missing.values()) else {}
            if files is None:
                self._keep_group_slices(built)
            for partition in sorted(groups):
                if partition in cached:
                    out += [s for s in cached[partition] if s.file_id in groups[partition]]
                    continue
                held, fresh = known.get(partition, {}), built.get(partition, {})
                found = (fresh[fid] if fid in fresh else held.get(fid) for fid in sorted(groups[partition]))
                out += [s for s in found if s is not None]
        return out

    def _keep_group_slices(self, built: dict[str, dict[str, FileSlice | None]]) -> None:
        """Keeps groups' latest slices (None: no slice) for the next plans, while fewer than GROUP_SLICES_KEPT are kept."""
        for partition, slices in built.items():
            if self._group_slices_kept + len(slices) > GROUP_SLICES_KEPT:
                return
            self._group_slices.setdefault(partition, {}).update(slices)
            self._group_slices_kept += len(slices)

    def _slices_of_groups(self, groups: dict[str, set[str]], files: pa.Table | None) -> dict[str, dict[str, FileSlice | None]]:
        """Each of these groups' latest slice (None: it has none in this view), built from the listing or from `files`."""
        todo = sorted(p for p in groups if groups[p])
        if files is None:
            names_of = self.listing.file_names_for(todo) if todo else {}
        else:
            names_of = {}
            for p, name, size in zip(*(files.column(c).to_pylist() for c in FILE_TABLE_SCHEMA.names)):
                if p in groups:
                    names_of.setdefault(p, {})[name] = size
        # StoredFiles for the wanted groups' files only (a plan keeps ~1% of them)
        unbuilt = set(todo)  # a set: a plan over 100,000 partitions tests each of them
        listed = {p: [StoredFile(join(p, name), size) for name, size in sorted(names.items()) if file_id_of(name) in groups[p]]
                  for p, names in names_of.items() if p in unbuilt}
        direct = self._base_only_latest_slices_of(listed, groups)
        general = [p for p in todo if p not in direct]  # what the general path builds needs its inputs read
        ghosts, attributed, pending_groups = self._build_inputs(general) if general else ({}, {}, {})
        out: dict[str, dict[str, FileSlice | None]] = {}
        for partition in todo:
            if partition in direct:
                slices = direct[partition]
            elif partition in listed:
                slices = self._latest_of(self._build_groups(partition, listed[partition], ghosts.get(partition, {}), attributed,
                                                            pending_groups, only=groups[partition]))
            else:
                slices = []
            out[partition] = {**dict.fromkeys(groups[partition]), **{s.file_id: s for s in slices}}
        return out

    def latest_file_slices(self, partitions: list[str] | None = None) -> list[FileSlice]:
        """By partition, then file id; each partition's slices are built once
        per view (the view is one fixed state, slices are immutable)."""
        names = sorted(set(self._candidate_partitions() if partitions is None else partitions))
        with self._lock:
            missing = [p for p in names if p not in self._latest_slices]
        if missing:
            with self._lock:
                direct = self._base_only_latest_slices([p for p in missing if p not in self._groups_cache])
                self._latest_slices.update(direct)
            for partition, groups in self._file_groups_for([p for p in missing if p not in direct]).items():
                built = self._latest_of(groups)
                with self._lock:
                    self._latest_slices[partition] = built
        with self._lock:
            return [s for p in names for s in self._latest_slices[p]]
