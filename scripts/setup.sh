#!/usr/bin/env bash
# Create .venv and install hudi-bridge into it (with test extras given --test).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
extras=""
[ "${1:-}" = "--test" ] && extras="[test]"
if [ ! -x .venv/bin/python ]; then
    "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e ".${extras}"
if [ -n "$extras" ]; then
    # Azurite (Azure Storage's emulator, from the npm registry) for the Azure tests; without npm they are skipped.
    if command -v npm >/dev/null && [ ! -x .cache/azurite/node_modules/.bin/azurite-blob ]; then
        npm install --silent --no-audit --no-fund --prefix .cache/azurite azurite@3 >/dev/null 2>&1 \
            || echo "setup: npm could not install Azurite; the Azure tests will be skipped" >&2
    fi
fi
