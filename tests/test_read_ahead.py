"""Ordered work a few items ahead (`metadata.util.read_ahead`): results in order,
never more than `depth` submitted ahead, what is queued cancelled when the
consumer stops, and `Ahead` starting its first items before it is asked."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from metadata.util.read_ahead import Ahead, read_ahead, threaded_map


@pytest.mark.parametrize("depth", [1, 2, 5])
def test_results_come_in_order_with_at_most_depth_ahead(depth: int) -> None:
    taken: list[int] = []
    started: list[int] = []

    def work(item: int) -> int:
        started.append(item)
        return item * item

    with ThreadPoolExecutor(2) as pool:
        for result in read_ahead(pool, range(12), work, depth):
            taken.append(result)
            assert len(started) <= len(taken) + depth  # submitted: those taken, and at most depth ahead
    assert taken == [i * i for i in range(12)]


def test_ahead_starts_its_first_items_when_made() -> None:
    release = threading.Event()
    started = threading.Semaphore(0)

    def work(item: int) -> int:
        started.release()
        release.wait(5)
        return -item

    with ThreadPoolExecutor(2) as pool:
        ahead = Ahead(pool, range(4), work, 2)
        assert started.acquire(timeout=5) and started.acquire(timeout=5)  # both running before anything was asked
        release.set()
        assert list(ahead) == [0, -1, -2, -3]


def test_closing_cancels_what_is_queued() -> None:
    gate = threading.Event()
    ran: list[int] = []

    def work(item: int) -> int:
        gate.wait(5)
        ran.append(item)
        return item

    with ThreadPoolExecutor(1) as pool:
        ahead = Ahead(pool, range(10), work, 3)  # one running, two queued
        ahead.close()
        gate.set()
    assert ran == [0]  # the queued two never ran, nor anything after them
    with ThreadPoolExecutor(1) as pool:
        assert list(Ahead(pool, [], work, 3)) == []


def test_threaded_map_keeps_the_order() -> None:
    assert threaded_map(range(9), str, 3) == [str(i) for i in range(9)]
