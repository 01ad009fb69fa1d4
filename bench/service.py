"""Planning as a service (issue 65): one warm `hudi-bridge serve` against
cold CLI plans, on the scale bench's table (bench.scale builds it).

Measures, with the service in a process of its own on 127.0.0.1:
- first_plan_s: the first plan a fresh service answers (its cold read);
- first_page_s: a fresh service's first page (1,000 file slices) of a plan
  keeping every file slice (first_page_status "planning": answered while
  the rest was planned), and all_pages_s: every page of it read;
- warm plans with --clients concurrent clients, each on one keep-alive
  connection, --requests each, every plan a predicate of its own: p50_ms
  (the plan's answer), p50_all_pages_ms (every page of its file slices,
  1,000 a page),
  p99_ms and plans_per_s; then all asking the same predicate (answered
  from memory while the table is unchanged): p50_repeated_ms, ...;
- cli_plans_per_s: cold `hudi-bridge plan --json` processes of the same
  predicate, two at a time (this machine's cores), and
  service_to_cli_throughput (the target: 10x or more);
- service_peak_rss_mib: the service process's peak (VmHWM).
Targets (issue 65): p50 <= 20 ms, p99 <= 50 ms at 16 clients on the 1/10
table; first page <= 1.5 s at 1M files; RSS <= 1 GiB.

    python -m bench.service --table DIR [--partitions 1000 --files 100000] [--clients 16] [--requests 40] [--cli-runs 8]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bench.common import finish, progress
from bench.scale import BUILT_MARKER, build
from hive_sync.embedded import free_port, stop_process

HUDI_BRIDGE = str(Path(sys.executable).with_name("hudi-bridge"))


@contextmanager
def service(path: str) -> Iterator[tuple[int, int]]:
    """A `hudi-bridge serve` of `path` as table `t`: (its port, its pid)."""
    port = free_port()
    log = tempfile.TemporaryFile()  # its stderr, read by nobody while it runs: a pipe left unread would fill and stall it
    process = subprocess.Popen([HUDI_BRIDGE, "serve", "--table", f"t={path}", "--port", str(port), "--no-log-requests"], stderr=log)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
                connection.request("GET", "/health")
                if connection.getresponse().status == 200:
                    break
            except OSError:
                time.sleep(0.05)
        else:
            raise SystemExit("the service did not start")
        yield port, process.pid
    finally:
        stop_process(process)
        log.close()


def _call(connection: http.client.HTTPConnection, method: str, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
    connection.request(method, path, None if body is None else json.dumps(body), {"Content-Type": "application/json"})
    answer = connection.getresponse()
    payload = json.loads(answer.read())
    if answer.status != 200:
        raise SystemExit(f"the service answered {answer.status}: {payload}")
    return dict(payload)


def ask(connection: http.client.HTTPConnection, body: dict[str, Any]) -> dict[str, Any]:
    """The plan's first answer: completed, or (a large plan) planning with its first page."""
    return _call(connection, "POST", "/v1/tables/t/plan", body)


def ask_whole(connection: http.client.HTTPConnection, body: dict[str, Any]) -> dict[str, Any]:
    """The completed plan with every page of its file slices in `file_slices`, as a client that needs all of them reads it."""
    first = ask(connection, body)
    slices, token = list(first["file_slices"]), first["next_page_token"]
    while token is not None:
        page = _call(connection, "GET", f"/v1/plans/{first['plan_id']}/tasks?page_token={token}&page_size={body.get('page_size', 1000)}")
        slices, token = slices + page["file_slices"], page["next_page_token"]
    done = first if first["status"] == "completed" else _call(connection, "GET", f"/v1/plans/{first['plan_id']}?page_size=1")
    return {**done, "file_slices": slices}


def peak_rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        return next(int(line.split()[1]) / 1024 for line in status if line.startswith("VmHWM:"))


def _clients(port: int, clients: int, requests: int, files: int, where: str, distinct: bool, whole: bool) -> tuple[list[float], float]:
    """Latencies (sorted) and the wall time of `clients` threads asking `requests` plans each: every plan a predicate
    of its own (`distinct`: the service plans each), or all the same one (answered from memory after the first)."""
    latencies: list[float] = []
    failures: list[BaseException] = []
    lock = threading.Lock()

    def client(number: int) -> None:
        mine = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
        try:
            for n in range(requests):
                asked = f"a > {int(files * 0.49) + number * requests + n} AND b < {(files * 0.50) / 2}" if distinct else where
                began = time.perf_counter()
                if whole:  # every file slice, in pages of 1,000 (a planner that reads them all)
                    ask_whole(mine, {"filter": asked, "page_size": 1000})
                else:  # the plan's answer: its stages and first file slice
                    ask(mine, {"filter": asked, "page_size": 1})
                with lock:
                    latencies.append(time.perf_counter() - began)
        except BaseException as exc:  # noqa: BLE001 - said after the run: a client never dies unseen
            failures.append(exc)

    threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
    began = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - began
    if failures or len(latencies) != clients * requests:
        raise SystemExit(f"{len(failures)} client(s) failed: {failures[:1]}")
    return sorted(latencies), wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--partitions", type=int, default=1_000)
    parser.add_argument("--files", type=int, default=100_000)
    parser.add_argument("--table", help="the scale bench's table (built here when absent)")
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--requests", type=int, default=40, help="plans per client")
    parser.add_argument("--cli-runs", type=int, default=8)
    args = parser.parse_args()
    path = args.table or os.path.join(os.path.expanduser("~/.cache/hudi-bridge-bench"), f"scale-{args.partitions}-{args.files}-3")
    if not Path(path, BUILT_MARKER).exists():
        build(path, args.partitions, args.files, 3)
    where = f"a > {int(args.files * 0.49)} AND b < {(args.files * 0.50) / 2}"  # bench.scale's predicate: about 1% of the files
    report: dict[str, Any] = {"benchmark": "service", "files": args.files, "partitions": args.partitions, "predicate": where,
                              "clients": args.clients, "requests_per_client": args.requests}

    progress("a fresh service's first page of every file slice")
    with service(path) as (port, _):
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
        started = time.perf_counter()
        first = ask(connection, {"filter": True, "page_size": 1000})
        report["first_page_s"] = round(time.perf_counter() - started, 3)
        report["first_page_status"] = first["status"]  # "planning": answered before the rest was planned
        token = first["next_page_token"]
        while token is not None:  # every page, as the plan finds them
            token = _call(connection, "GET", f"/v1/plans/{first['plan_id']}/tasks?page_token={token}&page_size=10000")["next_page_token"]
        report["all_pages_s"] = round(time.perf_counter() - started, 3)
        report["first_page_slices_total"] = _call(connection, "GET", f"/v1/plans/{first['plan_id']}?page_size=1")["file_slices_total"]

    progress(f"warm plans: {args.clients} clients x {args.requests}")
    with service(path) as (port, pid):
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
        started = time.perf_counter()
        report["files_kept"] = ask_whole(connection, {"filter": where})["file_slices_total"]
        report["first_plan_s"] = round(time.perf_counter() - started, 3)
        for label, distinct, whole in (("", True, False), ("_all_pages", True, True), ("_repeated", False, False)):
            latencies, wall = _clients(port, args.clients, args.requests, args.files, where, distinct, whole)
            report[f"p50{label}_ms"] = round(1000 * statistics.median(latencies), 2)
            report[f"p99{label}_ms"] = round(1000 * latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))], 2)
            report[f"plans{label}_per_s"] = round(len(latencies) / wall, 1)
        report["service_peak_rss_mib"] = round(peak_rss_mib(pid), 1)

    progress(f"cold CLI plans: {args.cli_runs}, two at a time")
    began = time.perf_counter()
    pending = list(range(args.cli_runs))
    while pending:
        batch = [subprocess.Popen([HUDI_BRIDGE, "plan", path, "--where", where, "--json"], stdout=subprocess.DEVNULL)
                 for _ in pending[:2]]
        pending = pending[2:]
        for process in batch:
            if process.wait() != 0:
                raise SystemExit("a CLI plan failed")
    report["cli_plans_per_s"] = round(args.cli_runs / (time.perf_counter() - began), 2)
    report["service_to_cli_throughput"] = round(report["plans_per_s"] / report["cli_plans_per_s"], 1)
    finish(report)


if __name__ == "__main__":
    main()
