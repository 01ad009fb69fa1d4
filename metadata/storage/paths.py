"""Paths below a table's base, and as Hadoop names them: one place decides
what may leave the base (`unsafe_reason`), how relative parts join, and how
`file:` URIs map to local paths."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import unquote

if TYPE_CHECKING:
    from metadata.storage.storage import Storage


@dataclass(frozen=True)
class StoredFile:
    """One file found by a listing: its path relative to the base and size."""

    relative_path: str
    size: int

    @property
    def name(self) -> str:
        return self.relative_path.rpartition("/")[2]


def unsafe_reason(relative: str) -> str | None:
    """Why a path relative to a table base could leave it (None when it cannot):
    absolute, or with a `..` segment."""
    if relative.startswith("/") or "\\" in relative:
        return "is absolute or holds a backslash"
    if ".." in relative and ".." in relative.split("/"):
        return "has a '..' segment"
    return None


def join(*parts: str) -> str:
    """Join relative path parts, ignoring empty ones ("" is the base itself)."""
    if len(parts) == 2 and parts[0] and parts[1] and "/" not in (parts[0][-1], parts[1][0]):
        return f"{parts[0]}/{parts[1]}"  # the common case, on hot paths
    kept = [p.strip("/") for p in parts if p and p.strip("/")]
    return "/".join(kept)


def hadoop_uri(storage: Storage) -> str:
    """The folder as Hadoop (the metastore, Hive, Presto, Trino's "$path")
    names it: a local one `file:/absolute/path`, other URIs as they are."""
    base = storage.uri.rstrip("/")
    if "://" in base and not base.startswith("file://"):
        return base
    return "file:" + storage.base_path.rstrip("/")


def hadoop_local_path(path_or_uri: str) -> str:
    """A local path from `file:///x`, or `file:/x` as Hadoop and Spark's
    catalog write it (percent-encoded); other text is returned as it is."""
    if path_or_uri.startswith("file://"):
        return path_or_uri[len("file://"):]
    if path_or_uri.startswith("file:/"):
        return unquote(path_or_uri[len("file:"):])
    return path_or_uri


def normalise_local(path: str) -> str:
    return os.path.abspath(os.path.expanduser(path))
