"""One metadata-table writer per table: a lock file naming its holder.

The file is created exclusively (local file systems) under the data table's
`.hoodie/`, holds `pid@host since <time>`, and is removed when the writer
finishes. A lock whose process is gone on this host is reported as stale,
with the file to remove; nothing takes a lock over silently.
"""

from __future__ import annotations

import os
import socket
import time
from types import TracebackType

from metadata.errors import IndexLocked
from metadata.process import process_alive
from metadata.storage import Storage

LOCK_PATH = ".hoodie/.hudi-bridge-index.lock"


class WriterLock:
    def __init__(self, storage: Storage) -> None:
        self.storage = storage
        self.path = storage.full_path(LOCK_PATH)
        self._held = False

    def _holder(self) -> str:
        try:
            return self.storage.read_bytes(LOCK_PATH).decode("utf-8", "replace").strip()
        except FileNotFoundError:
            return ""

    def acquire(self) -> None:
        me = f"{os.getpid()}@{socket.gethostname()} since {time.strftime('%Y-%m-%dT%H:%M:%S')}"
        local = os.path.isdir(os.path.dirname(self.path))
        if local:
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                self._refuse()
            with os.fdopen(fd, "w") as out:
                out.write(me + "\n")
        else:  # object stores: no exclusive create; check, then write
            if self.storage.exists(LOCK_PATH):
                self._refuse()
            self.storage.write_bytes(LOCK_PATH, (me + "\n").encode())
        self._held = True

    def _refuse(self) -> None:
        holder = self._holder()
        pid_text, _, rest = holder.partition("@")
        host = rest.split(" ", 1)[0]
        if pid_text.isdigit() and host == socket.gethostname() and not process_alive(int(pid_text)):
            raise IndexLocked(
                f"{self.path}: stale index lock left by process {pid_text} on this host, which is no longer running "
                f"({holder}); remove the file once no index build or sync runs on this table"
            )
        raise IndexLocked(f"{self.path}: another index writer holds this table ({holder or 'holder unknown'})")

    def release(self) -> None:
        if self._held:
            self._held = False
            try:
                self.storage.delete_file(LOCK_PATH)
            except FileNotFoundError:
                pass

    def __enter__(self) -> WriterLock:
        self.acquire()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.release()
