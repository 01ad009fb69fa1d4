"""One metadata-table writer of ours per table: a lock file naming its holder
and the metadata-table instants it has started and not finished.

The file is created exclusively (local file systems) under the data table's
`.hoodie/`, holds `pid@host since <time>` and a `pending <instant>` line for
each metadata-table instant the holder requested and has not completed, and
is removed when the writer finishes. That journal is how a later run knows
which pending instants are ours to roll back: any other pending instant
belongs to another writer (Hudi's), and is never touched.

A lock whose process is gone on this host (a killed writer) is taken over,
with a warning naming it: under a second exclusive file, the holder is read
again and the lock removed only if it is still the dead one, so two writers
cannot both take it; its pending instants become the new holder's to roll back,
and stay named in the new holder's journal until they are.
The file is read without following links, at most 64 KiB.
"""

from __future__ import annotations

import logging
import os
import re
import socket
import time
from types import TracebackType

from metadata.concurrency.locks import MAX_LOCK_FILE_BYTES, NOFOLLOW, read_lock_file
from metadata.errors import IndexLocked
from metadata.storage.storage import Storage
from metadata.util.process import process_alive

LOCK_PATH = ".hoodie/.hudi-bridge-index.lock"
TAKEOVER_SUFFIX = ".takeover"
PENDING = "pending "
log = logging.getLogger(__name__)


_HOLDER = re.compile(r"\d{1,10}@[A-Za-z0-9._-]{1,253}( since [0-9T:-]{1,32})?")


class WriterLock:
    def __init__(self, storage: Storage) -> None:
        self.storage = storage
        self.path = storage.full_path(LOCK_PATH)
        self.local = os.path.isdir(os.path.dirname(self.path))
        self._held = False
        self._me = ""
        self.pending: list[str] = []  # metadata-table instants this holder started and has not finished
        self.left_pending: list[str] = []  # those a dead holder left: ours to roll back

    def _read(self, path: str | None = None) -> str:
        """A lock file's text ("" when absent), never through a link and never more than 64 KiB."""
        if not self.local:
            try:
                return self.storage.read_bytes(LOCK_PATH, max_bytes=MAX_LOCK_FILE_BYTES).decode("utf-8", "replace").strip()
            except FileNotFoundError:
                return ""
        try:
            return read_lock_file(path or self.path)
        except FileNotFoundError:
            return ""
        except OSError as exc:  # a link (ELOOP) or something that is not a lock file
            raise IndexLocked(f"{path or self.path}: not a lock file hudi-bridge wrote ({exc.strerror or exc}); remove it if no writer runs") from None

    def _holder(self) -> str:
        return self._read().split("\n", 1)[0].strip()

    def acquire(self) -> None:
        self._me = f"{os.getpid()}@{socket.gethostname()} since {time.strftime('%Y-%m-%dT%H:%M:%S')}"
        if self.local:
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY | NOFOLLOW, 0o644)
            except FileExistsError:
                if not self._take_over_stale():
                    self._refuse()
                fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY | NOFOLLOW, 0o644)  # another taker won: FileExistsError
            with os.fdopen(fd, "w") as out:
                out.write(self._journal())
        else:  # object stores: no exclusive create; check, then write
            if self.storage.exists(LOCK_PATH):
                self._refuse()
            self.storage.write_bytes(LOCK_PATH, self._journal().encode())
        self._held = True

    def record_pending(self, instant_time: str) -> None:
        """Note a metadata-table instant before it is requested (so a kill leaves it named)."""
        self.pending.append(instant_time)
        self._rewrite()

    def record_done(self, instant_time: str) -> None:
        if instant_time in self.pending:
            self.pending.remove(instant_time)
            self._rewrite()

    def record_rolled_back(self) -> None:
        """The instants a dead holder left are rolled back: no longer ours to name."""
        if self.left_pending:
            self.left_pending = []
            self._rewrite()

    def _journal(self) -> str:
        # A dead holder's instants stay named until rolled back: were we killed before that, the next run
        # would otherwise take them for another writer's and leave them pending for ever.
        return "\n".join([self._me, *(PENDING + ts for ts in [*self.left_pending, *self.pending])]) + "\n"

    def _rewrite(self) -> None:
        if self._held:
            self.storage.write_bytes(LOCK_PATH, self._journal().encode())

    def _take_over_stale(self) -> bool:
        """Remove the lock if its holder is a process of this host that is gone; False if it is not stale."""
        text = self._read()
        holder = text.split("\n", 1)[0].strip()
        if not _is_dead_here(holder):
            return False
        takeover = self.path + TAKEOVER_SUFFIX
        try:
            fd = os.open(takeover, os.O_CREAT | os.O_EXCL | os.O_WRONLY | NOFOLLOW, 0o644)
        except FileExistsError:
            if not _is_dead_here(self._read(takeover)):
                return False  # another writer is taking it over now
            os.unlink(takeover)  # a taker that died mid-takeover
            return self._take_over_stale()
        try:
            with os.fdopen(fd, "w") as out:
                out.write(f"{os.getpid()}@{socket.gethostname()}\n")
            if self._holder() != holder:
                return False
            os.unlink(self.path)
            self.left_pending = [line[len(PENDING):].strip() for line in text.splitlines()[1:] if line.startswith(PENDING)]
            log.warning("%s: took over the index lock of process %s, which is no longer running (%s)", self.path, holder.split("@")[0], holder)
            return True
        finally:
            os.unlink(takeover)

    def _refuse(self) -> None:
        # Only a holder as we write it (`pid@host since time`) is shown: whoever can write the table can fill the
        # lock file with whatever it wants printed (someone's credentials, a terminal escape).
        holder = self._holder()
        shown = holder if _HOLDER.fullmatch(holder) else "a lock file not written by hudi-bridge" if holder else "holder unknown"
        raise IndexLocked(f"{self.path}: another index writer holds this table ({shown})")

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
