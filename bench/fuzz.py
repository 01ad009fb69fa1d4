"""Random search for pruning bugs, apart from CI (which runs fixed seeds).

Runs the pruning properties (plain predicates, and predicates through
order-preserving functions) with fresh random seeds until the time is up,
and prints one JSON report: cases tried per property and every failing case
found, with the seed and Hypothesis's reproduction blob. A case found here
becomes an explicit example in the property's test file.

    .venv/bin/python -m bench.fuzz --seconds 600
    .venv/bin/python -m bench.fuzz --shapes --seconds 600   # table shapes and histories (tests/table_shapes.py)

A shape that fails becomes a seed in `tests/test_table_shapes.py` (or an
explicit example there).
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


def search_shapes(seconds: float) -> dict[str, Any]:
    """Fresh seeds of the table-shape property until the time is up."""
    import tempfile
    from pathlib import Path

    shapes = importlib.import_module("tests.table_shapes")
    found: list[dict[str, Any]] = []
    tried = 0
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        chosen = random.SystemRandom().randrange(2**32)
        rng = random.Random(chosen)
        shape = shapes.draw_shape(rng)
        with tempfile.TemporaryDirectory() as folder:
            history = shapes.History(Path(folder) / "t", shape, rng)
            try:
                history.run()
                shapes.check_shape(history)
            except Exception as failure:  # a wrong answer, or a crash: both are cases
                found.append({"seed": chosen, "shape": shape.describe(), "steps": history.steps,
                              "failure": f"{type(failure).__name__}: {str(failure).splitlines()[0][:2000] if str(failure) else ''}"})
                progress(f"shapes: seed {chosen} found a case ({shape.describe()})")
        tried += 1
    return {"property": "shapes", "seconds": seconds, "rounds": tried, "cases_tried": tried, "found": found}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=120.0, help="time per property")
    parser.add_argument("--examples", type=int, default=500, help="cases per seed")
    parser.add_argument("--property", choices=sorted(PROPERTIES), action="append")
    parser.add_argument("--shapes", action="store_true", help="search table shapes and histories instead")
    args = parser.parse_args()
    report: dict[str, Any] = {"bench": "fuzz", "properties": []}
    if args.shapes:
        progress(f"searching table shapes for {args.seconds:.0f} s")
        report["properties"].append(search_shapes(args.seconds))
    for name in [] if args.shapes else args.property or sorted(PROPERTIES):
        progress(f"searching {name} for {args.seconds:.0f} s")
        report["properties"].append(search(name, args.seconds, args.examples))
    report["cases_found"] = sum(len(p["found"]) for p in report["properties"])
    finish(report)


if __name__ == "__main__":
    main()
