"""Column definitions: sqlglot ``ColumnDef``/``DataType`` nodes -> format ColumnSpecs, and
ColumnSpecs -> DDL text (SHOW CREATE TABLE) that the dialect reads back.

Type names go through the one type table, :mod:`trinitylake_dbapi.format.types`: each
sqlglot type node is named by :data:`DTYPE_NAMES` with one of SPEC 5's names, and
:func:`~trinitylake_dbapi.format.types.type_from_sql` applies the aliases, parameter
rules and defaults. The decisions sit in the dialect's tokenizer (see dialect.py):
``TIMESTAMP`` is ``timestamp`` (no time zone), ``TIMESTAMP WITH TIME ZONE`` is
``timestamptz``, ``STRING``/``TEXT`` are ``varchar``, ``FLOAT`` is ``float8``. A type
outside SPEC 5 (``TINYINT``, ``JSON``, ``INTERVAL``, ...) is refused naming the column.
"""

from __future__ import annotations

from typing import Sequence

from sqlglot import exp

from trinitylake_dbapi.sql.compat import DType
from trinitylake_dbapi.errors import InvalidDefinitionError, NotSupportedError
from trinitylake_dbapi.format.types import (
    ColumnSpec,
    TypeSpec,
    canonical_kind,
    type_from_sql,
    quote_string,
    type_to_sql,
    validate_column,
)
from trinitylake_dbapi.sql.binding import constant
from trinitylake_dbapi.sql.dialect import TrinityLake, quote_identifier

__all__ = ["DTYPE_NAMES", "type_spec", "column_spec", "column_specs", "create_table_sql"]

#: sqlglot type node -> the SPEC 5 name it was written as (resolved by format.types).
DTYPE_NAMES: dict[DType, str] = {
    DType.BOOLEAN: "boolean",
    DType.SMALLINT: "smallint",
    DType.INT: "int",
    DType.BIGINT: "bigint",
    DType.DECIMAL: "decimal",
    DType.FLOAT: "real",
    DType.DOUBLE: "double",
    DType.CHAR: "char",
    DType.NCHAR: "nchar",
    DType.BPCHAR: "bpchar",
    DType.VARCHAR: "varchar",
    DType.NVARCHAR: "nvarchar",
    DType.TEXT: "text",
    DType.DATE: "date",
    DType.TIME: "time",
    DType.TIMETZ: "timetz",
    DType.TIMESTAMP: "timestamp",
    DType.TIMESTAMPTZ: "timestamptz",
    DType.FIXEDSTRING: "fixed",
    DType.BINARY: "binary",
    DType.VARBINARY: "varbinary",
    DType.STRUCT: "struct",
    DType.MAP: "map",
    DType.ARRAY: "array",
    DType.LIST: "list",
}


def _type_text(node: exp.Expr) -> str:
    try:
        return node.sql(dialect=TrinityLake)
    except Exception:  # noqa: BLE001 - only words an error message
        return str(node)


def _params(node: exp.DataType, path: str) -> list[int]:
    params = []
    for p in node.expressions:
        value = p.this if isinstance(p, exp.DataTypeParam) else p
        if not (isinstance(value, exp.Literal) and not value.is_string and value.this.isdigit()):
            raise InvalidDefinitionError(
                f"column {path!r}: type {_type_text(node)!r}: parameters must be integers"
            )
        params.append(int(value.this))
    return params


def _field(node: exp.Expr, name: str, path: str) -> ColumnSpec:
    """A nested element, key, value or struct field: a bare DataType, or a ColumnDef
    carrying NOT NULL / COMMENT."""
    if isinstance(node, exp.ColumnDef):
        return column_spec(node, path, name=name)
    return ColumnSpec(name, type_spec(node, path))


def type_spec(node: exp.Expr, path: str) -> TypeSpec:
    """The TypeSpec of a sqlglot type node; ``path`` names the column in errors."""
    if not isinstance(node, exp.DataType) or not isinstance(node.this, DType):
        raise InvalidDefinitionError(f"column {path!r}: unknown type {_type_text(node)!r}")
    name = DTYPE_NAMES.get(node.this)
    if name is None:
        # Name the type as written; raises for anything outside SPEC 5. If sqlglot's
        # text is a SPEC 5 alias (UUID prints as STRING), name it by its node instead.
        canonical_kind(_type_text(node), column=path)
        canonical_kind(node.this.value, column=path)
        raise InvalidDefinitionError(f"column {path!r}: unknown type {_type_text(node)!r}")
    kind = _KINDS.get(name) or canonical_kind(name, column=path)
    if kind == "list":
        if len(node.expressions) != 1:
            raise InvalidDefinitionError(f"column {path!r}: {name}<...> takes one element type")
        element = _field(node.expressions[0], "element", path + ".element")
        return TypeSpec("list", element=element)
    if kind == "map":
        if len(node.expressions) != 2:
            raise InvalidDefinitionError(f"column {path!r}: map<...> takes a key and a value type")
        key = _field(node.expressions[0], "key", path + ".key")
        value = _field(node.expressions[1], "value", path + ".value")
        if not key.nullable:
            pass  # NOT NULL on a key is allowed and redundant
        return TypeSpec(
            "map", key=ColumnSpec("key", key.type, False, key.comment), value=value
        )
    if kind == "struct":
        fields = []
        for f in node.expressions:
            if not isinstance(f, exp.ColumnDef):
                raise InvalidDefinitionError(
                    f"column {path!r}: struct fields need names, e.g. struct<a: int>"
                )
            fields.append(column_spec(f, f"{path}.{f.name}"))
        return TypeSpec("struct", fields=tuple(fields))
    params = _params(node, path) if node.expressions else []
    key = (name, *params)
    spec = _SCALARS.get(key)
    if spec is None:
        spec = type_from_sql(name, params, column=path)
        if len(_SCALARS) < 1024:
            _SCALARS[key] = spec
    return spec


def _kinds() -> dict[str, str]:
    kinds = {}
    for name in DTYPE_NAMES.values():
        try:
            kinds[name] = canonical_kind(name, column="")
        except InvalidDefinitionError:  # left to canonical_kind, which names the column
            pass
    return kinds


#: DTYPE_NAMES' names -> canonical kind (the ones SPEC 5 knows).
_KINDS = _kinds()
#: (name, *parameters) -> TypeSpec of the scalar types already read (TypeSpecs are
#: frozen; only valid types are kept, errors are raised anew with their column).
_SCALARS: dict[tuple, TypeSpec] = {}


def column_spec(node: exp.ColumnDef, path: str | None = None, *, name: str | None = None) -> ColumnSpec:
    """The ColumnSpec of a bound ``ColumnDef`` (NOT NULL, NULL and COMMENT applied; a
    PRIMARY KEY constraint is read by :func:`column_specs`)."""
    name = node.name if name is None else name
    path = name if path is None else path
    kind = node.args.get("kind")
    if kind is None:
        raise InvalidDefinitionError(f"column {path!r} needs a type")
    spec_type = type_spec(kind, path)
    nullable = True
    comment = None
    for constraint in node.args.get("constraints") or []:
        c = constraint.args.get("kind") if isinstance(constraint, exp.ColumnConstraint) else constraint
        if isinstance(c, exp.NotNullColumnConstraint):
            nullable = bool(c.args.get("allow_null"))
        elif isinstance(c, exp.CommentColumnConstraint):
            comment = constant(c.this, f"the comment of column {path!r}")
            if comment is not None and not isinstance(comment, str):
                raise InvalidDefinitionError(f"the comment of column {path!r} must be a string")
        elif isinstance(c, exp.PrimaryKeyColumnConstraint):
            pass
        else:
            raise NotSupportedError(
                f"column {path!r}: constraint {_type_text(constraint)!r} is not supported"
            )
    return ColumnSpec(name, spec_type, nullable, comment)


def column_specs(
    nodes: Sequence[exp.ColumnDef], primary_key: Sequence[str] = ()
) -> tuple[list[ColumnSpec], list[str]]:
    """ColumnSpecs of a table's column definitions and its primary key (the table-level
    key, or the columns marked PRIMARY KEY; not both). Primary key columns are NOT NULL,
    as in SQL. Every column is validated and names must be unique, before anything is
    written."""
    columns = [column_spec(n) for n in nodes]
    inline = [
        n.name
        for n in nodes
        for c in n.args.get("constraints") or []
        if isinstance(c.args.get("kind") if isinstance(c, exp.ColumnConstraint) else c,
                      exp.PrimaryKeyColumnConstraint)
    ]  # fmt: skip
    if inline and primary_key:
        raise InvalidDefinitionError("PRIMARY KEY is given both on a column and for the table")
    key = list(primary_key) or inline
    seen: set[str] = set()
    for c in columns:
        if c.name in seen:
            raise InvalidDefinitionError(f"duplicate column name {c.name!r}")
        seen.add(c.name)
        validate_column(c)
    for k in key:
        if k not in seen:
            raise InvalidDefinitionError(f"primary key column {k!r} is not a column of the table")
    if len(set(key)) != len(key):
        raise InvalidDefinitionError("the primary key names a column twice")
    columns = [
        ColumnSpec(c.name, c.type, False, c.comment) if c.name in key else c for c in columns
    ]
    return columns, key


# ---------------------------------------------------------------------------
# DDL text
# ---------------------------------------------------------------------------


def _properties(props: dict[str, str]) -> str:
    return ", ".join(f"{quote_string(k)} = {quote_string(v)}" for k, v in sorted(props.items()))


def create_table_sql(info, partitioned_by: str = "") -> str:  # noqa: ANN001 - a catalog TableInfo
    """CREATE TABLE text for a table, readable by the dialect (SHOW CREATE TABLE);
    ``partitioned_by``: the fields of its PARTITIONED BY clause, if any."""
    lines = []
    for c in info.columns:
        line = f"  {quote_identifier(c.name)} {type_to_sql(c.type, quote_name=quote_identifier)}"
        if not c.nullable:
            line += " NOT NULL"
        if c.comment is not None:
            line += f" COMMENT {quote_string(c.comment)}"
        lines.append(line)
    if info.primary_key:
        lines.append(f"  PRIMARY KEY ({', '.join(quote_identifier(k) for k in info.primary_key)})")
    text = f"CREATE TABLE {quote_identifier(info.namespace)}.{quote_identifier(info.name)} (\n"
    text += ",\n".join(lines) + "\n)"
    if info.table_format:  # a format word, not a name: quoted only when it must be
        fmt = info.table_format.lower()
        text += f"\nUSING {fmt if fmt.isidentifier() and fmt.isascii() else quote_identifier(fmt)}"
    if partitioned_by:
        text += f"\nPARTITIONED BY ({partitioned_by})"
    if info.comment is not None:
        text += f"\nCOMMENT {quote_string(info.comment)}"
    if info.properties:
        text += f"\nTBLPROPERTIES ({_properties(info.properties)})"
    if info.location is not None:
        text += f"\nLOCATION {quote_string(info.location)}"
    return text
