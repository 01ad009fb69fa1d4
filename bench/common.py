"""Helpers shared by the benchmarks: timing, peak memory, the JSON report."""

from __future__ import annotations

import json
import multiprocessing
import os
import resource
import sys
import threading
import time
import tracemalloc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from queue import Empty
from typing import Any, TypeVar

T = TypeVar("T")


@contextmanager
def measured(report: dict[str, Any], name: str, trace_memory: bool = True) -> Iterator[None]:
    """Record seconds (and Python heap peak in MiB) of a block under `name`."""
    if trace_memory:
        tracemalloc.start()
    start = time.perf_counter()
    try:
        yield
    finally:
        report[f"{name}_seconds"] = round(time.perf_counter() - start, 4)
        if trace_memory:
            report[f"{name}_peak_heap_mib"] = round(tracemalloc.get_traced_memory()[1] / 2**20, 2)
            tracemalloc.stop()


def finish(report: dict[str, Any]) -> None:
    report["process_max_rss_mib"] = round(peak_rss_mib(), 1)
    json.dump(report, sys.stdout, indent=2)
    sys.stdout.write("\n")


def progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def peak_rss_mib() -> float:
    """This process's peak RSS in MiB. On Linux from /proc (VmHWM): ru_maxrss
    keeps, across the exec that starts a fresh interpreter, the peak of the
    process forked from, so a child of a bench that built a table in the same
    run would report the build's memory."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _child(call: Any, queue: Any) -> None:
    start = time.perf_counter()
    result = call()
    seconds = time.perf_counter() - start
    queue.put((result, seconds, peak_rss_mib()))


def in_fresh_process(call: Callable[[], T]) -> tuple[T, float, float]:
    """Run `call` (picklable: a module-level function or a partial of one) in a
    new interpreter: (its result, seconds, that process's peak RSS in MiB).
    The child imports the bench's modules before the clock starts, so the time
    is the call's own. Not forked: a forked child pays copy-on-write faults on
    the parent's memory (several ms on a VM) that no real new process pays, and
    inherits the parent's warm state and peak RSS."""
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    child = context.Process(target=_child, args=(call, queue))
    child.start()
    while True:  # a child that dies never answers: do not wait for it forever
        try:
            result, seconds, peak = queue.get(timeout=1)
            break
        except Empty:
            if not child.is_alive():
                raise RuntimeError(f"benchmark child exited with {child.exitcode} before answering") from None
    child.join()
    return result, round(seconds, 4), round(peak, 1)


def _tree_rss_mib(root: int) -> float:
    """RSS of a process and all its descendants (Linux /proc), in MiB."""
    total, frontier, page = 0, [root], os.sysconf("SC_PAGE_SIZE")
    while frontier:
        pid = frontier.pop()
        try:
            with open(f"/proc/{pid}/statm") as statm:
                total += int(statm.read().split()[1]) * page
            for task in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{task}/children") as children:
                    frontier += [int(child) for child in children.read().split()]
        except (OSError, ValueError):
            continue
    return total / 2**20


@contextmanager
def tree_peak_rss(report: dict[str, Any], name: str, every: float = 0.02) -> Iterator[None]:
    """Record under `name` the peak RSS (MiB) of this process with its worker
    processes, summed, sampled every `every` seconds while the block runs."""
    peak = [_tree_rss_mib(os.getpid())]
    done = threading.Event()

    def sample() -> None:
        while not done.wait(every):
            peak[0] = max(peak[0], _tree_rss_mib(os.getpid()))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        yield
    finally:
        done.set()
        sampler.join()
        report[name] = round(max(peak[0], peak_rss_mib()), 1)
