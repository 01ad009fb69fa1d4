"""Where a table's bytes are: storage under a base path (local disks and
object stores through `pyarrow.fs`), and what is said about it.

- `storage`: `Storage` (bounded reads, writes that are whole or absent,
  links refused, request counts) and its paths;
- `options`: object-store configuration as the ecosystem spells it;
- `secrets`: the one redaction rule;
- `listing`, `spilled_listing`: listing files, in memory or spilled to disk.
"""

from metadata.storage.calls import (
    DEFAULT_TIMEOUT_SECONDS,
    LIST_PAGE,
    RETRY_ATTEMPTS,
    RangedFile,
    RequestCounts,
    default_timeout,
    describe_requests,
    retrying,
    set_default_timeout,
)
from metadata.storage.paths import StoredFile, hadoop_local_path, hadoop_uri, join, unsafe_reason
from metadata.storage.storage import OBJECT_STORES, Storage, remote_filesystem

__all__ = ["DEFAULT_TIMEOUT_SECONDS", "LIST_PAGE", "OBJECT_STORES", "RETRY_ATTEMPTS", "RangedFile", "RequestCounts", "Storage", "StoredFile",
           "default_timeout", "describe_requests", "hadoop_local_path", "hadoop_uri", "join", "remote_filesystem", "retrying",
           "set_default_timeout", "unsafe_reason"]
