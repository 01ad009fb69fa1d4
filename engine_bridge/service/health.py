"""A table's health, in values the page draws and the API returns alike:
its timeline by action and state, its partitions and file sizes (small files,
skew), and its metadata table (partitions kept, lag, the last validate)."""

from __future__ import annotations

import threading
import time
from collections import Counter
from typing import Any

from engine_bridge.service.errors import ServiceError
from engine_bridge.service.registry import ServedTable
from metadata import HudiTable
from metadata.errors import HudiBridgeError, MetadataTableUnavailable
from metadata.storage.secrets import redact
from metadata.table.table_summary import table_summary, timeline_rows

SMALL_FILE_BYTES = 100 * 1024 * 1024  # Hudi's hoodie.parquet.small.file.limit default: below it, a writer adds to the file
SIZE_BUCKETS = ((1 << 20, "< 1 MiB"), (16 << 20, "1-16 MiB"), (64 << 20, "16-64 MiB"), (128 << 20, "64-128 MiB"),
                (256 << 20, "128-256 MiB"), (None, ">= 256 MiB"))


def size_bucket(size: int) -> str:
    return next(label for bound, label in SIZE_BUCKETS if bound is None or size < bound)


class HealthKeeper:
    """Each table's health, computed once per state of the table (its warm lister), and its last validate."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cache: dict[str, tuple[int, dict[str, Any]]] = {}
        self.last_validate: dict[str, dict[str, Any]] = {}

    def health(self, served: ServedTable) -> dict[str, Any]:
        lister = served.lister()
        with self._lock:
            held = self._cache.get(served.name)
        if held is not None and held[0] == id(lister):
            return held[1]
        try:
            found = compute_health(lister.table)
        except HudiBridgeError as exc:
            raise ServiceError.refused(exc) from None
        found["last_validate"] = self.last_validate.get(served.name)
        with self._lock:
            self._cache[served.name] = (id(lister), found)
        return found

    def validate(self, served: ServedTable) -> dict[str, Any]:
        """Run `table validate` on the table now and keep its answer for the page."""
        from expressions.index_expressions import SparkIndexExpressions
        from metadata.mdt.validate import validate_metadata

        started = time.time()
        try:
            table = HudiTable.open(served.entry.uri, use_metadata=False, storage_options=served.entry.storage_options)
            report = validate_metadata(table, index_expressions=SparkIndexExpressions()).to_dict()
        except MetadataTableUnavailable as exc:
            report = {"ok": False, "differences": [], "unavailable": redact(str(exc))}
        except HudiBridgeError as exc:
            raise ServiceError.refused(exc) from None
        report.update(at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)), seconds=round(time.time() - started, 3))
        with self._lock:
            self.last_validate[served.name] = report
            self._cache.pop(served.name, None)
        return report


def compute_health(table: HudiTable) -> dict[str, Any]:
    timeline = timeline_rows(table)
    by_action: Counter[str] = Counter(f"{row['action']} {row['state'].lower()}" for row in timeline)
    slices = table.file_slices()
    partitions: dict[str, dict[str, int]] = {}
    sizes: Counter[str] = Counter(dict.fromkeys((label for _, label in SIZE_BUCKETS), 0))  # every bucket shown, empty ones too
    small = 0
    for piece in slices:
        held = partitions.setdefault(piece.partition, {"file_groups": 0, "bytes": 0})
        held["file_groups"] += 1
        held["bytes"] += piece.total_size
        if piece.base_file_size is not None:
            sizes[size_bucket(piece.base_file_size)] += 1
            small += piece.base_file_size < SMALL_FILE_BYTES
    biggest = max((p["bytes"] for p in partitions.values()), default=0)
    mean = sum(p["bytes"] for p in partitions.values()) / len(partitions) if partitions else 0
    return {
        "table": {**table_summary(table), "base_uri": redact(table.base_uri)},
        "timeline": timeline,
        "instants_by_action": dict(sorted(by_action.items())),
        "pending": [row for row in timeline if row["state"] != "COMPLETED"],
        "partitions": [{"partition": p, **held} for p, held in sorted(partitions.items())],
        "partition_count": len(partitions),
        "file_groups": len(slices),
        "base_file_sizes": [{"bucket": label, "files": sizes[label]} for _, label in SIZE_BUCKETS],
        "small_files": small,
        "skew": round(biggest / mean, 2) if mean else None,  # the largest partition over the mean
        "metadata_table": metadata_health(table),
    }


def metadata_health(table: HudiTable) -> dict[str, Any]:
    mdt = table.metadata_table
    kept = list(table.config.metadata_partitions)
    if mdt is None:
        return {"partitions": kept, "listing": table.listing_note, "behind": None, "behind_instants": []}
    behind = [i.requested_time for i in mdt.reader.unsynced_data_instants()]
    return {"partitions": kept, "listing": table.listing_note, "behind": len(behind), "behind_instants": behind}
