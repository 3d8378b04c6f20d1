#!/usr/bin/env bash
# Set up the test environment (once) and run the linter, build the documentation, then the whole
# test suite with the coverage floor. Extra arguments go to pytest (a chosen subset runs
# without the floor).
# Browser tests need Debian's chromium, the reverse-proxy tests Debian's nginx and caddy:
# installed here when missing and we are root with apt.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup_venv.sh
ensure_venv test
missing=""
command -v chromium >/dev/null 2>&1 || missing="chromium"
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || missing="$missing nginx"
command -v caddy >/dev/null 2>&1 || missing="$missing caddy"
if [ -n "$missing" ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "Installing Debian's$missing for the browser and reverse-proxy tests..."
  # (waiting up to five minutes for another apt to let go of the dpkg lock, not failing)
  # shellcheck disable=SC2086  # (one package name per word)
  apt-get -o DPkg::Lock::Timeout=300 update -qq \
    && DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq \
      $missing >/dev/null
fi
.venv/bin/ruff check arena tests benchmarks scripts
# the documentation site (docs/, mkdocs.yml): a broken link or a page left out of nav fails
NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs build --strict --quiet --site-dir "$(mktemp -d)"
if [ $# -gt 0 ]; then  # a chosen subset: as asked, without the coverage floor
  exec .venv/bin/python -m pytest "$@"
fi
# the suite on two workers per core (many tests wait on a server, a browser or a database),
# then the tests that measure time or load alone; the 15 slowest of each part are printed,
# and the coverage floor (per cent of branches and lines in arena/) holds for both parts
workers=$(( 2 * $(nproc 2>/dev/null || echo 1) ))
# one thread of linear algebra per worker: the workers fill the cores already
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
# (the serial part and the floor run even when the first part failed: one run tells all)
parallel=0
.venv/bin/python -m pytest -n "$workers" --dist worksteal -m "not serial" --cov --cov-report= \
  --durations=15 || parallel=$?
serial=0
.venv/bin/python -m pytest -m serial --cov --cov-append --cov-fail-under=93 \
  --durations=15 || serial=$?
if [ "$parallel" -ne 0 ]; then
  echo "the parallel part failed (exit $parallel): see above" >&2
  exit "$parallel"
fi
exit "$serial"
