"""Random search for pruning bugs, apart from CI (which runs fixed seeds).

Runs the pruning properties (plain predicates, and predicates through
order-preserving functions) with fresh random seeds until the time is up,
and prints one JSON report: cases tried per property and every failing case
found, with the seed and Hypothesis's reproduction blob. A case found here
becomes an explicit example in the property's test file.

    .venv/bin/python -m bench.fuzz --seconds 600
"""

from __future__ import annotations

import argparse
import importlib
import random
import time
import traceback
from collections.abc import Callable
from typing import Any

from hypothesis import HealthCheck, Phase, given, seed, settings

from bench.common import finish, progress

# The properties live with their tests (imported by name: the tests are not type-checked as a library).
PROPERTIES = {"predicates": "tests.test_expressions_property", "functions": "tests.test_function_pruning_property"}


def _counting(check: Callable[[Any], None], counted: list[int]) -> Callable[[Any], None]:
    def counting(case: Any) -> None:
        counted.append(1)
        check(case)
    return counting


def search(name: str, seconds: float, examples: int) -> dict[str, Any]:
    module = importlib.import_module(PROPERTIES[name])
    strategy, check = module.cases, module.check
    found: list[dict[str, Any]] = []
    tried = rounds = 0
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        chosen = random.SystemRandom().randrange(2**63)
        counted: list[int] = []
        run = settings(max_examples=examples, deadline=None, database=None, derandomize=False, print_blob=True,
                       phases=[Phase.generate, Phase.shrink], suppress_health_check=list(HealthCheck))(
            seed(chosen)(given(strategy())(_counting(check, counted))))
        try:
            run()
        except AssertionError as failure:
            found.append({"seed": chosen, "failure": str(failure).splitlines()[0][:2000],
                          "detail": "".join(traceback.format_exception_only(type(failure), failure))[-4000:]})
            progress(f"{name}: seed {chosen} found a case")
        tried += len(counted)
        rounds += 1
    return {"property": name, "seconds": seconds, "rounds": rounds, "cases_tried": tried, "found": found}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=120.0, help="time per property")
    parser.add_argument("--examples", type=int, default=500, help="cases per seed")
    parser.add_argument("--property", choices=sorted(PROPERTIES), action="append")
    args = parser.parse_args()
    report: dict[str, Any] = {"bench": "fuzz", "properties": []}
    for name in args.property or sorted(PROPERTIES):
        progress(f"searching {name} for {args.seconds:.0f} s")
        report["properties"].append(search(name, args.seconds, args.examples))
    report["cases_found"] = sum(len(p["found"]) for p in report["properties"])
    finish(report)


if __name__ == "__main__":
    main()
