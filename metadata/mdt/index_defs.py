"""Index definitions (`.hoodie/.index_defs/index.json`, named by
`hoodie.table.index.defs.path`): which secondary and expression indexes a
table defines, on what, and in which version of Hudi's layout."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from metadata.errors import HudiFormatError, StoredFileNotFound
from metadata.storage.storage import Storage

INDEX_DEFS_KEY = "hoodie.table.index.defs.path"


def index_definitions(storage: Storage, raw_config: Mapping[str, str]) -> dict[str, dict[str, Any]]:
    """Index definitions (`hoodie.table.index.defs.path`), by index name."""
    path = raw_config.get(INDEX_DEFS_KEY)
    if not path:
        return {}
    try:
        data = json.loads(storage.read_bytes(path))
    except StoredFileNotFound:
        return {}
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise HudiFormatError(storage.full_path(path), f"index definitions are not JSON ({exc})") from None
    definitions = data.get("indexDefinitions", {}) if isinstance(data, dict) else {}
    return definitions if isinstance(definitions, dict) else {}


def routes_by_secondary_key(definition: Mapping[str, Any] | None) -> bool:
    """Whether a secondary index's records are routed to file groups by their
    `<escaped value>$` prefix (Hudi 1.1, definition version V2), so that a
    value's records live in one group. Hudi 1.0 (no version) routes by the
    whole key: a value's records may be in any group."""
    return definition is not None and str(definition.get("version", "")).upper() == "V2"
