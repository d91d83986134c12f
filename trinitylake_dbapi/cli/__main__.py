"""``python -m trinitylake_dbapi.cli``: the ``trinitylake`` command."""

from trinitylake_dbapi.cli import run

run()
