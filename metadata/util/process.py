"""Processes on this host (lock holders, service owners, worker pools)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from concurrent.futures import ProcessPoolExecutor


def running_user() -> str | None:
    """The name of the user this process runs as; None where the uid has no name (a container)."""
    import getpass

    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return None


def worker_count(processes: int | None) -> int:
    """Workers asked for: None is one per core."""
    return max(1, (os.cpu_count() or 1) if processes is None else processes)


def worker_pool(processes: int, preload: list[str]) -> ProcessPoolExecutor:
    """A pool whose workers fork from Python's `forkserver` (a clean process
    that imported `preload`), not from the caller, whose threads may hold
    locks. The forkserver imports the caller's main module: a script that
    asks for workers runs its work under `if __name__ == "__main__":`."""
    import multiprocessing  # imported here: planning imports this module, and a plan rarely starts workers
    from concurrent.futures import ProcessPoolExecutor

    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(preload)
    return ProcessPoolExecutor(max_workers=processes, mp_context=context)


def process_alive(pid: int) -> bool:
    """Whether a process with this id exists (one we may not signal still counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
