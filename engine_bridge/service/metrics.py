"""Prometheus metrics in the text exposition format (version 0.0.4): request
counts by route and status, plan latency as a histogram, plans running and
finished, and how often each table's lister was opened (one per change seen)."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterable

BUCKETS = (0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


def _labels(**labels: str) -> str:
    escaped = (f'{k}="{v}"'.replace("\\", "\\\\").replace("\n", "\\n") for k, v in labels.items())
    return "{" + ",".join(escaped) + "}"


class Metrics:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.requests: Counter[tuple[str, str, int]] = Counter()
        self.plan_buckets = [0] * len(BUCKETS)
        self.plan_count = 0
        self.plan_sum = 0.0

    def request(self, method: str, route: str, status: int) -> None:
        with self._lock:
            self.requests[(method, route, status)] += 1

    def plan_took(self, seconds: float) -> None:
        with self._lock:
            self.plan_count += 1
            self.plan_sum += seconds
            for i, bound in enumerate(BUCKETS):
                if seconds <= bound:
                    self.plan_buckets[i] += 1

    def render(self, active: int, finished: dict[str, int], opens: Iterable[tuple[str, int]]) -> str:
        with self._lock:
            lines = ["# HELP hudi_bridge_requests_total HTTP requests answered, by method, route and status.",
                     "# TYPE hudi_bridge_requests_total counter"]
            lines += [f"hudi_bridge_requests_total{_labels(method=m, route=r, status=str(s))} {n}" for (m, r, s), n in sorted(self.requests.items())]
            lines += ["# HELP hudi_bridge_plan_seconds Time to plan, from admission to answer.", "# TYPE hudi_bridge_plan_seconds histogram"]
            lines += [f"hudi_bridge_plan_seconds_bucket{_labels(le=repr(b))} {n}" for b, n in zip(BUCKETS, self.plan_buckets)]
            lines += [f'hudi_bridge_plan_seconds_bucket{{le="+Inf"}} {self.plan_count}', f"hudi_bridge_plan_seconds_sum {self.plan_sum:.6f}",
                      f"hudi_bridge_plan_seconds_count {self.plan_count}"]
        lines += ["# HELP hudi_bridge_plans_active Plans queued or running.", "# TYPE hudi_bridge_plans_active gauge",
                  f"hudi_bridge_plans_active {active}",
                  "# HELP hudi_bridge_plans_finished_total Plans finished, by status.", "# TYPE hudi_bridge_plans_finished_total counter"]
        lines += [f"hudi_bridge_plans_finished_total{_labels(status=s)} {n}" for s, n in sorted(finished.items())]
        lines += ["# HELP hudi_bridge_table_opens_total Times a table was opened: once, then once per change seen.",
                  "# TYPE hudi_bridge_table_opens_total counter"]
        lines += [f"hudi_bridge_table_opens_total{_labels(table=t)} {n}" for t, n in opens]
        return "\n".join(lines) + "\n"
