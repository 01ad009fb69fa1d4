"""Ordered work on a thread pool, a few items ahead of the consumer: the
HFile reader inflates block groups this way, `scan()` reads file slices."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Executor, Future
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")


def read_ahead(pool: Executor, items: Iterable[T], work: Callable[[T], R], depth: int) -> Iterator[R]:
    """`work(item)` for each item, yielded in order, at most `depth` submitted
    ahead; what is still queued is cancelled when the consumer stops early."""
    queued = iter(items)
    ahead: deque[Future[R]] = deque()
    try:
        for item in queued:
            ahead.append(pool.submit(work, item))
            if len(ahead) >= depth:
                break
        while ahead:
            result = ahead.popleft().result()
            for item in queued:
                ahead.append(pool.submit(work, item))
                break
            yield result
    finally:
        for future in ahead:
            future.cancel()
