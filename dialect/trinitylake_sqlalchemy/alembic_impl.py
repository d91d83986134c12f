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

Autogenerate:

* the dialect's types (:mod:`.types`) are rendered as ``trinitylake_sqlalchemy.types.X(...)``
  and the migration imports that module (``render_type``); their nested types are
  written as type text, so nothing else needs importing;
* foreign keys, indexes and unique constraints of the models are not compared: the
  format stores none of them (their DDL compiles to nothing), so comparing would propose
  creating them on every run and ``alembic check`` could never pass.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

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

from . import types as dialect_types
from .compiler import HEADS_KEY, string_literal

if TYPE_CHECKING:
    from alembic.autogenerate.api import AutogenContext
    from sqlalchemy import ForeignKeyConstraint, Index, UniqueConstraint
    from sqlalchemy.types import TypeEngine

__all__ = ["TrinityLakeImpl"]


class TrinityLakeImpl(DefaultImpl):
    __dialect__ = "trinitylake"
    # Every statement of a migration is in one transaction, committed as one version.
    transactional_ddl = True

    # -- autogenerate ---------------------------------------------------------------

    def render_type(self, type_obj: TypeEngine, autogen_context: AutogenContext) -> str | Literal[False]:
        """``trinitylake_sqlalchemy.types.MAP('VARCHAR', 'INT')`` for a type of this
        dialect, with its module added to the migration's imports; ``False`` (Alembic's
        own rendering) for any other type, or when the project sets its own
        ``user_module_prefix``."""
        module = dialect_types.__name__
        if type(type_obj).__module__ != module or autogen_context.opts.get("user_module_prefix"):
            return False
        autogen_context.imports.add(f"import {module}")
        return f"{module}.{type_obj!r}"

    def correct_for_autogen_foreignkeys(
        self, conn_fks: set[ForeignKeyConstraint], metadata_fks: set[ForeignKeyConstraint]
    ) -> None:
        # The format has no foreign keys: nothing to compare (module docstring).
        metadata_fks.clear()

    def correct_for_autogen_constraints(
        self,
        conn_uniques: set[UniqueConstraint],
        conn_indexes: set[Index],
        metadata_unique_constraints: set[UniqueConstraint],
        metadata_indexes: set[Index],
    ) -> None:
        # Nor indexes or unique constraints.
        metadata_unique_constraints.clear()
        metadata_indexes.clear()

    # -- the version table -------------------------------------------------------------

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
        "NULL" if element.comment is None else string_literal(element.comment),
    )
