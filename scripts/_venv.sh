# Sourced by scripts/quickstart and scripts/test: create .venv if missing and install the
# project with the extras named in $TL_EXTRAS. Idempotent: pip is skipped when the inputs
# (pyproject.toml) have not changed since the last successful install.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PY="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
    "$PY" -m venv .venv
fi
stamp=".venv/.installed-$(cat pyproject.toml | sha1sum | cut -c1-12)-${TL_EXTRAS// /_}"
if [ ! -f "$stamp" ]; then
    .venv/bin/python -m pip install --quiet --upgrade pip
    .venv/bin/python -m pip install --quiet -e ".[${TL_EXTRAS}]"
    rm -f .venv/.installed-*
    touch "$stamp"
fi
export PATH="$ROOT/.venv/bin:$PATH"
