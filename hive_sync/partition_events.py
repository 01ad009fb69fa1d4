"""Partition events a sync must apply (reference section 10).

After a first full sync, only partitions written or replaced by completed
instants after the last synced one are examined: present in the table and
absent from the metastore is ADD, a different location is UPDATE, gone from
the table but still in the metastore is DROP. When the last synced instant
is no longer on the active timeline (or was never synced), the whole table
is compared with the metastore.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from metadata import HudiTable
from metadata.storage.paths import hadoop_uri, join
from metadata.table.partition_path import HIVE_DEFAULT_PARTITION, format_partition_path, parse_partition_values
from metadata.timeline.instant import Action
from metadata.util.text_enum import TextEnum

log = logging.getLogger(__name__)


class EventKind(TextEnum):
    ADD = "ADD"
    UPDATE = "UPDATE"
    DROP = "DROP"


@dataclass(frozen=True)
class PartitionEvent:
    kind: EventKind
    partition: str
    values: tuple[str, ...]
    location: str


def table_location(table: HudiTable) -> str:
    """The base path as Hadoop (and so the metastore) writes it: a local
    path becomes absolute `file:/...` (a relative one would mean another
    folder to every other process), other URIs stay as they are."""
    return hadoop_uri(table.storage)


def same_location(a: str, b: str) -> bool:
    def normal(uri: str) -> str:
        uri = uri.rstrip("/")
        if uri.startswith("file://"):
            return uri[len("file://"):]
        return uri[len("file:"):] if uri.startswith("file:") else uri

    return normal(a) == normal(b)


def partition_location(table: HudiTable, partition: str) -> str:
    base = table_location(table)
    return join(base, partition) if partition else base


def partition_values(table: HudiTable, partition: str) -> tuple[str, ...]:
    config = table.config
    values = parse_partition_values(partition, config.partition_fields, config.hive_style_partitioning, config.url_encode_partitioning)
    return tuple(HIVE_DEFAULT_PARTITION if values[f] is None else str(values[f]) for f in config.partition_fields)


def changed_partitions(table: HudiTable, last_synced: str | None, last_synced_completion: str | None = None) -> set[str] | None:
    """Partitions touched after the marker; None when a full diff is needed.

    With a completion-time marker (v8+) "after" means completed after it,
    so a write that was pending at the last sync is not missed."""
    timeline = table.timeline
    first = timeline.first_active_time()
    if last_synced is None or first is None or (last_synced < first and timeline.has_archived_instants):
        return None
    by_completion = timeline.uses_completion_time and bool(last_synced_completion)
    touched: set[str] = set()
    for instant in timeline.completed():
        if by_completion:
            if (instant.completion_time or "") <= (last_synced_completion or ""):
                continue
        elif instant.requested_time <= last_synced:
            continue
        if instant.is_commit and timeline.is_empty(instant):
            log.warning("%s is empty: the partitions it touched are unknown; comparing every partition", timeline.instant_file(instant))
            return None
        if instant.is_commit:
            touched |= timeline.commit_metadata(instant).touched_partitions()
        elif instant.action is Action.CLEAN:
            touched |= timeline.clean_metadata(instant).deleted_partitions()
    return touched


def partition_events(
    table: HudiTable, in_metastore: dict[tuple[str, ...], str], last_synced: str | None, last_synced_completion: str | None = None
) -> list[PartitionEvent]:
    """Events that bring the metastore's partitions (values -> location) in step."""
    return diff_partitions(table, in_metastore, changed_partitions(table, last_synced, last_synced_completion))


def diff_partitions(table: HudiTable, in_metastore: dict[tuple[str, ...], str], changed: set[str] | None) -> list[PartitionEvent]:
    """Compare the metastore with the table: all partitions when `changed` is
    None, else only those. `in_metastore` needs to hold at least the changed
    partitions; an empty location means unknown and never triggers UPDATE."""
    if not table.config.is_partitioned:
        return []
    live = set(table.partitions()) if changed is None else {p for p in changed if table.file_slices(partition=p)}
    candidates = live | (changed or set())
    events: list[PartitionEvent] = []
    for partition in sorted(candidates):
        values = partition_values(table, partition)
        location = partition_location(table, partition)
        registered = in_metastore.get(values)
        if partition in live:
            if registered is None:
                events.append(PartitionEvent(EventKind.ADD, partition, values, location))
            elif registered and not same_location(registered, location):
                events.append(PartitionEvent(EventKind.UPDATE, partition, values, location))
        elif registered is not None:
            events.append(PartitionEvent(EventKind.DROP, partition, values, registered))
    if changed is None:
        config = table.config
        fields = config.partition_fields
        live_values = {partition_values(table, p) for p in live}
        for values, location in sorted(in_metastore.items()):
            if values not in live_values:
                path = format_partition_path(dict(zip(fields, values)), fields, config.hive_style_partitioning, config.url_encode_partitioning)
                events.append(PartitionEvent(EventKind.DROP, path, values, location))
    return events
