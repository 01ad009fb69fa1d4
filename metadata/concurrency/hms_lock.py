"""Hudi's `HiveMetastoreBasedLockProvider`, taken as Hudi takes it: an
EXCLUSIVE lock at TABLE level on `hoodie.write.lock.hivemetastore.database`
and `.table`, asked of the metastore at `hoodie.write.lock.hivemetastore.uris`
through its transaction API (`lock`, `heartbeat`, `unlock`).

As Hudi's provider, a request the metastore only queues (WAITING) is taken
back at once (`unlock`) and asked again after Hudi's retry wait, until
`hoodie.write.lock.wait_time_ms`; so a queued request of ours never holds up
Hudi's writers. A held lock is kept alive by heartbeats every half of
`hoodie.write.lock.heartbeat_interval_ms`, on a connection of their own (a
Thrift client is not shared across threads): a metastore times out a lock
that is not heartbeated (`hive.txn.timeout`, 300 s by default)."""

from __future__ import annotations

import logging
import socket
import threading
import time
from types import TracebackType
from typing import Any
from urllib.parse import urlparse

from metadata.concurrency.options import WriterOptions
from metadata.errors import HudiLockError
from metadata.storage.secrets import redact
from metadata.util.process import running_user

log = logging.getLogger(__name__)

HMS_DATABASE = "hoodie.write.lock.hivemetastore.database"
HMS_TABLE = "hoodie.write.lock.hivemetastore.table"
HMS_URIS = "hoodie.write.lock.hivemetastore.uris"
HEARTBEAT_INTERVAL_MS = "hoodie.write.lock.heartbeat_interval_ms"
DEFAULT_HEARTBEAT_INTERVAL_MS = 60_000
CONNECT_TIMEOUT_MS = 30_000


def _connect(uri: str) -> Any:
    """A Thrift client of the metastore at `thrift://host:port`."""
    from hmsclient import HMSClient
    from thrift.protocol import TBinaryProtocol
    from thrift.transport import TSocket, TTransport

    parsed = urlparse(uri)
    if parsed.scheme != "thrift" or not parsed.hostname:
        raise HudiLockError(f"{HMS_URIS}={uri}: expected thrift://host:port")
    sock = TSocket.TSocket(parsed.hostname, parsed.port or 9083)
    sock.setTimeout(CONNECT_TIMEOUT_MS)
    protocol = TBinaryProtocol.TBinaryProtocol(TTransport.TBufferedTransport(sock))
    client = HMSClient(iprot=protocol, oprot=protocol)
    client.open()
    return client


class HiveMetastoreLock:
    def __init__(self, options: WriterOptions) -> None:
        self.options = options
        database, table, uris = options.get(HMS_DATABASE), options.get(HMS_TABLE), options.get(HMS_URIS)
        if not database or not table:
            raise HudiLockError(f"HiveMetastoreBasedLockProvider needs {HMS_DATABASE} and {HMS_TABLE}")
        if not uris:
            raise HudiLockError(f"HiveMetastoreBasedLockProvider: give {HMS_URIS} (hudi-bridge reads no hive-site.xml)")
        self.database, self.table = database, table
        self.uri = uris.split(",")[0].strip()  # Hudi's client takes the first that answers; so do we, the first
        self.heartbeat_seconds = max(options.integer(HEARTBEAT_INTERVAL_MS, DEFAULT_HEARTBEAT_INTERVAL_MS), 1000) / 2000.0
        self._client: Any = None
        self._lock_id: int | None = None
        self._stop = threading.Event()
        self._heartbeats: threading.Thread | None = None
        self.lost: str | None = None  # why the metastore took the lock away, if it did

    def describe(self) -> str:
        return f"Hudi's Hive metastore lock on {self.database}.{self.table} at {redact(self.uri)}"

    def _request(self) -> Any:
        from hmsclient.genthrift.hive_metastore import ttypes

        component = ttypes.LockComponent(type=ttypes.LockType.EXCLUSIVE, level=ttypes.LockLevel.TABLE, dbname=self.database,
                                         tablename=self.table)
        return ttypes.LockRequest(component=[component], user=running_user() or "hudi-bridge", hostname=socket.gethostname(), agentInfo="hudi-bridge")

    def __enter__(self) -> HiveMetastoreLock:
        from hmsclient.genthrift.hive_metastore import ttypes
        from thrift.Thrift import TException

        try:
            self._client = _connect(self.uri)
            deadline = time.monotonic() + self.options.lock_wait_seconds
            while True:
                response = self._client.lock(self._request())
                if response.state == ttypes.LockState.ACQUIRED:
                    self._lock_id = response.lockid
                    break
                self._client.unlock(ttypes.UnlockRequest(lockid=response.lockid))  # queued only: taken back, as Hudi does, and asked again
                if time.monotonic() >= deadline:
                    raise HudiLockError(f"{self.describe()} is held; waited {self.options.lock_wait_seconds:g} s "
                                        "(hoodie.write.lock.wait_time_ms)")
                time.sleep(self.options.lock_retry_seconds)
        except (TException, OSError) as exc:
            self._close()
            message = getattr(exc, "message", None) or str(exc) or type(exc).__name__
            raise HudiLockError(f"{self.describe()}: {message}") from None
        except HudiLockError:
            self._close()
            raise
        self._heartbeats = threading.Thread(target=self._beat, name="hms-lock-heartbeat", daemon=True)
        self._heartbeats.start()
        return self

    def _beat(self) -> None:
        from hmsclient.genthrift.hive_metastore import ttypes
        from thrift.Thrift import TException

        try:
            client = _connect(self.uri)
        except (TException, OSError) as exc:
            self.lost = f"heartbeats cannot reach the metastore ({exc})"
            return
        try:
            while not self._stop.wait(self.heartbeat_seconds):
                try:
                    client.heartbeat(ttypes.HeartbeatRequest(lockid=self._lock_id))
                except (ttypes.NoSuchLockException, ttypes.TxnAbortedException) as exc:
                    self.lost = f"the metastore dropped the lock ({exc.message})"
                    return
                except (TException, OSError):
                    continue  # a dropped heartbeat: the metastore's timeout is several of them
        finally:
            client.close()

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        from hmsclient.genthrift.hive_metastore import ttypes
        from thrift.Thrift import TException

        self._stop.set()
        if self._heartbeats is not None:
            self._heartbeats.join(timeout=10)
        if self.lost is not None:
            log.warning("%s: %s while it was held (Hudi's provider fails its writer then)", self.describe(), self.lost)
        try:
            if self._lock_id is not None and self.lost is None:
                self._client.unlock(ttypes.UnlockRequest(lockid=self._lock_id))
        except (TException, OSError):
            pass  # the metastore times the lock out without heartbeats
        finally:
            self._close()

    def _close(self) -> None:
        if self._client is not None:
            try:
                self._client.close()
            except OSError:
                pass
        self._client, self._lock_id = None, None
