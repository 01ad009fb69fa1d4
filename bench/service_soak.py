"""The service under a steady load while a writer commits (issue 65's soak).

A sample trips table (hudi-bridge's own writer, its metadata table kept)
gets a commit every --commit-every seconds while --clients clients ask the
service plans at --rate plans per second in all, for --seconds. Afterwards
every answer is compared with the local planner's on the table as of the
instant the answer names. Reports errors, answers checked and unequal, the
commits the service saw, and the service's RSS each minute (the last
minute's within 5% of the second's is the target: memory flat).

    python -m bench.service_soak [--seconds 600] [--rate 20] [--clients 4] [--commit-every 5] [--updates --compact-every 5]
"""

from __future__ import annotations

import argparse
import http.client
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bench.common import finish, progress
from bench.service import ask_whole, service
from listers import plan
from metadata import CleanedFilesError
from metadata.mdt.write.writer import MetadataTableWriter
from metadata.sample_tables.sample import CITIES, build_sample_table, trip_rows

PREDICATES = [f"city = '{c}' AND fare > {f}" for c in CITIES for f in (10, 40, 80)] + ["fare < 30", "TRUE"]


def rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        return next(int(line.split()[1]) / 1024 for line in status if line.startswith("VmRSS:"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=600)
    parser.add_argument("--rate", type=float, default=20, help="plans per second, all clients together")
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--commit-every", type=float, default=5)
    parser.add_argument("--updates", action="store_true", help="each commit updates existing trips instead of adding new ones")
    parser.add_argument("--compact-every", type=int, default=0,
                        help="compact and clean the table every N commits, as Hudi's inline compaction does (0: never)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="hudi-bridge-soak-") as root:
        path = str(Path(root) / "trips")
        writer = build_sample_table(path, "MERGE_ON_READ", 8)
        MetadataTableWriter(path).build()
        answers: list[tuple[str, str | None, bool, list[dict[str, Any]]]] = []
        errors: list[str] = []
        rss: list[float] = []
        stop = threading.Event()
        lock = threading.Lock()
        expected: dict[tuple[str, str | None, bool], list[dict[str, Any]] | None] = {}

        def expect(key: tuple[str, str | None, bool]) -> None:
            """The local planner's slices for (predicate, instant, metadata table behind); None when a later clean
            removed files of that state (no local plan of it to compare with)."""
            predicate, instant, behind = key
            try:
                expected[key] = [s.to_wire() for s in plan(path, predicate, as_of=instant, use_metadata=not behind).files]
            except CleanedFilesError:
                expected[key] = None

        def checker() -> None:
            """The local plans made while the run goes on, before a clean (--compact-every) removes their state's files."""
            done = 0
            while not stop.is_set() or done < len(answers):
                if done < len(answers):
                    key = answers[done][:3]
                    if key not in expected:
                        expect(key)
                    done += 1
                else:
                    time.sleep(0.05)

        checking = threading.Thread(target=checker)
        with service(path) as (port, pid):
            checking.start()

            def client(number: int) -> None:
                connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
                interval, n = args.clients / args.rate, number
                next_at = time.monotonic()
                while not stop.is_set():
                    predicate = PREDICATES[n % len(PREDICATES)]
                    n += args.clients
                    try:
                        answer = ask_whole(connection, {"filter": predicate, "page_size": 10_000})
                        # Planned while the metadata table was behind the timeline (between a commit and its sync): the
                        # service listed storage, as the local planner does then; compared below on the same terms.
                        behind = any("metadata table is behind" in warning for warning in answer.get("warnings", []))
                        with lock:
                            answers.append((predicate, answer["instant"], behind, answer["file_slices"]))
                    except BaseException as exc:  # noqa: BLE001 - counted: the target is none
                        with lock:
                            errors.append(f"{type(exc).__name__}: {exc}")
                        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
                    next_at += interval
                    time.sleep(max(0.0, next_at - time.monotonic()))

            threads = [threading.Thread(target=client, args=(i,)) for i in range(args.clients)]
            for thread in threads:
                thread.start()
            started = time.monotonic()
            commits, next_commit, next_sample, written = 0, started + args.commit_every, started, 1000
            while time.monotonic() - started < args.seconds:
                now = time.monotonic()
                if now >= next_sample:
                    rss.append(rss_mib(pid))
                    next_sample += 1.0
                if now >= next_commit:
                    # New trips (the table grows), or with --updates the next 8 of the 64 it has (the table stays its size).
                    writer.write(trip_rows((commits * 8) % 64 if args.updates else written, 8), operation="upsert")
                    written += 8
                    commits += 1
                    if args.compact_every and commits % args.compact_every == 0:  # as a MOR pipeline's inline compaction and cleaning
                        writer.run_compaction(writer.schedule_compaction())
                        writer.clean()
                    MetadataTableWriter(path).sync()
                    next_commit += args.commit_every
                    progress(f"{now - started:.0f} s: {commits} commits, {len(answers)} answers, {len(errors)} errors, {rss[-1]:.0f} MiB")
                time.sleep(0.05)
            stop.set()
            for thread in threads:
                thread.join()
            checking.join()
        progress(f"comparing {len(answers)} answers with the local planner")
        unequal = cleaned_since = 0
        for predicate, instant, behind, slices in answers:
            key = (predicate, instant, behind)
            if key not in expected:
                expect(key)
            if expected[key] is None:
                cleaned_since += 1
            else:
                unequal += slices != expected[key]
        minutes = [rss[i:i + 60] for i in range(0, len(rss), 60)]
        per_minute = [round(max(m), 1) for m in minutes if m]
        report = {"benchmark": "service_soak", "seconds": args.seconds, "rate": args.rate, "clients": args.clients, "commits": commits,
                  "updates": args.updates, "compact_every": args.compact_every,
                  "answers": len(answers), "errors": len(errors), "first_errors": errors[:3], "unequal_answers": unequal,
                  "not_checked_cleaned_since": cleaned_since,
                  "instants_seen": len({instant for _, instant, _, _ in answers}),
                  "answers_while_metadata_behind": sum(behind for _, _, behind, _ in answers), "rss_mib_per_minute": per_minute,
                  "last_over_second_minute": round(per_minute[-1] / per_minute[1], 3) if len(per_minute) > 2 else None}
        progress(f"RSS by minute: {per_minute} MiB")
        finish(report)


if __name__ == "__main__":
    main()
