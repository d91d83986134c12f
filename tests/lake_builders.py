"""Builders every test directory shares (tests/ is on sys.path, see conftest.py)."""

from __future__ import annotations

from trinitylake_dbapi.format.types import ColumnSpec, parse_type

#: Small nodes, so that a few hundred keys make a tree of three levels whose commits
#: flush, split, borrow and merge.
SMALL_TREE = {
    "order": 4,
    "node_file_max_size_bytes": 3000,
    "namespace_name_max_size_bytes": 20,
    "table_name_max_size_bytes": 20,
    "file_name_max_size_bytes": 202,
}


def columns(*specs: str) -> list[ColumnSpec]:
    """The one column builder of the tests: a bare name is a bigint column; ``"name type"``
    and ``"name type NOT NULL"`` give the type (any SPEC 5 type text), e.g.
    ``columns("id bigint NOT NULL", "v varchar(3)", "extra")``."""
    out = []
    for spec in specs:
        name, _, text = spec.partition(" ")
        nullable = True
        if text.upper().endswith(" NOT NULL"):
            text, nullable = text[: -len(" NOT NULL")], False
        out.append(ColumnSpec(name, parse_type(text or "bigint", column=name), nullable))
    return out
