#!/usr/bin/env bash
# Set up Arena (once) and serve it on SQLite with the demo campaign at http://127.0.0.1:5000.
# Extra arguments go to `arena serve` (e.g. --port 8000 --threads 8). `arena demo` upgrades
# the schema first (a release step: `arena serve` does not).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup_venv.sh
extras=""
case "${ARENA_DATABASE_URL:-}" in postgres*) extras="postgres" ;; esac
ensure_venv "$extras"
.venv/bin/arena demo
exec .venv/bin/arena serve "$@"
