#!/usr/bin/env bash
# Set up Arena (once) and serve it on SQLite with the demo campaign at http://127.0.0.1:5000.
# Extra arguments go to `arena serve` (e.g. --port 8000 --threads 8). `arena demo` upgrades
# the schema first (a release step: `arena serve` does not). Asked to listen on every
# interface (--host 0.0.0.0 or ::), it prints this machine's LAN addresses to open from a phone.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup_venv.sh
extras=""
case "${ARENA_DATABASE_URL:-}" in postgres*) extras="postgres" ;; esac
case "${ARENA_STORAGE_URL:-}" in s3://*) extras="${extras:+$extras,}s3" ;; esac
ensure_venv "$extras"
.venv/bin/arena demo

host="" port="5000" prev=""
for arg in "$@"; do
  case "$prev" in --host) host="$arg" ;; --port) port="$arg" ;; esac
  case "$arg" in --host=*) host="${arg#--host=}" ;; --port=*) port="${arg#--port=}" ;; esac
  prev="$arg"
done
if [ "$host" = "0.0.0.0" ] || [ "$host" = "::" ] || [ "$host" = "[::]" ]; then
  addresses="$(hostname -I 2>/dev/null || true)"
  if [ -z "${addresses// /}" ]; then  # no hostname -I (macOS, BusyBox): the route out's source
    addresses="$(.venv/bin/python -c 'import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
try:
    s.connect(("192.0.2.1", 9)); print(s.getsockname()[0])
except OSError:
    pass' || true)"
  fi
  echo "Open Arena from a phone on the same network at:"
  for address in $addresses; do
    case "$address" in
      127.*|::1|fe80:*) ;;  # loopback and link-local addresses no other device can use
      *:*) if [ "$host" != "0.0.0.0" ]; then echo "  http://[$address]:$port/"; fi ;;  # IPv6
      *) echo "  http://$address:$port/" ;;
    esac
  done
fi
exec .venv/bin/arena serve "$@"
