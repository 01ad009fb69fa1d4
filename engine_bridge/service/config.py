"""What `hudi-bridge serve` serves and within which limits: tables by name
(from a TOML or JSON file, `--table NAME=URI`, or a Hive metastore database)
and the limits that keep it safe on a network."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from metadata.errors import HudiBridgeError
from metadata.storage.secrets import remember_secrets, user_info_refusal

NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]{0,127}$")  # a table's name in URLs: no slash, nothing to escape


class ServiceConfigError(HudiBridgeError, ValueError):
    """A service configuration that cannot be served; the message names the entry."""


@dataclass(frozen=True)
class HiveTarget:
    """Where a served table is synced: the metastore, the database, and the Hive table's name (default: Hudi's)."""

    metastore: str
    database: str
    table: str | None = None
    skip_ro_suffix: bool = False

    @classmethod
    def parse(cls, spec: Any, where: str) -> HiveTarget:
        if not isinstance(spec, dict) or not isinstance(spec.get("metastore"), str) or not isinstance(spec.get("database"), str):
            raise ServiceConfigError(f'{where}: hive is {{metastore = "thrift://...", database = "...", table = "..." (optional)}}')
        return cls(spec["metastore"], spec["database"], spec.get("table"), bool(spec.get("skip_ro_suffix", False)))


@dataclass(frozen=True)
class TableEntry:
    name: str
    uri: str
    storage_options: Mapping[str, str] = field(default_factory=dict)
    hive: HiveTarget | None = None  # where it is synced: its Hive sync status is served


@dataclass(frozen=True)
class Limits:
    max_body_bytes: int = 1 << 20  # a request body
    max_filter_chars: int = 64 * 1024  # a filter's SQL text (or its JSON, encoded)
    plan_deadline_seconds: float = 60.0  # a synchronous plan answers 504 after this
    max_concurrent_plans: int = 4  # plans running at once (threads; planning holds the GIL for most of its time)
    max_queued_plans: int = 64  # plans waiting or running; beyond them: 429 with Retry-After
    page_size: int = 1000  # file slices per page of plan tasks, unless asked for fewer
    max_page_size: int = 10_000
    plans_kept: int = 64  # finished plans kept for paging, oldest dropped first
    plan_ttl_seconds: float = 900.0  # and none kept longer than this
    refresh_seconds: float = 1.0  # a table's timeline is looked at no more often than this
    answer_cache_entries: int = 256  # plans answered again from memory while their table is unchanged, per table
    answer_cache_slices: int = 200_000  # the file slices those answers name, in all (about 60 MiB held)


@dataclass(frozen=True)
class ServiceConfig:
    tables: tuple[TableEntry, ...]
    limits: Limits = Limits()

    def __post_init__(self) -> None:
        seen: set[str] = set()
        for entry in self.tables:
            if not NAME.match(entry.name):
                raise ServiceConfigError(f"table name {entry.name!r}: letters, digits, '_', '.', '-' only (it is part of URLs)")
            if entry.name in seen:
                raise ServiceConfigError(f"table name {entry.name!r} is given twice")
            refusal = user_info_refusal(entry.uri)
            if refusal:
                raise ServiceConfigError(f"table {entry.name!r}: {refusal}")
            seen.add(entry.name)
            remember_secrets(entry.storage_options)

    @classmethod
    def load(cls, path: str) -> ServiceConfig:
        """A TOML (`.toml`) or JSON file:
        [tables.trips] uri = "s3://bucket/trips", storage_options = {...}; [limits] max_concurrent_plans = 8."""
        source = Path(path)
        try:
            text = source.read_text()
        except OSError as exc:
            raise ServiceConfigError(f"{source.absolute()}: cannot read the service configuration ({exc.strerror})") from None
        try:
            if source.suffix != ".toml":
                document: Any = json.loads(text)
            elif sys.version_info < (3, 11):
                raise ServiceConfigError(f"{source.absolute()}: reading TOML needs Python 3.11 or later; give the configuration as JSON")
            else:
                import tomllib

                document = tomllib.loads(text)
        except ValueError as exc:
            raise ServiceConfigError(f"{source.absolute()}: {exc}") from None
        return cls.from_document(document, str(source.absolute()), source.parent.absolute())

    @classmethod
    def from_document(cls, document: Any, where: str, relative_to: Path) -> ServiceConfig:
        if not isinstance(document, dict) or not isinstance(document.get("tables", {}), dict):
            raise ServiceConfigError(f"{where}: expected a [tables] table of name = {{uri = ...}}")
        entries = []
        for name, spec in document.get("tables", {}).items():
            if isinstance(spec, str):
                spec = {"uri": spec}
            if not isinstance(spec, dict) or not isinstance(spec.get("uri"), str):
                raise ServiceConfigError(f"{where}: table {name!r} needs a uri")
            options = spec.get("storage_options", {})
            if not isinstance(options, dict):
                raise ServiceConfigError(f"{where}: table {name!r}: storage_options is a table of strings")
            hive = HiveTarget.parse(spec["hive"], f"{where}: table {name!r}") if "hive" in spec else None
            entries.append(TableEntry(name, absolute_uri(spec["uri"], relative_to), {str(k): str(v) for k, v in options.items()}, hive))
        metastore = document.get("metastore")
        if metastore is not None:  # [metastore] uri = "thrift://...", databases = ["db"]: every Hudi table of those databases
            if not isinstance(metastore, dict) or not isinstance(metastore.get("uri"), str) or not isinstance(metastore.get("databases"), list):
                raise ServiceConfigError(f'{where}: metastore is {{uri = "thrift://...", databases = ["db", ...]}}')
            for database in metastore["databases"]:
                entries += tables_of_database(metastore["uri"], str(database))
        limits = document.get("limits", {})
        known = set(Limits.__dataclass_fields__)
        if not isinstance(limits, dict) or set(limits) - known:
            raise ServiceConfigError(f"{where}: unknown limits {sorted(set(limits) - known) if isinstance(limits, dict) else limits!r}; "
                                     f"known: {', '.join(sorted(known))}")
        return cls(tuple(entries), Limits(**limits))


def absolute_uri(uri: str, relative_to: Path) -> str:
    """A URI as given, or a local path made absolute (relative to the configuration file's folder)."""
    if "://" in uri or uri.startswith("file:"):
        return uri
    return str((relative_to / uri).absolute())


HUDI_INPUT_FORMATS = ("org.apache.hudi.hadoop.HoodieParquetInputFormat", "org.apache.hudi.hadoop.realtime.HoodieParquetRealtimeInputFormat",
                      "org.apache.hudi.hadoop.HoodieParquetInputFormatBase", "com.uber.hoodie.hadoop.HoodieInputFormat")


def is_hudi(params: Mapping[str, str], input_format: str) -> bool:
    return input_format in HUDI_INPUT_FORMATS or params.get("spark.sql.sources.provider", "").lower() == "hudi"


def tables_of_database(metastore: str, database: str) -> list[TableEntry]:
    """Every Hudi table of `database`, named `database.table`; a table's `_ro`/`_rt` pair is served once (by the
    name without the suffix when there is one, else `_rt`'s)."""
    from hive_sync.hms import HmsClient

    try:
        with HmsClient(metastore) as client:
            found: dict[str, str] = {}
            for name in client.list_tables(database):
                registered = client.get_table(database, name)
                if registered is None or not registered.location or not is_hudi(registered.params, registered.input_format):
                    continue
                held = found.get(registered.location)
                if held is None or _preferred(name, held):
                    found[registered.location] = name
    except HudiBridgeError as exc:
        raise ServiceConfigError(f"tables of {database} in {metastore}: {exc}") from None
    return [TableEntry(f"{database}.{name}", location, hive=HiveTarget(metastore, database, _base_name(name)))
            for location, name in sorted(found.items(), key=lambda item: item[1])]


def _base_name(name: str) -> str:
    return name[:-3] if name.endswith(("_ro", "_rt")) else name


def _rank(name: str) -> int:
    return 0 if not name.endswith(("_ro", "_rt")) else 1 if name.endswith("_rt") else 2


def _preferred(name: str, held: str) -> bool:
    return _rank(name) < _rank(held)
