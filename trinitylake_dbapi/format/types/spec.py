"""Column types (SPEC 5): the model, the SQL names and canonical text of types, and the
checks of a type (nesting, parameters, nested fields).

These belong together: a type prints as its canonical text, reading a text validates
the type, and every validation message quotes the type's text. How types are stored in
definition files is in :mod:`.proto`, their Iceberg counterparts in :mod:`.iceberg`.

Data model
    :class:`TypeSpec` is a type with its parameters; :class:`ColumnSpec` is a named,
    possibly nullable, possibly commented column of a type. Nested types hold their
    children as ColumnSpecs: struct ``fields``, map ``key`` (named "key", never
    nullable) and ``value`` (named "value"), list ``element`` (named "element"), so every
    nested field has a nullability, a comment and a column id like a top-level column.

Canonical text (:func:`type_to_sql`, read back by :func:`parse_type`)
    ``boolean int2 int4 int8 float4 float8 date`` as they are;
    ``decimal(P,S)`` always with both parameters; ``char(N)`` always with its length;
    ``varchar``/``binary`` without a length when unbounded, else ``varchar(N)``;
    ``fixed(N)``; ``time``/``timetz``/``timestamp``/``timestamptz`` with ``(P)`` only when
    a precision is set;
    ``list<T>``, ``map<K, V>``, ``struct<a: T, b: U>`` where each element, value or field
    type may be followed by `` NOT NULL`` and `` COMMENT 'text'`` (quotes doubled).
    A struct field name that is not a plain identifier ``[A-Za-z_][A-Za-z0-9_]*`` is
    written in backquotes, backquotes doubled (:func:`quote_name`, the one quoting rule of
    names). Column ids are never shown.

Nesting (rule N1)
    A type nests at most :data:`MAX_NESTING_DEPTH` (64) levels of list, map and struct
    (``list<int4>`` is one level). Writers refuse deeper types before anything is
    written; the limit stays well inside what protobuf readers decode (about 97 levels
    of this schema), so every stored definition can be read by every implementation.

Errors are :class:`~trinitylake_dbapi.errors.InvalidDefinitionError` and name the column
(nested fields as ``col.field``, ``col.key``, ``col.value``, ``col.element``) and the type
text. Pure: no I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from types import MappingProxyType
from typing import Callable, Collection, Iterable, Iterator, Mapping, Sequence

from trinitylake_dbapi.errors import InvalidDefinitionError
from trinitylake_dbapi.format.trinitylake_pb2 import DataType

#: Canonical type names, in DataType order (KINDS[i] is DataType value i).
KINDS: tuple[str, ...] = (
    "boolean", "int2", "int4", "int8", "decimal", "float4", "float8", "char", "varchar",
    "date", "time", "timetz", "timestamp", "timestamptz", "fixed", "binary",
    "struct", "map", "list",
)  # fmt: skip
NESTED_KINDS = frozenset({"struct", "map", "list"})
LENGTH_KINDS = frozenset({"char", "varchar", "fixed", "binary"})
TIME_KINDS = frozenset({"time", "timetz", "timestamp", "timestamptz"})

MAX_DECIMAL_PRECISION = 38
MAX_TIME_PRECISION = 9
#: Largest length of char, varchar, fixed and binary.
MAX_LENGTH = 2**31 - 1
MAX_COLUMN_ID = 2**32 - 1
#: Most levels of list, map and struct one column's type may nest (rule N1).
MAX_NESTING_DEPTH = 64

#: SQL type name or alias (lower case, words separated by one space) -> canonical kind.
#: Exactly the names of SPEC 5; anything else is refused.
ALIASES: Mapping[str, str] = MappingProxyType(
    {
        "boolean": "boolean", "bool": "boolean",
        "int2": "int2", "smallint": "int2",
        "int4": "int4", "int": "int4", "integer": "int4",
        "int8": "int8", "bigint": "int8", "long": "int8",
        "decimal": "decimal", "numeric": "decimal",
        "float4": "float4", "real": "float4",
        "float8": "float8", "float": "float8", "double": "float8",
        "double precision": "float8",
        "char": "char", "character": "char", "nchar": "char", "bpchar": "char",
        "varchar": "varchar", "character varying": "varchar", "nvarchar": "varchar",
        "text": "varchar", "string": "varchar",
        "date": "date",
        "time": "time",
        "timetz": "timetz",
        "timestamp": "timestamp",
        "timestamptz": "timestamptz",
        "fixed": "fixed",
        "binary": "binary", "varbinary": "binary", "varbyte": "binary",
        "struct": "struct", "row": "struct",
        "map": "map",
        "list": "list", "array": "list",
    }
)  # fmt: skip

KIND_TO_DATATYPE: Mapping[str, int] = {k: DataType.Value(k.upper()) for k in KINDS}
DATATYPE_TO_KIND: Mapping[int, str] = {v: k for k, v in KIND_TO_DATATYPE.items()}


def column_error(column: str, message: str) -> InvalidDefinitionError:
    """The error of a column (or nested field ``col.field``) that breaks a SPEC 5 rule."""
    return InvalidDefinitionError(f"column {column!r}: {message}")


@dataclass(frozen=True)
class TypeSpec:
    """A column type: canonical ``kind`` plus the parameters and children it takes.

    Defaults are applied on construction so equal types compare equal: a ``char``
    without a length is ``char(1)``; a ``decimal`` without parameters is
    ``decimal(10,0)`` (as in Spark) and ``decimal(p)`` is ``decimal(p,0)``. Ranges and
    structure are checked by :func:`validate_column` (called when storing), not here,
    because only there is the column known to name it in the error.
    """

    kind: str
    length: int | None = None  # char, varchar, fixed, binary
    precision: int | None = None  # decimal; time, timetz, timestamp, timestamptz
    scale: int | None = None  # decimal
    fields: tuple[ColumnSpec, ...] = ()  # struct
    key: ColumnSpec | None = None  # map (named "key", not nullable)
    value: ColumnSpec | None = None  # map (named "value")
    element: ColumnSpec | None = None  # list (named "element")

    def __post_init__(self) -> None:
        if self.kind == "char" and self.length is None:
            object.__setattr__(self, "length", 1)
        elif self.kind == "decimal":
            if self.precision is None and self.scale is None:
                object.__setattr__(self, "precision", 10)
            if self.scale is None:
                object.__setattr__(self, "scale", 0)
        if not isinstance(self.fields, tuple):
            object.__setattr__(self, "fields", tuple(self.fields))

    def __str__(self) -> str:
        return type_to_sql(self)


@dataclass(frozen=True)
class ColumnSpec:
    """A column or nested field: name, type, nullability, comment and (once stored) id."""

    name: str
    type: TypeSpec
    nullable: bool = True
    comment: str | None = None
    id: int | None = None  # assigned when stored


def struct_type(*fields: ColumnSpec) -> TypeSpec:
    """A struct of the given fields (checked when stored: at least one, unique names)."""
    return TypeSpec("struct", fields=tuple(fields))


def map_type(
    key: TypeSpec,
    value: TypeSpec,
    *,
    value_nullable: bool = True,
    key_comment: str | None = None,
    value_comment: str | None = None,
) -> TypeSpec:
    """A map whose key field is named "key" (never nullable) and value field "value"."""
    return TypeSpec(
        "map",
        key=ColumnSpec("key", key, nullable=False, comment=key_comment),
        value=ColumnSpec("value", value, nullable=value_nullable, comment=value_comment),
    )


def list_type(
    element: TypeSpec, *, element_nullable: bool = True, element_comment: str | None = None
) -> TypeSpec:
    """A list whose element field is named "element"."""
    return TypeSpec(
        "list",
        element=ColumnSpec("element", element, nullable=element_nullable, comment=element_comment),
    )


# ---------------------------------------------------------------------------
# SQL names -> types
# ---------------------------------------------------------------------------


def _normalize(name: str) -> str:
    return " ".join(name.lower().split())


def _type_text(name: str, params: Sequence[int]) -> str:
    return f"{name}({', '.join(str(p) for p in params)})" if params else name


def canonical_kind(name: str, *, column: str) -> str:
    """The canonical kind of an SQL type name or alias (case and spacing ignored).

    Raises InvalidDefinitionError naming the column and the type for a name SPEC 5 does
    not list (e.g. ``tinyint``).
    """
    kind = ALIASES.get(_normalize(name)) if isinstance(name, str) else None
    if kind is None:
        raise column_error(
            column,
            f"unknown type {name!r}; the types are {', '.join(KINDS)} and their aliases "
            f"{', '.join(a for a in ALIASES if a not in KINDS)}",
        )
    return kind


def type_from_sql(name: str, params: Sequence[int] = (), *, column: str) -> TypeSpec:
    """The TypeSpec of a non-nested SQL type, e.g. ``("VARCHAR", [20])``.

    Case-insensitive; accepts every alias of SPEC 5. Parameters: ``decimal(p[,s])``
    (precision 1..38, scale 0..p, default (10,0)); ``char[(n)]`` (default 1);
    ``varchar[(n)]``, ``binary[(n)]`` (no length = unbounded); ``fixed(n)`` (required);
    ``time[(p)]``, ``timetz``, ``timestamp``, ``timestamptz`` (precision 0..9, absent =
    unspecified); no parameters for the others. Nested kinds (struct, map, list) need
    their children: use :func:`parse_type` or the ``*_type`` constructors.

    Raises InvalidDefinitionError naming the column and the type text.
    """
    kind = canonical_kind(name, column=column)
    text = _type_text(name, params)
    if kind in NESTED_KINDS:
        raise column_error(column, f"type {text!r} is nested and needs its fields, e.g. {kind}<...>")
    for p in params:
        if isinstance(p, bool) or not isinstance(p, int):
            raise column_error(column, f"type {text!r}: parameters must be integers")
    if kind == "decimal":
        most = 2
    elif kind in LENGTH_KINDS or kind in TIME_KINDS:
        most = 1
    else:
        most = 0
    if len(params) > most:
        takes = "no parameters" if most == 0 else f"at most {most} parameter(s)"
        raise column_error(column, f"type {text!r}: {kind} takes {takes}")
    if kind == "fixed" and not params:
        raise column_error(column, f"type {text!r}: fixed needs a length, e.g. fixed(16)")
    if kind == "decimal":
        spec = TypeSpec(kind, precision=params[0] if params else None,
                        scale=params[1] if len(params) > 1 else None)  # fmt: skip
    elif kind in LENGTH_KINDS:
        spec = TypeSpec(kind, length=params[0] if params else None)
    elif kind in TIME_KINDS:
        spec = TypeSpec(kind, precision=params[0] if params else None)
    else:
        spec = TypeSpec(kind)
    _check_parameters(spec, column, text)
    return spec


def _check_parameters(t: TypeSpec, column: str, text: str | None = None) -> None:
    """Raise if ``t`` carries parameters its kind does not take or out of range.
    ``text`` is the type as the user wrote it (default: its canonical text)."""
    kind = t.kind

    def bad(message: str) -> InvalidDefinitionError:
        return column_error(column, f"type {(describe_type(t) if text is None else text)!r}: {message}")

    for attr in ("length", "precision", "scale"):
        v = getattr(t, attr)
        if v is not None and (isinstance(v, bool) or not isinstance(v, int)):
            raise bad(f"{attr} must be an integer, got {v!r}")
    if t.length is not None and kind not in LENGTH_KINDS:
        raise bad(f"{kind} takes no length")
    if t.precision is not None and kind != "decimal" and kind not in TIME_KINDS:
        raise bad(f"{kind} takes no precision")
    if t.scale is not None and kind != "decimal":
        raise bad(f"{kind} takes no scale")
    if kind in LENGTH_KINDS:
        if kind == "fixed" and t.length is None:
            raise bad("fixed needs a length")
        if t.length is not None and not 1 <= t.length <= MAX_LENGTH:
            raise bad(f"length must be between 1 and {MAX_LENGTH}, got {t.length}")
    elif kind == "decimal":
        if t.precision is None or not 1 <= t.precision <= MAX_DECIMAL_PRECISION:
            raise bad(
                f"precision must be between 1 and {MAX_DECIMAL_PRECISION}, got {t.precision}"
            )
        if t.scale is None or not 0 <= t.scale <= t.precision:
            raise bad(f"scale must be between 0 and the precision {t.precision}, got {t.scale}")
    elif kind in TIME_KINDS:
        if t.precision is not None and not 0 <= t.precision <= MAX_TIME_PRECISION:
            raise bad(
                f"precision must be between 0 and {MAX_TIME_PRECISION}, got {t.precision}"
            )


# ---------------------------------------------------------------------------
# Canonical text
# ---------------------------------------------------------------------------


_PLAIN_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def is_plain_name(name: str) -> bool:
    """True for one ordinary word, ``[A-Za-z_][A-Za-z0-9_]*``."""
    return _PLAIN_NAME.fullmatch(name) is not None


def quote_name(name: str, reserved_words: Collection[str] = ()) -> str:
    """``name`` as text that reads back as exactly that name: plain when it is one
    ordinary word (:func:`is_plain_name`) whose upper case is not in ``reserved_words``,
    else in backquotes, backquotes doubled. The one quoting rule of names: the canonical
    type text uses it with no reserved words; SQL passes the words its parser treats
    as keywords (``trinitylake_dbapi.sql.dialect.quote_identifier``)."""
    if is_plain_name(name) and name.upper() not in reserved_words:
        return name
    return "`" + name.replace("`", "``") + "`"


def quote_string(text: str) -> str:
    """A string literal: ``text`` in single quotes, single quotes doubled."""
    return "'" + text.replace("'", "''") + "'"


def _field_text(
    c: ColumnSpec, quote_name: Callable[[str], str], *, show_not_null: bool = True
) -> str:
    out = type_to_sql(c.type, quote_name=quote_name)
    if show_not_null and not c.nullable:
        out += " NOT NULL"
    if c.comment is not None:
        out += " COMMENT " + quote_string(c.comment)
    return out


def type_to_sql(t: TypeSpec, *, quote_name: Callable[[str], str] = quote_name) -> str:
    """The canonical text of a type (format in the module docstring), e.g. ``int8``,
    ``decimal(10,2)``, ``varchar(20)``, ``timestamp(3)``, ``map<varchar, int4>``,
    ``struct<a: int4 NOT NULL COMMENT 'x', b: list<varchar>>``.

    :func:`parse_type` reads it back to an equal TypeSpec (ids aside). ``quote_name``
    quotes struct field names; the SQL layer passes its own, which also quotes the words
    its parser treats as keywords, so that the text runs as SQL too.
    """
    kind = t.kind
    if kind == "decimal":
        return f"decimal({t.precision},{t.scale})"
    if kind in LENGTH_KINDS or kind in TIME_KINDS:
        param = t.length if kind in LENGTH_KINDS else t.precision
        return kind if param is None else f"{kind}({param})"
    if kind == "list":
        if t.element is None:
            raise InvalidDefinitionError("a list type needs an element")
        return f"list<{_field_text(t.element, quote_name)}>"
    if kind == "map":
        if t.key is None or t.value is None:
            raise InvalidDefinitionError("a map type needs a key and a value")
        return f"map<{_field_text(t.key, quote_name, show_not_null=False)}, {_field_text(t.value, quote_name)}>"
    if kind == "struct":
        inner = ", ".join(f"{quote_name(f.name)}: {_field_text(f, quote_name)}" for f in t.fields)
        return f"struct<{inner}>"
    return kind


_TOKEN = re.compile(
    r"""\s*(?:
        (?P<word>[A-Za-z_][A-Za-z0-9_]*)
      | (?P<number>[0-9]+)
      | `(?P<backquoted>(?:[^`]|``)*)`
      | "(?P<dquoted>(?:[^"]|"")*)"
      | '(?P<string>(?:[^']|'')*)'
      | (?P<punct>[<>(),:])
    )""",
    re.VERBOSE,
)
_TWO_WORD_NAMES = {("double", "precision"), ("character", "varying")}


class _TypeParser:
    """Recursive descent over the canonical text (plus aliases, ``array<...>``,
    ``row<...>``, and ``name type`` without a colon in structs)."""

    def __init__(self, text: str, column: str) -> None:
        self.text = text
        self.column = column
        self.tokens = list(self._tokenize())
        self.pos = 0

    def _tokenize(self) -> Iterator[tuple[str, str, int]]:
        i, text = 0, self.text
        while True:
            while i < len(text) and text[i].isspace():
                i += 1
            if i == len(text):
                return
            m = _TOKEN.match(text, i)
            if m is None:
                raise self.error(f"unexpected character {text[i]!r} at position {i + 1}")
            kind = m.lastgroup or ""
            value, start = m.group(kind), m.start(kind)
            if kind == "backquoted":
                kind, value = "name", value.replace("``", "`")
            elif kind == "dquoted":
                kind, value = "name", value.replace('""', '"')
            elif kind == "string":
                value = value.replace("''", "'")
            yield kind, value, start + 1
            i = m.end()

    def error(self, message: str) -> InvalidDefinitionError:
        return column_error(self.column, f"cannot parse type {self.text!r}: {message}")

    def peek(self) -> tuple[str, str, int] | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self, kind: str, value: str | None = None) -> str:
        tok = self.peek()
        if tok is None or tok[0] != kind or (value is not None and tok[1].lower() != value):
            want = repr(value) if value is not None else kind
            where = f"{tok[1]!r} at position {tok[2]}" if tok else "the end"
            raise self.error(f"expected {want}, found {where}")
        self.pos += 1
        return tok[1]

    def accept(self, kind: str, value: str | None = None) -> bool:
        tok = self.peek()
        if tok is not None and tok[0] == kind and (value is None or tok[1].lower() == value):
            self.pos += 1
            return True
        return False

    def parse(self) -> TypeSpec:
        t = self.type()
        tok = self.peek()
        if tok is not None:
            raise self.error(f"unexpected {tok[1]!r} at position {tok[2]}")
        return t

    def type(self) -> TypeSpec:
        name = self.take("word")
        tok = self.peek()
        if tok and tok[0] == "word" and (name.lower(), tok[1].lower()) in _TWO_WORD_NAMES:
            name = f"{name} {self.take('word')}"
        kind = canonical_kind(name, column=self.column)
        if kind == "list":
            self.take("punct", "<")
            element = self.field("element")
            self.take("punct", ">")
            return TypeSpec("list", element=element)
        if kind == "map":
            self.take("punct", "<")
            key = self.field("key")
            self.take("punct", ",")
            value = self.field("value")
            self.take("punct", ">")
            return TypeSpec("map", key=ColumnSpec("key", key.type, False, key.comment), value=value)
        if kind == "struct":
            self.take("punct", "<")
            fields = []
            if not self.accept("punct", ">"):
                while True:
                    tok = self.peek()
                    if tok is None or tok[0] not in ("word", "name"):
                        raise self.error(
                            "expected a field name, found "
                            + (f"{tok[1]!r} at position {tok[2]}" if tok else "the end")
                        )
                    self.pos += 1
                    self.accept("punct", ":")
                    fields.append(self.field(tok[1]))
                    if self.accept("punct", ">"):
                        break
                    self.take("punct", ",")
            return TypeSpec("struct", fields=tuple(fields))
        params: list[int] = []
        if self.accept("punct", "("):
            params.append(int(self.take("number")))
            while self.accept("punct", ","):
                params.append(int(self.take("number")))
            self.take("punct", ")")
        return type_from_sql(name, params, column=self.column)

    def field(self, name: str) -> ColumnSpec:
        t = self.type()
        nullable = True
        comment = None
        if self.accept("word", "not"):
            self.take("word", "null")
            nullable = False
        if self.accept("word", "comment"):
            comment = self.take("string")
        return ColumnSpec(name, t, nullable, comment)


def parse_type(text: str, *, column: str) -> TypeSpec:
    """Parse a type written as text, nested types included: the canonical form of
    :func:`type_to_sql`, any alias (``array<int>``, ``row<a: bigint>``, ``character
    varying(5)``), and struct fields written ``name type`` or ``name: type``, with names
    plain, in backquotes or in double quotes.

    The result is validated like a stored column (:func:`validate_column`). Raises
    InvalidDefinitionError naming the column and the text.
    """
    t = _TypeParser(text, column).parse()
    validate_column(ColumnSpec(column, t))
    return t


# ---------------------------------------------------------------------------
# Validation
# ---------------------------------------------------------------------------


def nested_fields(t: TypeSpec) -> Iterator[ColumnSpec]:
    """The fields directly inside ``t``: struct fields, map key and value, list element."""
    if t.kind == "struct":
        yield from t.fields
    elif t.kind == "map":
        if t.key is not None:
            yield t.key
        if t.value is not None:
            yield t.value
    elif t.kind == "list" and t.element is not None:
        yield t.element


def walk_columns(columns: Iterable[ColumnSpec], prefix: str = "") -> Iterator[tuple[str, ColumnSpec]]:
    """(path, column) for the columns and all their nested fields, depth-first, parents
    before children."""
    for c in columns:
        path = prefix + c.name
        yield path, c
        yield from walk_columns(nested_fields(c.type), path + ".")


def nesting_depth(t: TypeSpec) -> int:
    """Levels of list, map and struct in ``t`` (0 for a primitive type); iterative, so
    any depth is measured without recursion."""
    deepest = 0
    todo = [(t, 0)]
    while todo:
        node, depth = todo.pop()
        if node.kind in NESTED_KINDS:
            depth += 1
            deepest = max(deepest, depth)
            todo.extend((child.type, depth) for child in nested_fields(node) if isinstance(child, ColumnSpec))
    return deepest


def check_nesting(column: ColumnSpec, path: str | None = None) -> None:
    """InvalidDefinitionError when the column's type nests deeper than N1 allows."""
    if isinstance(column.type, TypeSpec):
        depth = nesting_depth(column.type)
        if depth > MAX_NESTING_DEPTH:
            raise column_error(
                column.name if path is None else path,
                f"the type nests {depth} levels of list, map and struct; at most "
                f"{MAX_NESTING_DEPTH} are allowed",
            )


def validate_column(column: ColumnSpec, path: str | None = None) -> None:
    """Check a column and everything nested in it can be stored.

    Checks: a non-empty name; a known kind; parameters (as :func:`type_from_sql`);
    children exactly where the kind has them (a struct has at least one field, with
    unique names; a map has a "key" that is not nullable and a "value"; a list has an
    "element"); ids, when set, between 1 and 2^32-1. ``path`` is the name used in errors
    (default: the column's name); the nesting limit N1. Raises InvalidDefinitionError.
    """
    if path is None or "." not in path:
        check_nesting(column, path)
    validate_level(column, path)
    for child in nested_fields(column.type):
        validate_column(child, f"{path if path is not None else column.name}.{child.name}")


def validate_level(column: ColumnSpec, path: str | None = None) -> None:
    """:func:`validate_column` without descending into the nested fields (a caller that
    builds columns bottom-up has validated those already)."""
    path = column.name if path is None else path
    if not isinstance(column.name, str) or not column.name:
        raise column_error(path, "a column or field name must be a non-empty string")
    if column.id is not None and (
        isinstance(column.id, bool) or not isinstance(column.id, int)
        or not 1 <= column.id <= MAX_COLUMN_ID
    ):  # fmt: skip
        raise column_error(path, f"column id must be between 1 and {MAX_COLUMN_ID}, got {column.id!r}")
    if not isinstance(column.nullable, bool):
        raise column_error(path, f"nullable must be a bool, got {column.nullable!r}")
    if column.comment is not None and not isinstance(column.comment, str):
        raise column_error(path, f"comment must be a string, got {column.comment!r}")
    t = column.type
    if not isinstance(t, TypeSpec) or t.kind not in KIND_TO_DATATYPE:
        raise column_error(path, f"unknown type {getattr(t, 'kind', t)!r}")
    kind = t.kind
    if kind not in NESTED_KINDS:
        if t.fields or t.key is not None or t.value is not None or t.element is not None:
            raise column_error(path, f"type {describe_type(t)!r}: {kind} has no nested fields")
        _check_parameters(t, path)
        return
    if t.length is not None or t.precision is not None or t.scale is not None:
        raise column_error(path, f"type {describe_type(t)!r}: {kind} takes no parameters")
    if kind != "struct" and t.fields:
        raise column_error(path, f"type {describe_type(t)!r}: only a struct has fields")
    if kind != "map" and (t.key is not None or t.value is not None):
        raise column_error(path, f"type {describe_type(t)!r}: only a map has a key and a value")
    if kind != "list" and t.element is not None:
        raise column_error(path, f"type {describe_type(t)!r}: only a list has an element")
    if kind == "struct":
        if not t.fields:
            raise column_error(path, "a struct needs at least one field")
        seen: set[str] = set()
        for f in t.fields:
            if not isinstance(f, ColumnSpec):
                raise column_error(path, f"struct field {f!r} is not a ColumnSpec")
            if f.name in seen:
                raise column_error(path, f"duplicate struct field name {f.name!r}")
            seen.add(f.name)
    elif kind == "map":
        if t.key is None or t.value is None:
            raise column_error(path, "a map needs a key and a value")
        if t.key.name != "key" or t.value.name != "value":
            raise column_error(path, "map fields must be named 'key' and 'value'")
        if t.key.nullable:
            raise column_error(path + ".key", "a map key cannot be nullable")
    else:
        if t.element is None:
            raise column_error(path, "a list needs an element")
        if t.element.name != "element":
            raise column_error(path, "the list element must be named 'element'")


def describe_type(t: TypeSpec) -> str:
    """Type text for error messages; never raises, even for a broken TypeSpec."""
    try:
        return type_to_sql(t)
    except Exception:  # noqa: BLE001 - only used to word an error message
        return str(t.kind)


def check_unique_names(columns: Sequence[ColumnSpec], what: str) -> None:
    seen: set[str] = set()
    for c in columns:
        if c.name in seen:
            raise InvalidDefinitionError(f"duplicate column name {c.name!r} in {what}")
        seen.add(c.name)
