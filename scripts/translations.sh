#!/usr/bin/env bash
# After changing a word voters see: extract the strings (babel.cfg), merge them into every
# language's catalogue, then (once the new msgstr are filled in) compile the .mo files.
#
#   bash scripts/translations.sh            # extract + update: fill in the empty msgstr
#   bash scripts/translations.sh compile    # write the .mo files the app reads
#
# tests/web/test_languages.py fails while a catalogue misses a string or a .mo is stale.
set -euo pipefail
cd "$(dirname "$0")/.."
PYBABEL=.venv/bin/pybabel
if [ "${1:-}" = "compile" ]; then
  exec "$PYBABEL" compile -d arena/translations --statistics
fi
"$PYBABEL" extract -F babel.cfg -k N_ -k lazy_gettext --no-location --omit-header \
  --sort-output -o arena/translations/messages.pot .
"$PYBABEL" update -i arena/translations/messages.pot -d arena/translations \
  --no-fuzzy-matching --width 96
