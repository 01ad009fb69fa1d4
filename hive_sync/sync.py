"""Hive sync: one planner of what to change, any executor to change it.

`plan_sync` reads the metastore (never writes) and returns a `SyncPlan`:
per Hive table, whether to create it, which columns to add or widen, which
table properties to set, and the partition events. `apply_sync` carries the
plan out in an order that keeps the metastore readable at every step and
lets a run that died midway be completed by the next one:

1. database, then table creation or schema change (cascading to partitions)
   with every property except the last-synced marker;
2. partition drops, adds and location updates, `batch_size` per call;
3. the marker, only after every partition change succeeded.

A table created without a marker gets a full diff on the next run; a marker
that did not move makes the next run look at the same instants again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from hive_sync.client import MetastoreClient
from hive_sync.errors import SyncError
from hive_sync.model import MARKER_KEYS, HivePartition, PartitionValues, RegisteredTable, TableDefinition
from hive_sync.partition_events import EventKind, PartitionEvent, changed_partitions, diff_partitions, partition_values, same_location
from hive_sync.schema import SchemaChange, schema_change
from hive_sync.target import SyncOptions, sync_marker, table_definitions
from metadata import HudiTable

log = logging.getLogger(__name__)
T = TypeVar("T")

# Called after each metastore write: (what was done, how many items).
Progress = Callable[[str, int], None]


@dataclass(frozen=True)
class TablePlan:
    definition: TableDefinition
    create: bool
    schema: SchemaChange
    params: dict[str, str]  # non-marker table properties to set
    storage_changed: bool  # location, formats or serde parameters differ
    events: tuple[PartitionEvent, ...]
    marker: dict[str, str]  # marker properties to set last
    full_diff: bool

    @property
    def alters_table(self) -> bool:
        return not self.create and (not self.schema.is_empty or bool(self.params) or self.storage_changed)

    @property
    def is_noop(self) -> bool:
        return not self.create and not self.alters_table and not self.events and not self.marker

    def events_of(self, kind: EventKind) -> list[PartitionEvent]:
        return [e for e in self.events if e.kind is kind]

    def to_dict(self) -> dict[str, Any]:
        return {
            "table": self.definition.qualified_name,
            "create": self.create,
            "added_columns": [f"{c.name} {c.type}" for c in self.schema.added],
            "changed_columns": [f"{c.name} {old} -> {c.type}" for c, old in self.schema.changed],
            "properties": sorted(self.params),
            "storage_changed": self.storage_changed,
            "full_diff": self.full_diff,
            "partitions": {kind.value: [e.partition for e in self.events_of(kind)] for kind in EventKind},
            "marker": self.marker,
        }


@dataclass(frozen=True)
class SyncPlan:
    base_uri: str
    database: str
    create_database: bool
    tables: tuple[TablePlan, ...]

    @property
    def is_noop(self) -> bool:
        return not self.create_database and all(t.is_noop for t in self.tables)

    def to_dict(self) -> dict[str, Any]:
        return {
            "base_uri": self.base_uri,
            "database": self.database,
            "create_database": self.create_database,
            "noop": self.is_noop,
            "tables": [t.to_dict() for t in self.tables],
        }


@dataclass(frozen=True)
class SyncResult:
    plan: SyncPlan
    applied: bool
    calls: dict[str, int] = field(default_factory=dict)  # metastore calls made, by method

    def to_dict(self) -> dict[str, Any]:
        return {**self.plan.to_dict(), "applied": self.applied, "metastore_calls": self.calls}


def _batches(items: Sequence[T], size: int) -> Iterator[Sequence[T]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _registered_partitions(
    client: MetastoreClient, definition: TableDefinition, changed: set[str] | None, table: HudiTable, batch_size: int
) -> dict[PartitionValues, str]:
    """All partitions for a full diff, else only the changed ones (batched)."""
    if changed is None:
        return client.list_partitions(definition.database, definition.name)
    wanted = [partition_values(table, p) for p in sorted(changed)]
    found: dict[PartitionValues, str] = {}
    for batch in _batches(wanted, batch_size):
        found.update(client.get_partitions(definition, batch))
    return found


def _differs(wanted: dict[str, str], have: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in wanted.items() if have.get(k) != v}


def _plan_table(table: HudiTable, client: MetastoreClient, definition: TableDefinition, options: SyncOptions,
                marker: dict[str, str], database_exists: bool) -> TablePlan:
    registered: RegisteredTable | None = client.get_table(definition.database, definition.name) if database_exists else None
    if registered is None:
        events = diff_partitions(table, {}, None)
        return TablePlan(definition, True, SchemaChange([], []), dict(definition.table_params), False, tuple(events), marker, True)
    wanted_keys = [c.name.lower() for c in definition.partition_columns]
    have_keys = [c.name.lower() for c in registered.partition_columns]
    if wanted_keys != have_keys:
        raise SyncError(
            f"{definition.qualified_name}: partition columns are ({', '.join(have_keys)}) in the metastore but "
            f"({', '.join(wanted_keys)}) in the Hudi table; a sync cannot repartition a Hive table"
        )
    change = schema_change(list(registered.columns), list(definition.columns), definition.qualified_name)
    params = _differs(definition.table_params, registered.params)
    storage_changed = (
        not same_location(registered.location, definition.location)
        or registered.input_format != definition.input_format
        or bool(_differs(definition.serde_params, registered.serde_params))
    )
    changed = None if options.full else changed_partitions(table, registered.last_synced, registered.last_synced_completion)
    in_metastore = _registered_partitions(client, definition, changed, table, options.batch_size) if table.config.is_partitioned else {}
    events = diff_partitions(table, in_metastore, changed)
    new_marker = _differs(marker, registered.params)
    return TablePlan(definition, False, change, params, storage_changed, tuple(events), new_marker, changed is None)


def plan_sync(table: HudiTable, client: MetastoreClient, options: SyncOptions) -> SyncPlan:
    """What a sync would change; reads the metastore, writes nothing.
    Schema changes a metastore cannot follow raise here, before any write."""
    definitions = table_definitions(table, options)
    if not client.accepts_spark_properties and options.datasource_properties:
        raise SyncError(
            f"{client.describe()} refuses table properties starting with 'spark.sql.' (Spark's Thrift server does), "
            "so the Spark DataSource properties cannot be set through it. Give the metastore URI (--metastore-uri "
            "thrift://host:port) to set them through the metastore's Thrift API, or register plain Hive tables "
            "(--no-datasource-properties)."
        )
    database_exists = client.database_exists(options.database)
    if not database_exists and not options.create_database:
        raise SyncError(f"database {options.database} does not exist in the metastore (allow creating it to sync)")
    marker = sync_marker(table)
    plans = [_plan_table(table, client, d, options, marker, database_exists) for d in definitions]
    return SyncPlan(table.base_uri, options.database, not database_exists, tuple(plans))


def _apply_table(client: MetastoreClient, plan: TablePlan, batch_size: int, progress: Progress) -> None:
    definition = plan.definition
    if plan.create:
        client.create_table(definition)
        progress(f"created {definition.qualified_name}", 0)
    elif plan.alters_table:
        cascade = not plan.schema.is_empty and bool(definition.partition_columns)
        client.alter_table(definition, plan.params, cascade)
        progress(f"altered {definition.qualified_name}", 0)
    drops = [e.values for e in plan.events_of(EventKind.DROP)]
    for batch in _batches(drops, batch_size):
        client.drop_partitions(definition, batch)
        progress(f"dropped partitions of {definition.qualified_name}", len(batch))
    for kind, write in ((EventKind.ADD, client.add_partitions), (EventKind.UPDATE, client.alter_partitions)):
        partitions = [HivePartition(e.values, e.location) for e in plan.events_of(kind)]
        for part_batch in _batches(partitions, batch_size):
            write(definition, part_batch)
            progress(f"{kind.value.lower()} partitions of {definition.qualified_name}", len(part_batch))
    if plan.marker:
        client.set_table_params(definition.database, definition.name, plan.marker)
        progress(f"marked {definition.qualified_name} synced to {plan.marker.get(MARKER_KEYS[0])}", 0)


def apply_sync(client: MetastoreClient, plan: SyncPlan, batch_size: int, progress: Progress | None = None) -> None:
    report = progress or (lambda _what, _count: None)
    if plan.create_database:
        client.create_database(plan.database)
        report(f"created database {plan.database}", 0)
    for table_plan in plan.tables:
        if not table_plan.is_noop:
            _apply_table(client, table_plan, batch_size, report)


def sync(table: HudiTable, client: MetastoreClient, options: SyncOptions, dry_run: bool = False,
         progress: Progress | None = None) -> SyncResult:
    """Plan and (unless `dry_run`) apply a sync; a no-op plan writes nothing."""
    plan = plan_sync(table, client, options)
    for table_plan in plan.tables:
        log.info("sync plan for %s: %s", table_plan.definition.qualified_name, table_plan.to_dict())
    if not dry_run and not plan.is_noop:
        apply_sync(client, plan, options.batch_size, progress)
    return SyncResult(plan, applied=not dry_run and not plan.is_noop, calls=dict(client.calls))
