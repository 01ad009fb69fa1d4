"""Hudi's lock providers, taken as Hudi's writers take them, so that they and
we exclude each other: the same lock (file, znode), the same key, Hudi's wait.

- `FileSystemBasedLockProvider`: a file `lock` in `hoodie.write.lock.filesystem.path`
  (default the table's `.hoodie`), created exclusively; one older than
  `hoodie.write.lock.filesystem.expire` minutes (0: never) is taken as stale.
  Hudi refuses it on stores without an atomic create (S3, GCS): so do we.
- `ZookeeperBasedLockProvider`: Curator's `InterProcessMutex` at
  `<hoodie.write.lock.zookeeper.base_path>/<lock_key>` on the ensemble
  `hoodie.write.lock.zookeeper.url` names (as Curator's connect string); we take it through
  kazoo's lock recipe with Curator's node names (`..-lock-<sequence>`), so
  the two order their contenders alike.
- `HiveMetastoreBasedLockProvider`: an EXCLUSIVE table lock through the
  metastore's transaction API (`hms_lock`).
Other providers are refused in one line: writing the metadata table without
the lock the table's writers rely on would race them."""

from __future__ import annotations

import json
import logging
import os
import posixpath
import socket
import stat
import time
import uuid
from enum import Enum
from types import TracebackType
from typing import Any, Protocol

from metadata.concurrency.options import WriterOptions
from metadata.errors import HudiLockError
from metadata.storage.paths import join
from metadata.storage.storage import Storage

log = logging.getLogger(__name__)

FS_LOCK_PATH = "hoodie.write.lock.filesystem.path"
FS_LOCK_EXPIRE_MINUTES = "hoodie.write.lock.filesystem.expire"
ZK_URL = "hoodie.write.lock.zookeeper.url"
ZK_BASE_PATH = "hoodie.write.lock.zookeeper.base_path"
ZK_LOCK_KEY = "hoodie.write.lock.zookeeper.lock_key"
ZK_SESSION_TIMEOUT_MS = "hoodie.write.lock.zookeeper.session_timeout_ms"
ZK_CONNECTION_TIMEOUT_MS = "hoodie.write.lock.zookeeper.connection_timeout_ms"
LOCK_FILE_NAME = "lock"
MAX_LOCK_FILE_BYTES = 64 * 1024


class LockProvider(Enum):
    """`hoodie.write.lock.provider`'s classes."""

    FILE_SYSTEM = "org.apache.hudi.client.transaction.lock.FileSystemBasedLockProvider"
    ZOOKEEPER = "org.apache.hudi.client.transaction.lock.ZookeeperBasedLockProvider"
    IN_PROCESS = "org.apache.hudi.client.transaction.lock.InProcessLockProvider"
    HIVE_METASTORE = "org.apache.hudi.hive.transaction.lock.HiveMetastoreBasedLockProvider"
    STORAGE = "org.apache.hudi.client.transaction.lock.StorageBasedLockProvider"
    DYNAMODB = "org.apache.hudi.aws.transaction.lock.DynamoDBBasedLockProvider"

    @property
    def short_name(self) -> str:
        return self.value.rsplit(".", 1)[1]


class HudiLock(Protocol):
    """One of Hudi's locks, held across a metadata-table write."""

    def describe(self) -> str: ...

    def __enter__(self) -> HudiLock: ...

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None: ...


def hudi_lock(storage: Storage, options: WriterOptions, table_name: str, user_given: frozenset[str] = frozenset()) -> HudiLock | None:
    """The lock the table's writers are configured with (None: none is shared
    across processes). `user_given`: option keys the user gave (a lock path
    outside the table is taken only from them, never from the table's own files)."""
    name = options.lock_provider
    if name is None:
        return None
    try:
        provider = LockProvider(name)
    except ValueError:
        raise HudiLockError(f"hoodie.write.lock.provider={name}: a lock provider hudi-bridge does not know; the table's writers "
                            "rely on it, so hudi-bridge does not write beside them") from None
    if provider is LockProvider.IN_PROCESS:
        return None  # excludes threads of one JVM only: nothing another process can share
    if provider is LockProvider.FILE_SYSTEM:
        return FileSystemLock(storage, options, FS_LOCK_PATH in user_given)
    if provider is LockProvider.ZOOKEEPER:
        return ZooKeeperLock(options, table_name)
    if provider is LockProvider.HIVE_METASTORE:
        from metadata.concurrency.hms_lock import HiveMetastoreLock

        return HiveMetastoreLock(options)
    taken = ", ".join(p.short_name for p in (LockProvider.FILE_SYSTEM, LockProvider.ZOOKEEPER, LockProvider.HIVE_METASTORE))
    raise HudiLockError(f"hoodie.write.lock.provider={provider.short_name}: not supported by hudi-bridge yet (it takes {taken}); "
                        "the table's writers rely on it, so hudi-bridge does not write beside them")


class FileSystemLock:
    def __init__(self, storage: Storage, options: WriterOptions, path_given_by_user: bool) -> None:
        self.options = options
        folder = options.get(FS_LOCK_PATH)
        if folder is None:
            self.storage, self.relative = storage, join(".hoodie", LOCK_FILE_NAME)
        else:
            inside = _relative_inside(storage, folder)
            if inside is not None:
                self.storage, self.relative = storage, join(inside, LOCK_FILE_NAME)
            elif path_given_by_user:
                self.storage, self.relative = Storage.open(folder, storage_options=storage.storage_options), LOCK_FILE_NAME
            else:
                raise HudiLockError(f"{FS_LOCK_PATH}={folder}: the table's files put Hudi's lock outside the table; hudi-bridge "
                                    "writes nothing outside a table it did not get from you: give the option yourself to use it")
        if self.storage.is_object_store:
            raise HudiLockError(f"{self.storage.display_path(self.relative)}: {LockProvider.FILE_SYSTEM.short_name} needs a store "
                                "that creates a file atomically, which object stores do not (Hudi refuses it there too)")
        self.path = self.storage.full_path(self.relative)
        self.expire_seconds = options.integer(FS_LOCK_EXPIRE_MINUTES, 0) * 60
        self.owner = json.dumps({"owner": f"hudi-bridge {os.getpid()}@{socket.gethostname()}", "token": uuid.uuid4().hex,
                                 "lockCreateTime": time.strftime("%Y-%m-%d %H:%M:%S")})
        self._held = False

    def describe(self) -> str:
        return f"Hudi's file-system lock {self.path}"

    def __enter__(self) -> FileSystemLock:
        deadline = time.monotonic() + self.options.lock_wait_seconds
        while True:
            self._drop_if_expired()
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY | NOFOLLOW, 0o644)
            except FileExistsError:
                if time.monotonic() >= deadline:
                    raise HudiLockError(f"{self.describe()} is held ({_bounded_text(self.path) or 'holder unknown'}); waited "
                                        f"{self.options.lock_wait_seconds:g} s (hoodie.write.lock.wait_time_ms)") from None
                time.sleep(self.options.lock_retry_seconds)
                continue
            except FileNotFoundError:
                raise HudiLockError(f"{self.describe()}: its folder does not exist") from None
            with os.fdopen(fd, "w") as out:
                out.write(self.owner)
            self._held = True
            return self

    def _drop_if_expired(self) -> None:
        if self.expire_seconds <= 0:
            return
        try:
            age = time.time() - os.lstat(self.path).st_mtime
        except FileNotFoundError:
            return
        if age > self.expire_seconds:
            log.warning("%s: removing Hudi's expired lock (%.0f s old; hoodie.write.lock.filesystem.expire)", self.path, age)
            try:
                os.unlink(self.path)
            except FileNotFoundError:
                pass

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if not self._held:
            return
        self._held = False
        if _bounded_text(self.path) == self.owner:  # never another's: an expired lock may have been taken over
            os.unlink(self.path)


class ZooKeeperLock:
    def __init__(self, options: WriterOptions, table_name: str) -> None:
        self.options = options
        url, base = options.get(ZK_URL), options.get(ZK_BASE_PATH)
        if url is None or base is None:
            raise HudiLockError(f"{LockProvider.ZOOKEEPER.short_name} needs {ZK_URL} and {ZK_BASE_PATH}")
        # Hudi hands the URL to Curator as its connect string, port included: hoodie.write.lock.zookeeper.port
        # is not added to it (a host without a port is ZooKeeper's 2181), so we connect exactly where Hudi does.
        self.hosts = url
        self.path = posixpath.join(base if base.startswith("/") else "/" + base, options.get(ZK_LOCK_KEY, table_name) or table_name)
        self.session_seconds = options.integer(ZK_SESSION_TIMEOUT_MS, 60_000) / 1000.0
        self.connect_seconds = options.integer(ZK_CONNECTION_TIMEOUT_MS, 15_000) / 1000.0
        self._client: Any = None
        self._lock: Any = None

    def describe(self) -> str:
        return f"Hudi's ZooKeeper lock {self.path} on {self.hosts}"

    def __enter__(self) -> ZooKeeperLock:
        try:
            from kazoo.client import KazooClient
            from kazoo.exceptions import KazooException, LockTimeout
            from kazoo.handlers.threading import KazooTimeoutError
        except ImportError:
            raise HudiLockError(f"{self.describe()}: taking it needs kazoo (pip install kazoo)") from None
        client = KazooClient(hosts=self.hosts, timeout=self.session_seconds)
        try:
            client.start(timeout=self.connect_seconds)
        except KazooTimeoutError:
            client.close()
            raise HudiLockError(f"{self.describe()}: cannot connect in {self.connect_seconds:g} s "
                                "(hoodie.write.lock.zookeeper.connection_timeout_ms)") from None
        lock = _curator_mutex(client, self.path, f"hudi-bridge {os.getpid()}@{socket.gethostname()}")
        try:
            try:
                acquired = lock.acquire(timeout=self.options.lock_wait_seconds)
            except LockTimeout:
                acquired = False
            except KazooException as exc:
                raise HudiLockError(f"{self.describe()}: {type(exc).__name__} {exc}") from None
            if not acquired:
                raise HudiLockError(f"{self.describe()} is held; waited {self.options.lock_wait_seconds:g} s (hoodie.write.lock.wait_time_ms)")
        except HudiLockError:
            client.stop()
            client.close()
            raise
        self._client, self._lock = client, lock
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if self._client is None:
            return
        try:
            self._lock.release()
        finally:
            self._client.stop()
            self._client.close()
            self._client = self._lock = None


def _curator_mutex(client: Any, path: str, identifier: str) -> Any:
    """kazoo's lock whose nodes are named as Curator's InterProcessMutex names
    them (`_c_<uuid>-lock-<sequence>`): Curator orders contenders by the digits
    after `lock-`, kazoo by those after its node name, so both see one queue."""
    from kazoo.recipe.lock import Lock

    class CuratorMutex(Lock):
        _NODE_NAME = "-lock-"
        _EXCLUDE_NAMES = ["-lock-"]

    lock = CuratorMutex(client, path, identifier)
    lock.prefix = f"_c_{uuid.uuid4()}-lock-"
    lock.create_path = f"{path}/{lock.prefix}"
    return lock


NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def read_lock_file(path: str) -> str:
    """A local lock file's text, never through a link and at most 64 KiB:
    whoever can write a table can point its lock at anything. Raises
    FileNotFoundError when it is gone, OSError (ELOOP) for a link."""
    fd = os.open(path, os.O_RDONLY | NOFOLLOW | getattr(os, "O_NONBLOCK", 0))  # a FIFO planted there does not block the open
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):  # a device or FIFO: /dev/zero never ends
            raise OSError(f"{path} is not a regular file")
        return handle.read(MAX_LOCK_FILE_BYTES).decode("utf-8", "replace").strip()


def _bounded_text(path: str) -> str:
    """`read_lock_file`, "" when it cannot be read (gone, or a link)."""
    try:
        return read_lock_file(path)
    except OSError:
        return ""


def _relative_inside(storage: Storage, folder: str) -> str | None:
    """`folder` relative to the table's base when it lies inside it."""
    base = storage.uri.rstrip("/") if "://" in folder else storage.base_path.rstrip("/")
    folder = folder.rstrip("/")
    if "://" not in folder:
        folder = posixpath.normpath(folder.removeprefix("file:"))
    if folder == base:
        return ""
    return folder[len(base) + 1:] if folder.startswith(base + "/") and ".." not in folder.split("/") else None
