"""The ``trinitylake`` command, run as users run it (a process of its own): -c, -f, piped
scripts, .mode csv/json/markdown and --csv/--json, and the damaged files and values whose
one ``ERROR:`` line must name the file or column, with no traceback (issue 32)."""

from __future__ import annotations

import csv
import decimal
import io
import json
import os
import subprocess
from pathlib import Path

import pytest

from client_cases import corrupt_metadata, delete_manifest_list, flip_parquet, read_only
import warm_cli

# Slow: the shell as a process per case (scripts/test --quick leaves it out).
pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]


def trinitylake(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    """``trinitylake ARGS`` in a process of its own: forked from a warm one that has the
    package imported (tests/warm_cli.py; a fresh interpreter's imports were most of the
    CPU of these tests), with pipes for its standard streams, run by the console
    script's entry point."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    return warm_cli.run(*args, stdin=stdin, environment=env)


def failed(done: subprocess.CompletedProcess, *names: str) -> str:
    """The command failed with one ``ERROR:`` line naming each of ``names``; that line."""
    assert done.returncode == 1, (done.returncode, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr, done.stderr
    (line,) = done.stderr.splitlines()
    assert line.startswith("ERROR: "), line
    for name in names:
        assert name in line, (name, line)
    return line


QUERY = (
    "SELECT sum(n) AS total, count(*) AS c, 12.50 AS price, date_trunc('month', DATE '2024-05-17') AS m, "
    "extract(year FROM DATE '2024-05-17') AS y, now() IS NOT NULL AS has_now, today() = current_date AS today "
    "FROM ns.t"
)
ROW = {"total": "60", "c": "3", "price": "12.50", "m": "2024-05-01 00:00:00.000", "y": "2024", "has_now": "true", "today": "true"}


def test_dash_c_with_csv_json_and_markdown(location: str) -> None:
    done = trinitylake(location, "--csv", "-c", QUERY)
    assert done.returncode == 0, done.stderr
    assert list(csv.DictReader(io.StringIO(done.stdout))) == [ROW]
    done = trinitylake(location, "--json", "-c", QUERY)
    (row,) = json.loads(done.stdout)
    assert row["total"] == 60 and row["c"] == 3 and decimal.Decimal(row["price"]) == decimal.Decimal("12.50")
    assert row["m"].startswith("2024-05-01") and row["has_now"] is True
    done = trinitylake(location, "-c", ".mode markdown\n" + QUERY)
    header, rule, cells = done.stdout.splitlines()
    assert [c.strip() for c in header.strip("|").split("|")] == list(ROW)
    assert [c.strip() for c in cells.strip("|").split("|")][:3] == ["60", "3", "12.50"]


def test_a_file_and_a_piped_script(location: str, tmp_path: Path) -> None:
    script = (
        "INSERT INTO ns.t VALUES (4, 'd', 40);\n"
        ".mode json\n"
        "SELECT id, s FROM ns.t WHERE id >= 3 ORDER BY id;\n"
        ".mode csv\n"
        "SELECT sum(id) AS ids FROM ns.t;\n"
    )
    path = tmp_path / "script.sql"
    path.write_text(script)
    done = trinitylake(location, "-f", str(path))
    assert done.returncode == 0, done.stderr
    assert done.stdout == 'OK, 1 row\n[{"id":3,"s":"c"},\n{"id":4,"s":"d"}]\nids\n10\n'
    done = trinitylake(location, stdin=script.replace("(4, 'd', 40)", "(5, 'e', 50)"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.endswith("ids\n15\n")


def test_statements_users_bring_from_other_engines(location: str) -> None:
    failed(trinitylake(location, "-c", "SAVEPOINT s1"), "savepoints are not supported")
    done = trinitylake(location, "--csv", "-c", "SELECT CAST(12.50 AS DECIMAL(10,2)) AS d, 12.50 * 2 AS twice")
    assert done.stdout == "d,twice\n12.50,25.00\n", done.stderr


def test_corrupt_metadata(location: str, table: str) -> None:
    name = corrupt_metadata(table)
    failed(trinitylake(location, "-c", "SELECT * FROM ns.t"), name)
    failed(trinitylake(location, "-c", "INSERT INTO ns.t VALUES (9, 'z', 90)"), name)
    done = trinitylake("verify", location, "--data")  # a finding, never a traceback
    assert done.returncode == 1 and "Traceback" not in done.stderr, (done.returncode, done.stderr)
    assert name in done.stdout + done.stderr


def test_a_deleted_manifest_list(location: str, table: str) -> None:
    name = delete_manifest_list(table)
    failed(trinitylake(location, "-c", "INSERT INTO ns.t VALUES (9, 'z', 90)"), name)
    done = trinitylake("verify", location, "--data")
    assert done.returncode == 1 and name in done.stdout + done.stderr, (done.stdout, done.stderr)


def test_a_flipped_bit_in_a_data_file(location: str, table: str) -> None:
    name = flip_parquet(table)
    failed(trinitylake(location, "-c", "SELECT count(*) FROM ns.t"), name)
    # verify --data checks a Parquet file's ends and length only (iceberg.files IF3): a
    # byte inside its footer is the readers' to find.


def test_a_read_only_lakehouse(location: str) -> None:
    with read_only(location):
        done = trinitylake(location, "--csv", "-c", "SELECT count(*) AS c FROM ns.t")
        assert (done.returncode, done.stdout) == (0, "c\n3\n"), done.stderr
        failed(trinitylake(location, "-c", "INSERT INTO ns.t VALUES (9, 'z', 90)"), location)
        failed(trinitylake(location, "-c", "CREATE NAMESPACE other"), location)


def test_values_no_column_holds(location: str) -> None:
    failed(trinitylake(location, "-c", "CREATE TABLE ns.e (id INT, at TIMESTAMP); "
                       "INSERT INTO ns.e VALUES (1, TIMESTAMP '9999-12-31 23:00:00' + INTERVAL 2 HOUR)"), "at")  # fmt: skip
    failed(trinitylake(location, "-c", "SELECT TIMESTAMP '9999-12-31 23:00:00' + INTERVAL 2 HOUR AS later"), "later")
    done = trinitylake(location, "--csv", "-c", "SELECT count(*) AS c FROM ns.e")
    assert done.stdout == "c\n0\n", done.stderr
