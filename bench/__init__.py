"""Benchmarks of trinitylake-dbapi against PyIceberg's SQL catalog (issue 8).

Run ``python -m bench [--quick | --full]``; see ``docs/performance.md``.
"""
