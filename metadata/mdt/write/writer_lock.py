"""One metadata-table writer per table: a lock file naming its holder.

The file is created exclusively (local file systems) under the data table's
`.hoodie/`, holds `pid@host since <time>`, and is removed when the writer
finishes. A lock whose process is gone on this host (a killed writer) is
taken over, with a warning naming it: under a second exclusive file, the
holder is read again and the lock removed only if it is still the dead one,
so two writers cannot both take it.
"""

from __future__ import annotations

import logging
import os
import socket
import time
from types import TracebackType

from metadata.errors import IndexLocked
from metadata.process import process_alive
from metadata.storage import Storage

LOCK_PATH = ".hoodie/.hudi-bridge-index.lock"
TAKEOVER_SUFFIX = ".takeover"
log = logging.getLogger(__name__)


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
                if not self._take_over_stale():
                    self._refuse()
                fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)  # another taker won: FileExistsError
            with os.fdopen(fd, "w") as out:
                out.write(me + "\n")
        else:  # object stores: no exclusive create; check, then write
            if self.storage.exists(LOCK_PATH):
                self._refuse()
            self.storage.write_bytes(LOCK_PATH, (me + "\n").encode())
        self._held = True

    def _take_over_stale(self) -> bool:
        """Remove the lock if its holder is a process of this host that is gone; False if it is not stale."""
        holder = self._holder()
        if not _is_dead_here(holder):
            return False
        takeover = self.path + TAKEOVER_SUFFIX
        try:
            fd = os.open(takeover, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            with open(takeover, encoding="utf-8", errors="replace") as handle:
                if not _is_dead_here(handle.read().strip()):
                    return False  # another writer is taking it over now
            os.unlink(takeover)  # a taker that died mid-takeover
            return self._take_over_stale()
        try:
            with os.fdopen(fd, "w") as out:
                out.write(f"{os.getpid()}@{socket.gethostname()}\n")
            if self._holder() != holder:
                return False
            os.unlink(self.path)
            log.warning("%s: took over the index lock of process %s, which is no longer running (%s)", self.path, holder.split("@")[0], holder)
            return True
        finally:
            os.unlink(takeover)

    def _refuse(self) -> None:
        holder = self._holder()
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


def _is_dead_here(holder: str) -> bool:
    """Whether a lock's `pid@host ...` names a process of this host that is no longer running."""
    pid_text, _, rest = holder.partition("@")
    host = rest.split(" ", 1)[0]
    return pid_text.isdigit() and host == socket.gethostname() and not process_alive(int(pid_text))
