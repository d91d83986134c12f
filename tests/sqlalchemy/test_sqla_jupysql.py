"""jupysql over the dialect, run in IPython's InteractiveShell (issue 18)."""

from __future__ import annotations

import pytest



def test_sqlcmd_columns_and_profile(engine):
    # Imported here, not when every xdist worker collects the module (~0.75 s of CPU each).
    pytest.importorskip("sql.magic", reason="jupysql is part of the test extra")
    from IPython.core.interactiveshell import InteractiveShell

    with engine.begin() as conn:
        conn.exec_driver_sql("CREATE TABLE ns.sales (id INT, day DATE, amount DECIMAL(10,2), region VARCHAR)")
        conn.exec_driver_sql(
            "INSERT INTO ns.sales VALUES (1, DATE '2024-01-03', 10.50, 'n'), "
            "(2, DATE '2024-01-20', 4.25, 's'), (3, DATE '2024-02-01', 1.00, NULL)"
        )
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "sql")
    shell.user_ns["lake_engine"] = engine
    shell.run_line_magic("sql", "lake_engine")
    tables = str(shell.run_line_magic("sqlcmd", "tables --schema ns"))
    assert "sales" in tables
    columns = str(shell.run_line_magic("sqlcmd", "columns --table sales --schema ns"))
    for expected in ("id", "INTEGER", "day", "DATE", "amount", "DECIMAL(10, 2)", "region", "VARCHAR"):
        assert expected in columns
    system = str(shell.run_line_magic("sqlcmd", "columns --table tables --schema information_schema"))
    assert "table_name" in system and "comment" in system
    profile = shell.run_line_magic("sqlcmd", "profile --table sales --schema ns")
    text = str(profile)
    assert "count" in text and "unique" in text and "mean" in text
    rows = {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[2:-1]]
            for line in text.splitlines() if line.startswith("|")}  # fmt: skip
    assert rows["count"] == ["3", "3", "3", "2"]
    assert rows["mean"][0] == "2.0000"
    result = shell.run_line_magic("sql", "SELECT sum(amount) AS total FROM ns.sales")
    assert str(result.DataFrame()["total"][0]) == "15.75"
    # Close jupysql's connections while the shell lives: its exit hook would otherwise
    # print a traceback from a shell already torn down.
    from sql.connection import ConnectionManager

    ConnectionManager.close_all(verbose=False)
