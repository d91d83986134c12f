"""SQLAlchemy types of the dialect, and the one mapping between them and SPEC 5 types.

DDL direction (:class:`~.compiler.TrinityLakeTypeCompiler`): every generic SQLAlchemy type
is written as a SPEC 5 type name. Reflection direction (:func:`to_sqlalchemy`): the
canonical type text that DESCRIBE TABLE and information_schema return is read with
``trinitylake_dbapi.parse_type`` (the driver's one alias table) and turned into a
SQLAlchemy type here:

=============  ==========================================
SPEC 5         SQLAlchemy
=============  ==========================================
boolean        BOOLEAN
int2/int4/int8 SMALLINT / INTEGER / BIGINT
decimal(p,s)   DECIMAL(p, s)
float4/float8  REAL / DOUBLE
char(n)        CHAR(n)
varchar[(n)]   VARCHAR(n) (no length when unbounded)
date           DATE
time[(p)]      TIME(precision=p)            (this module)
timetz[(p)]    TIME(timezone=True, precision=p)
timestamp      TIMESTAMP(precision=p)       (this module)
timestamptz    TIMESTAMP(timezone=True, precision=p)
fixed(n)       FIXED(n)  (a sqlalchemy BINARY: fixed length)
binary[(n)]    LargeBinary(n) (no length when unbounded)
list<T>        sqlalchemy ARRAY(T); list<list<T>> is ARRAY(T, dimensions=2)
map<K, V>      MAP(K, V)                    (this module)
struct<a: T>   STRUCT(("a", T), ...)        (this module)
=============  ==========================================

The nested types :class:`MAP` and :class:`STRUCT` take their inner types as SQLAlchemy
types or as TrinityLake SQL type text (``"ARRAY<BIGINT>"``), and write them back as that
text wherever Python code is generated from them: ``repr``, sqlacodegen (which renders a
type from its constructor's arguments, read back as same-named attributes) and Alembic
autogenerate. So ``MAP('VARCHAR', 'ARRAY<BIGINT>')`` evaluates with only ``MAP``
imported, where ``MAP(VARCHAR(), ARRAY(BIGINT()))`` would need three more imports that
no generator writes. Every type here survives ``adapt`` (SQLAlchemy's
``constructor_copy``), ``copy``, pickling and ``eval(repr(t))``.
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

from sqlalchemy import exc, types as sqltypes, util

from trinitylake_dbapi import TypeSpec, parse_type

from .compat import DOUBLE
from .compiler import TrinityLakeSQL

__all__ = [
    "TIME",
    "TIMESTAMP",
    "FIXED",
    "MAP",
    "STRUCT",
    "StructField",
    "to_sqlalchemy",
    "from_type_text",
    "type_text",
]


class TIME(sqltypes.TIME):
    """``time(p)`` / ``timetz(p)``: a TIME with an optional fractional-second precision."""

    def __init__(self, timezone: bool = False, precision: int | None = None) -> None:
        super().__init__(timezone=timezone)
        self.precision = precision


class TIMESTAMP(sqltypes.TIMESTAMP):
    """``timestamp(p)`` / ``timestamptz(p)``: a TIMESTAMP with an optional precision."""

    def __init__(self, timezone: bool = False, precision: int | None = None) -> None:
        super().__init__(timezone=timezone)
        self.precision = precision


class FIXED(sqltypes.BINARY):
    """``fixed(n)``: binary of exactly n bytes."""

    __visit_name__ = "FIXED"

    def __init__(self, length: int) -> None:
        super().__init__(length=length)


class StructField(NamedTuple):
    """A field of a :class:`STRUCT`: name, type, nullability and comment.

    Its repr is the plain tuple :class:`STRUCT` also accepts, with the type as text and
    the defaults left out (``('a', 'INT')``), so that generated code needs no import of
    this class (see the module docstring)."""

    name: str
    type: Any
    nullable: bool = True
    comment: str | None = None

    def __repr__(self) -> str:
        spec: tuple = (self.name, _written(self.type))
        if not self.nullable or self.comment is not None:
            spec += (self.nullable,)
        if self.comment is not None:
            spec += (self.comment,)
        return repr(spec)


@functools.cache
def _dialect() -> Any:
    """How the dialect writes SQL (not the dialect itself, which is built on this module)."""
    return TrinityLakeSQL()


def type_text(type_: Any) -> str:
    """The TrinityLake SQL text of a SQLAlchemy type, as CREATE TABLE writes it
    (``ARRAY<BIGINT>``); raises CompileError for a type the format cannot hold."""
    return sqltypes.to_instance(type_).compile(dialect=_dialect())


def _written(type_: Any) -> Any:
    """How a nested type is written in generated code: its type text, or the type
    itself when it has none (it cannot be stored, or compiling it fails)."""
    if isinstance(type_, str):  # already text (a StructField made by hand)
        return type_
    try:
        return type_text(type_)
    except exc.CompileError:
        return type_


def _type(t: Any, *, what: str) -> sqltypes.TypeEngine:
    """A nested type given as a SQLAlchemy type (class or instance) or as type text."""
    if isinstance(t, str):
        return from_type_text(t, column=what)
    return sqltypes.to_instance(t)


class MAP(sqltypes.TypeEngine[dict]):
    """``map<K, V>``. The key is never null; ``value_nullable=False`` writes
    ``V NOT NULL``. ``key`` and ``value`` are SQLAlchemy types or type text; the types
    are ``key_type`` / ``value_type``, their text (what ``repr`` writes) ``key`` /
    ``value``."""

    __visit_name__ = "MAP"
    hashable = False

    def __init__(self, key: Any, value: Any, value_nullable: bool = True) -> None:
        self.key_type = _type(key, what="MAP key")
        self.value_type = _type(value, what="MAP value")
        self.value_nullable = value_nullable
        # Same-named attributes of the constructor's arguments: read by repr, sqlacodegen
        # and SQLAlchemy's cache key, so they hold the text.
        self.key = _written(self.key_type)
        self.value = _written(self.value_type)

    def adapt(self, cls: Any, **kw: Any) -> Any:
        # Copies keep the inner SQLAlchemy types themselves, not their text.
        if isinstance(cls, type) and issubclass(cls, MAP):
            kw.setdefault("key", self.key_type)
            kw.setdefault("value", self.value_type)
        return super().adapt(cls, **kw)

    @property
    def python_type(self) -> type:
        return dict


class STRUCT(sqltypes.TypeEngine[dict]):
    """``struct<a: T, ...>``. Fields are :class:`StructField` or ``(name, type)`` /
    ``(name, type, nullable[, comment])`` tuples; a type is a SQLAlchemy type or type
    text."""

    __visit_name__ = "STRUCT"
    hashable = False

    def __init__(self, *fields: Any) -> None:
        if not fields:
            raise ValueError("a STRUCT needs at least one field")
        self.fields = tuple(
            StructField(f[0], _type(f[1], what=f"STRUCT field {f[0]!r}"), *f[2:])
            if not isinstance(f, StructField)
            else f._replace(type=_type(f.type, what=f"STRUCT field {f.name!r}"))
            for f in fields
        )

    def adapt(self, cls: Any, **kw: Any) -> Any:
        # SQLAlchemy's copy passes keyword arguments only: the fields are positional.
        if isinstance(cls, type) and issubclass(cls, STRUCT):
            return util.constructor_copy(self, cls, *self.fields, **kw)
        return super().adapt(cls, **kw)

    @property
    def python_type(self) -> type:
        return dict


_SIMPLE = {
    "boolean": sqltypes.BOOLEAN,
    "int2": sqltypes.SMALLINT,
    "int4": sqltypes.INTEGER,
    "int8": sqltypes.BIGINT,
    "float4": sqltypes.REAL,
    "float8": DOUBLE,
    "date": sqltypes.DATE,
}


def to_sqlalchemy(t: TypeSpec) -> sqltypes.TypeEngine:
    """The SQLAlchemy type of a SPEC 5 type (table in the module docstring)."""
    kind = t.kind
    if kind in _SIMPLE:
        return _SIMPLE[kind]()
    if kind == "decimal":
        return sqltypes.DECIMAL(precision=t.precision, scale=t.scale)
    if kind == "char":
        return sqltypes.CHAR(t.length)
    if kind == "varchar":
        return sqltypes.VARCHAR(t.length)
    if kind in ("time", "timetz"):
        return TIME(timezone=kind == "timetz", precision=t.precision)
    if kind in ("timestamp", "timestamptz"):
        return TIMESTAMP(timezone=kind == "timestamptz", precision=t.precision)
    if kind == "fixed":
        assert t.length is not None
        return FIXED(t.length)
    if kind == "binary":
        return sqltypes.LargeBinary(t.length)
    if kind == "list":
        # SQLAlchemy writes list<list<T>> as ARRAY(T, dimensions=2), never ARRAY(ARRAY(T)).
        dimensions, inner = 0, t
        while inner.kind == "list":
            assert inner.element is not None
            dimensions, inner = dimensions + 1, inner.element.type
        return sqltypes.ARRAY(to_sqlalchemy(inner), dimensions=dimensions if dimensions > 1 else None)
    if kind == "map":
        assert t.key is not None and t.value is not None
        return MAP(to_sqlalchemy(t.key.type), to_sqlalchemy(t.value.type),
                   value_nullable=t.value.nullable)
    if kind == "struct":
        return STRUCT(*(StructField(f.name, to_sqlalchemy(f.type), f.nullable, f.comment)
                        for f in t.fields))
    raise AssertionError(f"unhandled kind {kind!r}")  # parse_type only returns SPEC 5 kinds


def from_type_text(text: str, *, column: str) -> sqltypes.TypeEngine:
    """The SQLAlchemy type of a type as the catalog writes it (e.g. ``decimal(10,2)``)."""
    return to_sqlalchemy(parse_type(text, column=column))
