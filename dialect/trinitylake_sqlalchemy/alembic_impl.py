"""Alembic support: ``op.create_table``, ``op.add_column``, ``op.drop_column``,
``op.alter_column(nullable=..., comment=..., new_column_name=...)``, ``op.drop_table`` and
``op.rename_table`` compile to TrinityLake SQL.

The version table. Alembic records its heads as rows of ``alembic_version``; TrinityLake
tables hold no rows, so the heads live in that table's comment instead, separated by
spaces. The version table is marked (``Table.info[HEADS_KEY]``) and:

* Alembic's stamps (INSERT / UPDATE / DELETE of a head, run through ``impl._exec``)
  become ``COMMENT ON TABLE alembic_version IS '<heads>'``, in the migration's
  transaction, so one migration step is one lakehouse version;
* its reads (``SELECT version_num FROM alembic_version``) are compiled to a SELECT of
  that comment from information_schema.tables, split into one row per head by the
  execution context (:mod:`.compiler`, :mod:`.base`).

Offline (``--sql``) mode cannot stamp: it would need the heads at run time.
"""

from __future__ import annotations

from typing import Any

from alembic.ddl.base import (
    ColumnComment,
    ColumnName,
    alter_table,
    format_column_name,
    format_table_name,
)
from alembic.ddl.impl import DefaultImpl
from alembic.util import CommandError
from sqlalchemy import select
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql import dml, elements, operators

from .compiler import HEADS_KEY, _string_literal

__all__ = ["TrinityLakeImpl"]


class TrinityLakeImpl(DefaultImpl):
    __dialect__ = "trinitylake"
    # Every statement of a migration is in one transaction, committed as one version.
    transactional_ddl = True

    def version_table_impl(self, **kw: Any) -> Any:
        table = super().version_table_impl(**kw)
        table.info[HEADS_KEY] = True
        return table

    def _exec(self, construct: Any, *args: Any, **kw: Any) -> Any:
        if isinstance(construct, dml.UpdateBase) and construct.table.info.get(HEADS_KEY):
            self._stamp(construct)
            return None  # no rowcount: Alembic then skips its one-row check
        return super()._exec(construct, *args, **kw)

    def _stamp(self, construct: Any) -> None:
        if self.as_sql:
            raise CommandError(
                "TrinityLake keeps Alembic's heads in the comment of the version table; "
                "offline (--sql) mode cannot write them"
            )
        table = construct.table
        assert self.connection is not None
        heads = [row[0] for row in self.connection.execute(select(table.c.version_num))]
        if isinstance(construct, dml.Insert):
            heads.append(_value(construct._values))
        else:
            old = _where_value(construct.whereclause)
            if old not in heads:
                raise CommandError(f"head {old!r} is not in {table.name!r}: {heads}")
            index = heads.index(old)
            if isinstance(construct, dml.Update):
                heads[index] = _value(construct._values)
            else:
                del heads[index]
        for head in heads:
            if not head or any(ch.isspace() for ch in head):
                raise CommandError(f"revision {head!r}: TrinityLake needs ids without spaces")
        preparer = self.dialect.identifier_preparer
        self.connection.exec_driver_sql(
            f"COMMENT ON TABLE {preparer.format_table(table)} IS ?",
            (" ".join(heads) if heads else None,),
        )


def _literal(element: Any) -> str:
    """The revision in Alembic's ``literal_column("'rev'")`` (or a bound value)."""
    if isinstance(element, elements.BindParameter):
        return str(element.value)
    text = getattr(element, "text", None)  # a TextClause
    if isinstance(element, elements.ColumnClause) and element.is_literal:
        text = element.name
    if isinstance(text, str) and len(text) >= 2 and text[0] == text[-1] == "'":
        return text[1:-1].replace("''", "'")
    raise CommandError(f"cannot read a revision from {element!r}")


def _value(values: Any) -> str:
    (value,) = values.values()
    return _literal(value)


def _where_value(where: Any) -> str:
    if not (isinstance(where, elements.BinaryExpression) and where.operator is operators.eq):
        raise CommandError(f"unexpected condition on the version table: {where}")
    return _literal(where.right)


@compiles(ColumnName, "trinitylake")
def _rename_column(element: ColumnName, compiler: Any, **kw: Any) -> str:
    return "%s RENAME COLUMN %s TO %s" % (
        alter_table(compiler, element.table_name, element.schema),
        format_column_name(compiler, element.column_name),
        format_column_name(compiler, element.newname),
    )


@compiles(ColumnComment, "trinitylake")
def _column_comment(element: ColumnComment, compiler: Any, **kw: Any) -> str:
    return "COMMENT ON COLUMN %s.%s IS %s" % (
        format_table_name(compiler, element.table_name, element.schema),
        format_column_name(compiler, element.column_name),
        "NULL" if element.comment is None else _string_literal(element.comment),
    )
