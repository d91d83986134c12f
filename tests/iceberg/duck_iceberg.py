"""DuckDB's own Iceberg reader (``iceberg_scan``), as an independent reader of the
tables this package writes: DuckDB 1.5.5 with its iceberg and avro extensions, offline
(NOTES "DuckDB offline"), in a child process (the driver's DuckDB is another version).
scripts/test installs it in ``.venv-duckdb-iceberg``; tests skip without it."""

from __future__ import annotations

import atexit
import json
import os
import select
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Sequence

import pytest

from tests.deadlines import HANG_S

REPO = Path(__file__).resolve().parents[2]
OVERLAY = Path(os.environ.get("TL_DUCKDB_ICEBERG", REPO / ".venv-duckdb-iceberg"))

#: Serves requests, one JSON line each on stdin (a list of metadata locations), with one
#: JSON line each on stdout: the rows of each location (every column, as text: values
#: compare exactly across readers), or {"error": traceback}. Each request gets a new
#: in-memory DuckDB database (nothing cached from one request to the next); the child
#: itself, with duckdb imported, lives as long as the test
#: process (a fresh interpreter per scan cost ~0.7 s of CPU, most of these files' CPU).
_SCRIPT = r"""
import glob, json, os, sys, traceback
import duckdb
overlay = sys.argv[1]
config = {"autoinstall_known_extensions": "false", "autoload_known_extensions": "false"}
# Loaded from the wheels' files (avro first: iceberg needs it), not INSTALLed: an INSTALL
# copies them into an extension directory, which nobody removed.
paths = [glob.glob(os.path.join(overlay, f"duckdb_extension_{name}", "extensions", "*", f"{name}.duckdb_extension"))[0]
         for name in ("avro", "iceberg")]
for line in sys.stdin:
    try:
        con = duckdb.connect(config=config)
        con.execute("SET enable_progress_bar = false")
        for path in paths:
            con.execute(f"LOAD '{path}'")
        out = []
        for metadata in json.loads(line):
            rel = con.sql(f"SELECT * FROM iceberg_scan('{metadata}')")
            cols = ", ".join(f'CAST("{c}" AS VARCHAR)' for c in rel.columns)
            out.append(con.execute(f"SELECT {cols} FROM iceberg_scan('{metadata}')").fetchall())
        con.close()
        reply = [[list(r) for r in rows] for rows in out]
    except Exception:
        reply = {"error": traceback.format_exc()}
    sys.stdout.write("\x1e" + json.dumps(reply) + "\n")  # (after anything DuckDB printed)
    sys.stdout.flush()
"""

_reader: subprocess.Popen | None = None


def available() -> bool:
    return (OVERLAY / "duckdb").is_dir()


def _stop() -> None:
    if _reader is not None and _reader.poll() is None:
        _reader.stdin.close()  # type: ignore[union-attr]
        try:
            _reader.wait(HANG_S)
        except subprocess.TimeoutExpired:
            _reader.kill()


def _started() -> subprocess.Popen:
    """The process's reader child, started on first use (again if it has died, or in a
    forked child, whose parent owns the pipes)."""
    global _reader, _owner
    if _reader is None or _reader.poll() is not None or _owner != os.getpid():
        _reader = subprocess.Popen(
            [sys.executable, "-c", _SCRIPT, str(OVERLAY)], env=dict(os.environ, PYTHONPATH=str(OVERLAY)),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=_errors(), text=True,
        )  # fmt: skip
        _owner = os.getpid()
        if len(_started_once) == 0:
            atexit.register(_stop)
            _started_once.append(True)
    return _reader


_owner = 0
_started_once: list[bool] = []
_stderr: list[Any] = []


def _errors() -> Any:
    """A file for the child's stderr (a pipe nobody reads could fill and block it)."""
    _stderr[:] = [tempfile.TemporaryFile()]
    return _stderr[0]


def _read_errors() -> str:
    _stderr[0].seek(0)
    return _stderr[0].read().decode(errors="replace")


def duckdb_scans(metadata_locations: Sequence[str]) -> list[list[tuple]]:
    """The rows DuckDB's ``iceberg_scan`` reads at each metadata location (values as
    text, NULL as None), sorted; skips the test when the reader is not installed."""
    if not available():
        pytest.skip(f"DuckDB 1.5.5 with the iceberg extension is not installed in {OVERLAY} (scripts/test installs it)")
    reader = _started()
    reader.stdin.write(json.dumps(list(metadata_locations)) + "\n")  # type: ignore[union-attr]
    reader.stdin.flush()  # type: ignore[union-attr]
    line = ""
    while not line.startswith("\x1e"):  # the reply's mark: lines before it are DuckDB's
        ready, _, _ = select.select([reader.stdout], [], [], HANG_S)
        assert ready, "DuckDB's iceberg_scan hung"
        line = reader.stdout.readline()  # type: ignore[union-attr]
        assert line, f"DuckDB's iceberg_scan exited {reader.wait()}: {_read_errors()}"
    found = json.loads(line[1:])
    assert not isinstance(found, dict), found["error"]
    return [sorted((tuple(r) for r in rows), key=repr) for rows in found]
