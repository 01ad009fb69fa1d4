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
# Apache Hudi writes the slow tier's tables into the cache while the quick suite runs (which keeps one core busy):
# from an empty cache that is most of the slow tier's time. Its own process group, so that stopping takes Spark too.
prewrite_log="$(mktemp)"
setsid .venv/bin/python -m tests.hudi_oracle.prewrite >"$prewrite_log" 2>&1 &
prewrite=$!
trap 'kill -- "-$prewrite" 2>/dev/null || true; rm -f "$prewrite_log"' EXIT
.venv/bin/python -m pytest -m "not slow"
wait "$prewrite" || echo "check: Hudi's tables were not all written ahead; the slow tier writes the rest" >&2
cat "$prewrite_log"
SLOW_BUDGET="${SLOW_BUDGET:-3300}"  # seconds
timeout --signal=INT --kill-after=60 "$SLOW_BUDGET" .venv/bin/python -m pytest -m "slow and not matrix" \
    || { status=$?; [ "$status" -eq 124 ] && echo "check: the slow tier ran past its ${SLOW_BUDGET} s budget" >&2; exit "$status"; }
