"""A storage call: how long it may take, how it is asked again when an
object store fails for a moment, and how it is counted (requests by kind
and bytes read, per table); `RangedFile` reads by ranges on those terms."""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import pyarrow.fs as pafs

from metadata.errors import TransientStorageError

log = logging.getLogger(__name__)
T = TypeVar("T")

# Remote calls give up after this long rather than hang (gs:// retries for 15
# minutes by default); the CLI's --timeout sets it.
DEFAULT_TIMEOUT_SECONDS = 30.0
_timeout_seconds = DEFAULT_TIMEOUT_SECONDS


def default_timeout() -> float:
    """The seconds a wait on storage (or on another writer) may take: the CLI's --timeout."""
    return _timeout_seconds


def set_default_timeout(seconds: float) -> None:
    """Timeout for filesystems Storage creates for s3:// and gs:// URIs."""
    global _timeout_seconds
    if seconds <= 0:
        raise ValueError("a timeout must be positive")
    _timeout_seconds = seconds


# What each storage call costs on an object store, by request kind (pyarrow may split a large
# listing or upload into more than one request; the tests' proxy counts those exactly).
REQUEST_KIND = {"read": "RANGED_GET", "open": "HEAD", "look up": "HEAD", "list": "LIST", "write": "PUT", "delete": "DELETE", "remove dir": "DELETE",
                 "create": "PUT"}


LIST_PAGE = 1000  # keys per answer of an object store's listing (S3, GCS and Azure alike)


class RequestCounts:
    """Storage requests by kind, and bytes read, of one table (its metadata table included)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.counts: dict[str, int] = {}
        self.bytes_read = 0

    def add(self, kind: str) -> None:
        with self._lock:
            self.counts[kind] = self.counts.get(kind, 0) + 1

    def add_bytes(self, count: int) -> None:
        with self._lock:
            self.bytes_read += count

    def snapshot(self) -> dict[str, int]:
        """Counts by kind, with `total` and `bytes_read`."""
        with self._lock:
            return {**dict(sorted(self.counts.items())), "total": sum(self.counts.values()), "bytes_read": self.bytes_read}

    @staticmethod
    def since(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
        return {k: after[k] - before.get(k, 0) for k in after if after[k] - before.get(k, 0)}


def describe_requests(requests: Mapping[str, int]) -> str:
    """`storage requests: 12 (HEAD 4, LIST 3, RANGED_GET 5); 24,224 bytes read`."""
    kinds = ", ".join(f"{k} {v}" for k, v in requests.items() if k not in ("total", "bytes_read"))
    return f"storage requests: {requests.get('total', 0)} ({kinds or 'none'}); {requests.get('bytes_read', 0):,} bytes read"


_TRANSIENT = ("SlowDown", "SLOW_DOWN", "503", "500 ", "INTERNAL_FAILURE", "NETWORK_CONNECTION", "ServiceUnavailable", "RequestTimeout",
              "Throttl", "Connection reset", "timed out", "Timeout", "Failed to flush response stream")
RETRY_ATTEMPTS = 6


def is_transient(text: str) -> bool:
    return any(marker in text for marker in _TRANSIENT)


def retrying(call: Callable[[], T]) -> T:
    """`call()`, again after a TransientStorageError with exponential backoff
    (0.1 s doubling, with jitter), at most RETRY_ATTEMPTS times and within
    the remote timeout (no attempt is started that the time left could not
    hold: a silent endpoint gives up after one); each retry is said on
    stderr; the last error is the one raised."""
    deadline = time.monotonic() + _timeout_seconds
    delay = 0.1
    for attempt in range(1, RETRY_ATTEMPTS + 1):
        started = time.monotonic()
        try:
            return call()
        except TransientStorageError as exc:
            now = time.monotonic()
            left = deadline - now
            if attempt == RETRY_ATTEMPTS or left < delay or now - started > left:  # another attempt like this one would overrun
                raise
            log.warning("%s; asking again (attempt %d of %d, %.0f s of the %g s timeout left)", exc, attempt + 1, RETRY_ATTEMPTS,
                        left, _timeout_seconds)
            time.sleep(delay * (0.5 + random.random()))
            delay *= 2
    raise AssertionError("unreachable")


class RangedFile:
    """A file read by `read_at` ranges: each read counted and, on an object
    store, asked again when the store fails for a moment. On an object store
    a request costs a round trip, so a file under WHOLE_BELOW bytes is read in
    one request, and a miss reads at least WINDOW bytes (an HFile's trailer,
    index and file info sit together at its end; a block's header and its
    payload together); the tail and the last window are kept."""

    WHOLE_BELOW = 2 * 2**20
    WINDOW = 256 * 2**10

    def __init__(self, handle: pafs.NativeFile, guard: Callable[[Callable[[], Any]], Any], requests: RequestCounts,
                 windowed: bool) -> None:
        self._handle, self._guard, self._requests, self._windowed = handle, guard, requests, windowed
        self._size: int | None = None
        self._tail: tuple[int, bytes] | None = None
        self._last: tuple[int, bytes] | None = None

    def _fetch(self, length: int, offset: int) -> bytes:
        self._requests.add("RANGED_GET")
        data = self._guard(lambda: self._handle.read_at(length, offset))
        self._requests.add_bytes(len(data))
        return bytes(data)

    def read_at(self, length: int, offset: int) -> bytes:
        if not self._windowed:
            return self._fetch(length, offset)
        for window in (self._tail, self._last):
            if window is not None and window[0] <= offset and offset + length <= window[0] + len(window[1]):
                start = offset - window[0]
                return window[1] if start == 0 and length == len(window[1]) else window[1][start : start + length]
        size = self.size()
        if size <= self.WHOLE_BELOW:
            self._tail = (0, self._fetch(size, 0))
            return self._tail[1][offset : offset + length]
        if offset + length > size - self.WINDOW:  # the tail: trailer, index, file info
            start = min(offset, size - self.WINDOW)
            self._tail = (start, self._fetch(size - start, start))
            return self._tail[1][offset - start : offset - start + length]
        end = min(size, offset + max(length, self.WINDOW))
        self._last = (offset, self._fetch(end - offset, offset))
        data = self._last[1]
        return data if length == len(data) else data[:length]

    def size(self) -> int:
        if self._size is None:
            self._size = int(self._guard(self._handle.size))
        return self._size

    def close(self) -> None:
        self._tail = self._last = None
        self._handle.close()

    def __enter__(self) -> RangedFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
