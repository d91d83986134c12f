"""DuckDB's own Iceberg reader (``iceberg_scan``), as an independent reader of the
tables this package writes: DuckDB 1.5.5 with its iceberg and avro extensions, offline
(NOTES "DuckDB offline"), in a child process (the driver's DuckDB is another version).
scripts/test installs it in ``.venv-duckdb-iceberg``; tests skip without it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Sequence

import pytest

from tests.deadlines import HANG_S

REPO = Path(__file__).resolve().parents[2]
OVERLAY = Path(os.environ.get("TL_DUCKDB_ICEBERG", REPO / ".venv-duckdb-iceberg"))

#: Reads the metadata locations given as a JSON list on stdin; prints, as one JSON line,
#: the rows of each (every column, as text: values compare exactly across readers).
_SCRIPT = r"""
import glob, json, os, sys, tempfile
import duckdb
overlay = sys.argv[1]
con = duckdb.connect(config={"autoinstall_known_extensions": "false", "autoload_known_extensions": "false",
                             "extension_directory": tempfile.mkdtemp()})
for name in ("avro", "iceberg"):
    path = glob.glob(os.path.join(overlay, f"duckdb_extension_{name}", "extensions", "*", f"{name}.duckdb_extension"))[0]
    con.execute(f"INSTALL '{path}'")
    con.execute(f"LOAD {name}")
out = []
for metadata in json.loads(sys.stdin.read()):
    rel = con.sql(f"SELECT * FROM iceberg_scan('{metadata}')")
    cols = ", ".join(f'CAST("{c}" AS VARCHAR)' for c in rel.columns)
    out.append(con.execute(f"SELECT {cols} FROM iceberg_scan('{metadata}')").fetchall())
print(json.dumps([[list(r) for r in rows] for rows in out]))
"""


def available() -> bool:
    return (OVERLAY / "duckdb").is_dir()


def duckdb_scans(metadata_locations: Sequence[str]) -> list[list[tuple]]:
    """The rows DuckDB's ``iceberg_scan`` reads at each metadata location (values as
    text, NULL as None), sorted; skips the test when the reader is not installed."""
    if not available():
        pytest.skip(f"DuckDB 1.5.5 with the iceberg extension is not installed in {OVERLAY} (scripts/test installs it)")
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT, str(OVERLAY)], input=json.dumps(list(metadata_locations)),
        env=dict(os.environ, PYTHONPATH=str(OVERLAY)), capture_output=True, text=True, timeout=HANG_S,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout.strip().splitlines()[-1])
    return [sorted((tuple(r) for r in rows), key=repr) for rows in found]
