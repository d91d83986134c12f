"""sql/compat.py: the one place that knows how sqlglot versions differ (issue 20)."""

from __future__ import annotations

import re
from pathlib import Path

import sqlglot
from sqlglot import exp

from trinitylake_dbapi.sql import compat
from trinitylake_dbapi.sql.dialect import parse_statement

SQL_DIR = Path(compat.__file__).parent


def test_the_names_work_on_the_installed_sqlglot() -> None:
    assert compat.SQLGLOT_VERSION[:2] == tuple(int(p) for p in sqlglot.__version__.split(".")[:2])
    assert compat.SQLGLOT_VERSION >= (28, 10)
    assert isinstance(exp.column("a"), compat.Expr)
    assert compat.DType.BOOLEAN == exp.DataType.build("boolean").this
    assert compat.SparkParser is not None


def test_time_travel_and_nested_types_parse_the_same_on_every_version() -> None:
    node = parse_statement("SELECT * FROM ns.t FOR SYSTEM_VERSION AS OF 3")
    version = node.find(exp.Version)
    assert version is not None and version.args["kind"] == "AS OF"
    assert version.args["this"] == "VERSION" and version.expression.name == "3"
    node = parse_statement("SELECT * FROM ns.t TIMESTAMP AS OF '2026-01-01'")
    assert node.find(exp.Version).args["this"] == "TIMESTAMP"
    table = parse_statement("CREATE TABLE t (a ARRAY<INT NOT NULL>, s STRUCT<x: INT NOT NULL>)")
    assert table is not None


def test_quoted_names_are_never_read_as_words() -> None:
    node = parse_statement('SHOW TABLES IN "TABLES"')
    assert node.args["namespace"].name == "TABLES"


def test_nothing_else_reaches_into_version_specific_sqlglot_names() -> None:
    # (exp.Expression exists in both: statements.py subclasses it.)
    pattern = re.compile(r"sqlglot\.parsers|exp\.DType\b|isinstance\([^)]*exp\.Expr\)")
    offenders = [
        f"{path.name}:{n}"
        for path in SQL_DIR.parent.rglob("*.py")
        if path.name != "compat.py"
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if pattern.search(line)
    ]
    assert offenders == []
