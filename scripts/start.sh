#!/usr/bin/env bash
# Set up Arena (once) and serve it on SQLite with the demo campaign at http://127.0.0.1:5000.
# Extra arguments go to `arena serve` (e.g. --port 8000 --threads 8). `arena demo` upgrades
# the schema first (a release step: `arena serve` does not). Asked to listen on every
# interface (--host 0.0.0.0), the server prints this machine's LAN address and its QR code.
set -euo pipefail
cd "$(dirname "$0")/.."
case " $* " in
  *" --host "*|*" --host="*) ;;
  *) echo "Arena will listen on this machine only; to open it from a phone on your network: bash scripts/start.sh --host 0.0.0.0" ;;
esac
source scripts/setup_venv.sh
extras=""
case "${ARENA_DATABASE_URL:-}" in postgres*) extras="postgres" ;; esac
case "${ARENA_STORAGE_URL:-}" in s3://*) extras="${extras:+$extras,}s3" ;; esac
ensure_venv "$extras"
.venv/bin/arena demo

exec .venv/bin/arena serve "$@"
