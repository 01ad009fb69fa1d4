#!/usr/bin/env bash
# Lint, type-check and test (what CI runs after scripts/setup.sh --test).
set -euo pipefail
cd "$(dirname "$0")/.."
.venv/bin/ruff check .
.venv/bin/mypy
.venv/bin/python -m pytest "$@"
