#!/usr/bin/env bash
# Set up Arena (once) and serve it on SQLite with the demo campaign at http://127.0.0.1:5000.
# Extra arguments go to `arena serve` (e.g. --port 8000 --workers 4).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e .
.venv/bin/arena demo
exec .venv/bin/arena serve "$@"
