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
# One stamp per set of extras, named after pyproject.toml's hash: quickstart and test
# keep their own, so running one never makes the other reinstall.
extras_tag="${TL_EXTRAS//[ ,]/_}"
stamp=".venv/.installed-${extras_tag}-$(sha1sum < pyproject.toml | cut -c1-12)"
# The packages go in with uv (from PyPI, into .venv), which takes about a third of pip's
# time here (pyspark alone is ~400 MB); pip does it if uv cannot. uv tries its cache
# alone first (--offline): online, it revalidates every index page (~17 s) and PyPI's
# answer for pyspark's source archive (it publishes no wheel) comes back "modified", so
# uv built pyspark again for every new .venv (~45 s, and ~0.9 GB more in uv's cache each
# time: 49 builds, 44 GB, on the development host); from the cache a fresh .venv takes
# ~7 s. Anything the cache lacks (a first run, a new dependency) makes it fail, and the
# online install follows.
install() {  # install ARGS...: pip-style arguments, into .venv's interpreter
    .venv/bin/uv pip install --quiet --offline --python .venv/bin/python "$@" 2>/dev/null \
        || .venv/bin/uv pip install --quiet --python .venv/bin/python "$@" \
        || { echo "uv pip install failed; installing with pip" >&2; \
             .venv/bin/python -m pip install --quiet "$@"; }
}
if [ ! -f "$stamp" ]; then
    .venv/bin/python -m pip install --quiet --upgrade pip uv
    install -e ".[${TL_EXTRAS}]"
    rm -f ".venv/.installed-${extras_tag}-"*
    touch "$stamp"
fi
export PATH="$ROOT/.venv/bin:$PATH"
