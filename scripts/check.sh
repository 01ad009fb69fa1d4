#!/usr/bin/env bash
# Lint, type-check and test (what CI runs after scripts/setup.sh --test).
# Without arguments: the quick suite, then the slow tier (the real engines: Apache Hudi writing every
# table shape, Spark, the Hive metastore, object stores) under its own time budget. With arguments:
# one pytest run with them (e.g. -m "not services", a test file, or -m matrix: the whole Hudi release matrix,
# beyond the slow tier's sample, about 25 minutes more).
set -euo pipefail
cd "$(dirname "$0")/.."
.venv/bin/ruff check .
.venv/bin/mypy
if [ "$#" -gt 0 ]; then
    exec .venv/bin/python -m pytest "$@"
fi
.venv/bin/python -m pytest -m "not slow"
SLOW_BUDGET="${SLOW_BUDGET:-3300}"  # seconds
timeout --signal=INT --kill-after=60 "$SLOW_BUDGET" .venv/bin/python -m pytest -m "slow and not matrix" \
    || { status=$?; [ "$status" -eq 124 ] && echo "check: the slow tier ran past its ${SLOW_BUDGET} s budget" >&2; exit "$status"; }
