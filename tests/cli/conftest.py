from lakes import conn, cur, lake, memory_lake  # noqa: F401 - fixtures
