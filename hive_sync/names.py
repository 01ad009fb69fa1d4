"""Names as the metastore spells them, and HiveQL quoting.

Partition names (`k=v/k2=v2`) use Hive's path escaping, exactly as the
metastore stores them, so a batch drop by name finds hostile values too.
HiveQL identifiers go in backticks (a backtick doubled) and literals in
single quotes with backslash escapes, which both Hive and Spark SQL read
back verbatim; nothing a user names is pasted into a statement unquoted.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from hive_sync.errors import SyncError
from metadata.table.partition_path import escape_path_name

# Hive's MetaStoreUtils.validateName: database and table names are word characters.
_HIVE_NAME = re.compile(r"[A-Za-z0-9_]+")


def check_hive_name(name: str, what: str) -> str:
    """Refuse a name the metastore would refuse, before anything is written."""
    if not _HIVE_NAME.fullmatch(name):
        raise SyncError(f"{name!r} is not a valid Hive {what} name: the metastore takes letters, digits and underscores only")
    return name


def partition_name(keys: Sequence[str], values: Sequence[str]) -> str:
    """Hive's Warehouse.makePartName: lower-cased keys, escaped values."""
    return "/".join(f"{escape_path_name(k.lower())}={escape_path_name(v)}" for k, v in zip(keys, values))


def quote_identifier(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def qualified(database: str, table: str) -> str:
    return f"{quote_identifier(database)}.{quote_identifier(table)}"


_LITERAL_ESCAPES = {"\\": "\\\\", "'": "\\'", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\0": "\\0"}


def quote_literal(value: str) -> str:
    return "'" + "".join(_LITERAL_ESCAPES.get(c, c) for c in value) + "'"


def partition_spec(keys: Sequence[str], values: Sequence[str]) -> str:
    """`PARTITION (`k`='v', ...)`."""
    return "PARTITION (" + ", ".join(f"{quote_identifier(k)}={quote_literal(v)}" for k, v in zip(keys, values)) + ")"
