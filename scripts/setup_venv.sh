# Sourced by start.sh and test.sh: create .venv and install the project with the given extras
# (e.g. "test"), only when pyproject.toml changed since the last install, so later runs start
# at once and work offline.
ensure_venv() {
  local extras="${1:-}" spec="." stamp
  [ -n "$extras" ] && spec=".[$extras]"
  if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
  fi
  stamp=".venv/.installed-$(cat pyproject.toml | sha256sum | cut -c1-16)-${extras:-base}"
  if [ ! -f "$stamp" ]; then
    echo "Installing Arena${extras:+ with [$extras]} into .venv ..."
    # uv installs (and compiles to bytecode, as pip does) from the same index in a third of
    # pip's time; pip when uv cannot be had
    if .venv/bin/python -m pip install --quiet uv \
        && .venv/bin/python -m uv pip install --quiet --compile-bytecode --python .venv/bin/python \
          -e "$spec"; then
      :
    else
      .venv/bin/python -m pip install --quiet --upgrade pip
      .venv/bin/python -m pip install --quiet -e "$spec"
    fi
    # packages Arena no longer uses that would still hook into it from an older .venv
    # (Flask-Limiter registers a `limiter` command in every Flask app)
    .venv/bin/python -m pip uninstall --quiet --yes flask-limiter 2>/dev/null || true
    rm -f .venv/.installed-*-"${extras:-base}"
    touch "$stamp"
  fi
}
