"""Column types (SPEC 5): aliases, parameters, canonical text, proto round trips."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trinitylake_dbapi.errors import InvalidDefinitionError
from trinitylake_dbapi.format import trinitylake_pb2 as pb
from trinitylake_dbapi.format.definitions import decode_table_def, encode
from trinitylake_dbapi.format.types import (
    ALIASES,
    KINDS,
    MAX_LENGTH,
    ColumnSpec,
    TypeSpec,
    from_proto_column,
    from_proto_columns,
    list_type,
    map_type,
    max_column_id,
    parse_type,
    struct_type,
    to_proto_columns,
    type_from_sql,
    type_to_sql,
    validate_column,
    without_ids,
)

# The recursive strategies below have a long repr; Hypothesis warns about that only.
pytestmark = pytest.mark.filterwarnings("ignore:Generating overly large repr")

# SPEC 5's list of names, written out by hand as the oracle.
SPEC_ALIASES = {
    "boolean": ["boolean", "bool"],
    "int2": ["int2", "smallint"],
    "int4": ["int4", "int", "integer"],
    "int8": ["int8", "bigint", "long"],
    "decimal": ["decimal", "numeric"],
    "float4": ["float4", "real"],
    "float8": ["float8", "float", "double", "double precision"],
    "char": ["char", "character", "nchar", "bpchar"],
    "varchar": ["varchar", "character varying", "nvarchar", "text", "string"],
    "date": ["date"],
    "time": ["time"],
    "timetz": ["timetz"],
    "timestamp": ["timestamp"],
    "timestamptz": ["timestamptz"],
    "fixed": ["fixed"],
    "binary": ["binary", "varbinary", "varbyte"],
    "struct": ["struct", "row"],
    "map": ["map"],
    "list": ["list", "array"],
}
ALL_ALIASES = [(alias, kind) for kind, names in SPEC_ALIASES.items() for alias in names]
SCALAR_ALIASES = [(a, k) for a, k in ALL_ALIASES if k not in ("struct", "map", "list")]


def test_kinds_follow_the_data_type_enum() -> None:
    assert [pb.DataType.Value(k.upper()) for k in KINDS] == list(range(19))


def test_alias_table_is_exactly_spec_5() -> None:
    assert dict(ALIASES) == {alias: kind for alias, kind in ALL_ALIASES}


@pytest.mark.parametrize("alias, kind", SCALAR_ALIASES)
def test_every_scalar_alias_resolves_in_any_case(alias: str, kind: str) -> None:
    params = [16] if kind == "fixed" else []
    for spelling in (alias, alias.upper(), alias.title(), "  " + alias.replace(" ", "   ") + " "):
        assert type_from_sql(spelling, params, column="c").kind == kind


@pytest.mark.parametrize("alias, kind", [(a, k) for a, k in ALL_ALIASES if k == "list"])
def test_list_aliases_resolve(alias: str, kind: str) -> None:
    assert parse_type(f"{alias.upper()}<int>", column="c") == list_type(TypeSpec("int4"))


@pytest.mark.parametrize("alias", ["struct", "row", "STRUCT", "Row"])
def test_struct_aliases_resolve(alias: str) -> None:
    t = parse_type(f"{alias}<a int, b: string>", column="c")
    assert t == struct_type(
        ColumnSpec("a", TypeSpec("int4")), ColumnSpec("b", TypeSpec("varchar"))
    )


def test_map_alias_resolves() -> None:
    assert parse_type("MAP<STRING, BIGINT>", column="c") == map_type(
        TypeSpec("varchar"), TypeSpec("int8")
    )


@pytest.mark.parametrize(
    "name",
    ["tinyint", "uuid", "json", "varchar2", "int16", "", "   ", "double  ", "timestamp_ntz",
     "character varying varying", "float64", "number", "interval"],
)  # fmt: skip
def test_unknown_types_are_refused_naming_column_and_type(name: str) -> None:
    if not name.strip() or name.strip().lower() in ALIASES:
        name = name + "x"
    with pytest.raises(InvalidDefinitionError) as info:
        type_from_sql(name, column="my_col")
    assert "'my_col'" in str(info.value)
    assert repr(name) in str(info.value)


@pytest.mark.parametrize(
    "name, params, expected",
    [
        ("decimal", [], TypeSpec("decimal", precision=10, scale=0)),
        ("numeric", [5], TypeSpec("decimal", precision=5, scale=0)),
        ("DECIMAL", [38, 38], TypeSpec("decimal", precision=38, scale=38)),
        ("decimal", [1, 0], TypeSpec("decimal", precision=1, scale=0)),
        ("char", [], TypeSpec("char", length=1)),
        ("bpchar", [7], TypeSpec("char", length=7)),
        ("varchar", [], TypeSpec("varchar")),
        ("text", [], TypeSpec("varchar", length=None)),
        ("character varying", [20], TypeSpec("varchar", length=20)),
        ("binary", [], TypeSpec("binary")),
        ("varbinary", [MAX_LENGTH], TypeSpec("binary", length=MAX_LENGTH)),
        ("fixed", [16], TypeSpec("fixed", length=16)),
        ("time", [], TypeSpec("time")),
        ("timetz", [0], TypeSpec("timetz", precision=0)),
        ("timestamp", [3], TypeSpec("timestamp", precision=3)),
        ("timestamptz", [9], TypeSpec("timestamptz", precision=9)),
        ("bigint", [], TypeSpec("int8")),
        ("double precision", [], TypeSpec("float8")),
    ],
)
def test_parameters_are_taken_with_defaults(name, params, expected) -> None:
    t = type_from_sql(name, params, column="c")
    assert t == expected
    assert t.precision == expected.precision and t.length == expected.length


@pytest.mark.parametrize(
    "name, params, words",
    [
        ("decimal", [0], ["precision", "0"]),
        ("decimal", [39], ["precision", "39"]),
        ("decimal", [5, 6], ["scale", "6"]),
        ("decimal", [1, 2, 3], ["at most 2"]),
        ("decimal", [-1], ["precision"]),
        ("char", [0], ["length"]),
        ("varchar", [0], ["length"]),
        ("varchar", [1, 2], ["at most 1"]),
        ("binary", [MAX_LENGTH + 1], ["length"]),
        ("fixed", [], ["fixed needs a length"]),
        ("fixed", [0], ["length"]),
        ("time", [10], ["precision", "10"]),
        ("timestamp", [-1], ["precision"]),
        ("timestamptz", [3, 1], ["at most 1"]),
        ("int", [4], ["no parameters"]),
        ("boolean", [1], ["no parameters"]),
        ("date", [1], ["no parameters"]),
        ("float", [24], ["no parameters"]),
        ("varchar", [True], ["integers"]),
        ("varchar", ["3"], ["integers"]),
        ("struct", [], ["nested"]),
        ("map", [], ["nested"]),
        ("array", [], ["nested"]),
    ],
)
def test_bad_parameters_are_refused_naming_column_and_type(name, params, words) -> None:
    with pytest.raises(InvalidDefinitionError) as info:
        type_from_sql(name, params, column="price")
    text = str(info.value)
    assert "'price'" in text
    assert name in text
    for w in words:
        assert w in text


@pytest.mark.parametrize(
    "t, text",
    [
        (TypeSpec("int8"), "int8"),
        (TypeSpec("decimal", precision=10, scale=2), "decimal(10,2)"),
        (TypeSpec("decimal"), "decimal(10,0)"),
        (TypeSpec("varchar"), "varchar"),
        (TypeSpec("varchar", length=20), "varchar(20)"),
        (TypeSpec("char"), "char(1)"),
        (TypeSpec("fixed", length=16), "fixed(16)"),
        (TypeSpec("binary"), "binary"),
        (TypeSpec("timestamp", precision=3), "timestamp(3)"),
        (TypeSpec("timestamptz"), "timestamptz"),
        (list_type(TypeSpec("int4")), "list<int4>"),
        (list_type(TypeSpec("int4"), element_nullable=False), "list<int4 NOT NULL>"),
        (map_type(TypeSpec("varchar"), TypeSpec("int4")), "map<varchar, int4>"),
        (
            struct_type(ColumnSpec("a", TypeSpec("int4")), ColumnSpec("b", TypeSpec("varchar"))),
            "struct<a: int4, b: varchar>",
        ),
        (
            struct_type(ColumnSpec("a", TypeSpec("int4"), nullable=False, comment="it's")),
            "struct<a: int4 NOT NULL COMMENT 'it''s'>",
        ),
        (
            struct_type(ColumnSpec("a b", TypeSpec("int4")), ColumnSpec("x`y", TypeSpec("date"))),
            "struct<`a b`: int4, `x``y`: date>",
        ),
        (
            map_type(TypeSpec("int8"), list_type(TypeSpec("decimal", precision=5, scale=1))),
            "map<int8, list<decimal(5,1)>>",
        ),
    ],
)
def test_canonical_text(t: TypeSpec, text: str) -> None:
    assert type_to_sql(t) == text
    assert str(t) == text
    assert parse_type(text, column="c") == t


@pytest.mark.parametrize("alias, kind", SCALAR_ALIASES)
def test_type_to_sql_of_type_from_sql_round_trips(alias: str, kind: str) -> None:
    param_sets = {"decimal": [[], [7], [7, 3]], "fixed": [[4]], "char": [[], [3]],
                  "varchar": [[], [3]], "binary": [[], [3]]}  # fmt: skip
    for params in param_sets.get(kind, [[], [2]] if "time" in kind else [[]]):
        t = type_from_sql(alias, params, column="c")
        text = type_to_sql(t)
        assert text.startswith(kind)
        assert parse_type(text, column="c") == t
        name, _, rest = text.partition("(")
        again = [int(p) for p in rest.rstrip(")").split(",")] if rest else []
        assert type_from_sql(name, again, column="c") == t


@pytest.mark.parametrize(
    "text, words",
    [
        ("list<int4", ["expected '>'"]),
        ("map<int4>", ["expected ','"]),
        ("struct<>", ["at least one field"]),
        ("struct<a: int, b: int, a: bigint>", ["duplicate", "'a'"]),
        ("struct<a: tinyint>", ["'tinyint'"]),
        ("list<decimal(50)>", ["precision", "50"]),
        ("list(3)", ["expected '<'"]),
        ("int4 NOT NULL", ["unexpected 'NOT'"]),
        ("varchar(3", ["expected ')'"]),
        ("int4 $", ["unexpected character"]),
        ("map<int4 COMMENT 3, int4>", ["expected string"]),
    ],
)
def test_parse_type_refuses_bad_text_naming_the_column(text: str, words: list[str]) -> None:
    with pytest.raises(InvalidDefinitionError) as info:
        parse_type(text, column="col9")
    assert "'col9'" in str(info.value)
    for w in words:
        assert w in str(info.value)


# ---------------------------------------------------------------------------
# Proto columns
# ---------------------------------------------------------------------------


def test_ids_are_assigned_depth_first_parents_first() -> None:
    cols = [
        ColumnSpec("a", TypeSpec("int4")),
        ColumnSpec("s", struct_type(
            ColumnSpec("x", list_type(TypeSpec("varchar", length=3))),
            ColumnSpec("m", map_type(TypeSpec("int8"), TypeSpec("date"))),
        ), comment="c"),
        ColumnSpec("b", TypeSpec("decimal", precision=12, scale=4), nullable=False),
    ]  # fmt: skip
    proto, next_id = to_proto_columns(cols, 10)
    assert next_id == 18
    a, s, b = proto
    x, m = s.struct_fields
    assert [a.id, s.id, x.id, x.list_element.id, m.id, m.map_key.id, m.map_value.id, b.id] == list(
        range(10, 18)
    )
    assert x.list_element.properties["length"] == "3"
    assert dict(b.properties) == {"precision": "12", "scale": "4"}
    assert b.type == pb.DECIMAL and not b.nullable
    assert s.properties["comment"] == "c" and s.type == pb.STRUCT
    assert m.map_key.name == "key" and not m.map_key.nullable
    assert m.map_value.name == "value" and x.list_element.name == "element"
    assert max_column_id(proto) == 17
    back = from_proto_columns(proto)
    assert [without_ids(c) for c in back] == cols


def test_existing_ids_are_kept_and_never_given_again() -> None:
    cols = [
        ColumnSpec("a", TypeSpec("int4"), id=7),
        ColumnSpec("b", list_type(TypeSpec("int4"))),
        ColumnSpec("c", TypeSpec("int4"), id=2),
    ]
    proto, next_id = to_proto_columns(cols, 1)
    assert [p.id for p in proto] == [7, 8, 2]
    assert proto[1].list_element.id == 9
    assert next_id == 10
    proto, next_id = to_proto_columns(cols, 20)
    assert [p.id for p in proto] == [7, 20, 2] and next_id == 22


def test_duplicate_ids_and_names_are_refused() -> None:
    with pytest.raises(InvalidDefinitionError, match="id 3"):
        to_proto_columns(
            [ColumnSpec("a", TypeSpec("int4"), id=3),
             ColumnSpec("b", list_type(TypeSpec("int4"))),
             ColumnSpec("c", struct_type(ColumnSpec("d", TypeSpec("int4"), id=3)))],
            1,
        )  # fmt: skip
    with pytest.raises(InvalidDefinitionError, match="duplicate column name 'a'"):
        to_proto_columns([ColumnSpec("a", TypeSpec("int4")), ColumnSpec("a", TypeSpec("int8"))], 1)
    with pytest.raises(InvalidDefinitionError, match="'s'.*duplicate struct field name 'x'"):
        to_proto_columns(
            [ColumnSpec("s", struct_type(ColumnSpec("x", TypeSpec("int4")),
                                         ColumnSpec("x", TypeSpec("int4"))))],
            1,
        )  # fmt: skip
    with pytest.raises(ValueError):
        to_proto_columns([], 0)


@pytest.mark.parametrize(
    "column, words",
    [
        (ColumnSpec("", TypeSpec("int4")), ["non-empty"]),
        (ColumnSpec("c", TypeSpec("int5")), ["'c'", "int5"]),
        (ColumnSpec("c", TypeSpec("int4", length=3)), ["'c'", "no length"]),
        (ColumnSpec("c", TypeSpec("varchar", precision=3)), ["'c'", "no precision"]),
        (ColumnSpec("c", TypeSpec("timestamp", scale=3)), ["'c'", "no scale"]),
        (ColumnSpec("c", TypeSpec("fixed")), ["'c'", "fixed needs a length"]),
        (ColumnSpec("c", TypeSpec("decimal", scale=2)), ["'c'", "precision"]),
        (ColumnSpec("c", TypeSpec("list")), ["'c'", "element"]),
        (ColumnSpec("c", TypeSpec("map", key=ColumnSpec("key", TypeSpec("int4"), False))),
         ["'c'", "key and a value"]),
        (ColumnSpec("c", TypeSpec("map", key=ColumnSpec("key", TypeSpec("int4")),
                                  value=ColumnSpec("value", TypeSpec("int4")))),
         ["'c.key'", "nullable"]),
        (ColumnSpec("c", TypeSpec("list", element=ColumnSpec("item", TypeSpec("int4")))),
         ["'c'", "element"]),
        (ColumnSpec("c", TypeSpec("int4", element=ColumnSpec("element", TypeSpec("int4")))),
         ["'c'", "no nested"]),
        (ColumnSpec("c", TypeSpec("list", length=2, element=ColumnSpec("element", TypeSpec("int4")))),
         ["'c'", "no parameters"]),
        (ColumnSpec("c", struct_type()), ["'c'", "at least one field"]),
        (ColumnSpec("c", struct_type(ColumnSpec("f", TypeSpec("decimal", precision=99)))),
         ["'c.f'", "precision", "99"]),
        (ColumnSpec("c", list_type(struct_type(ColumnSpec("f", TypeSpec("char", length=0))))),
         ["'c.element.f'", "length"]),
        (ColumnSpec("c", TypeSpec("int4"), id=0), ["'c'", "id"]),
        (ColumnSpec("c", TypeSpec("int4"), id=2**32), ["'c'", "id"]),
    ],
)  # fmt: skip
def test_invalid_columns_are_refused_naming_the_column(column: ColumnSpec, words) -> None:
    with pytest.raises(InvalidDefinitionError) as info:
        to_proto_columns([column], 1)
    for w in words:
        assert w in str(info.value)
    with pytest.raises(InvalidDefinitionError):
        validate_column(column)


def _stored(**kwargs) -> pb.Column:
    kwargs.setdefault("id", 1)
    kwargs.setdefault("name", "c")
    return pb.Column(**kwargs)


def _el(**kwargs) -> pb.Column:
    kwargs.setdefault("id", 2)
    kwargs.setdefault("name", "element")
    kwargs.setdefault("nullable", True)
    return pb.Column(**kwargs)


@pytest.mark.parametrize(
    "column, words",
    [
        (_stored(type=99), ["'c'", "99"]),
        (_stored(type=pb.INT4, id=0), ["'c'", "id"]),
        (_stored(type=pb.INT4, name=""), ["column"]),
        (_stored(type=pb.STRUCT), ["'c'", "struct_fields"]),
        (_stored(type=pb.LIST), ["'c'", "list_element"]),
        (_stored(type=pb.MAP, map_key=_el(name="key")), ["'c'", "map_value"]),
        (_stored(type=pb.INT4, list_element=_el(type=pb.INT4)), ["'c'", "list_element"]),
        (_stored(type=pb.LIST, list_element=_el(type=pb.INT4), struct_fields=[_el(name="x")]),
         ["'c'", "struct_fields"]),
        (_stored(type=pb.LIST, list_element=_el(name="item", type=pb.INT4)), ["'c'", "item"]),
        (_stored(type=pb.LIST, list_element=_el(type=77)), ["'c.element'", "77"]),
        (_stored(type=pb.MAP, map_key=_el(name="key", nullable=True),
                 map_value=_el(id=3, name="value")), ["'c.key'", "nullable"]),
        (_stored(type=pb.STRUCT, struct_fields=[_el(name="x"), _el(id=3, name="x")]),
         ["'c'", "duplicate", "'x'"]),
        (_stored(type=pb.VARCHAR, properties={"length": "abc"}), ["'c'", "abc"]),
        (_stored(type=pb.VARCHAR, properties={"length": "-3"}), ["'c'", "-3"]),
        (_stored(type=pb.VARCHAR, properties={"length": "0"}), ["'c'", "length"]),
        (_stored(type=pb.INT4, properties={"precision": "3"}), ["'c'", "no precision"]),
        (_stored(type=pb.DECIMAL, properties={"precision": "3", "scale": "4"}), ["'c'", "scale"]),
        (_stored(type=pb.FIXED), ["'c'", "fixed"]),
        (_stored(type=pb.TIME, properties={"precision": "12"}), ["'c'", "12"]),
    ],
)  # fmt: skip
def test_broken_stored_columns_are_refused_naming_the_column(column: pb.Column, words) -> None:
    with pytest.raises(InvalidDefinitionError) as info:
        from_proto_column(column)
    for w in words:
        assert w in str(info.value)


def test_from_proto_columns_refuses_duplicate_ids_and_names() -> None:
    a = _stored(type=pb.INT4, name="a", id=1)
    b = _stored(type=pb.LIST, name="b", id=2, list_element=_el(id=1, type=pb.INT4))
    with pytest.raises(InvalidDefinitionError, match="id 1"):
        from_proto_columns([a, b])
    with pytest.raises(InvalidDefinitionError, match="duplicate column name 'a'"):
        from_proto_columns([a, _stored(type=pb.INT4, name="a", id=5)])


def test_stored_columns_seen_before_convert_alike_and_broken_ones_fail_every_time() -> None:
    """from_proto_columns remembers converted columns by their bytes: a column that
    differs in any field (comment, nullability, id, a nested field) is converted anew,
    and a broken one is refused on every call, naming the column."""
    base = _stored(type=pb.LIST, name="tags", id=3, list_element=_el(id=4, type=pb.VARCHAR))
    variants = [
        base,
        _stored(type=pb.LIST, name="tags", id=3, list_element=_el(id=4, type=pb.VARCHAR), nullable=True),
        _stored(type=pb.LIST, name="tags", id=3, list_element=_el(id=4, type=pb.INT4)),
        _stored(type=pb.LIST, name="tags", id=5, list_element=_el(id=4, type=pb.VARCHAR)),
        _stored(type=pb.LIST, name="tags", id=3, list_element=_el(id=4, type=pb.VARCHAR), properties={"comment": "x"}),
    ]
    for _ in range(2):
        assert [from_proto_columns([v])[0] for v in variants] == [from_proto_column(v) for v in variants]
    assert len({from_proto_columns([v])[0] for v in variants}) == len(variants)
    broken = _stored(type=pb.LIST, name="tags", id=3)
    for _ in range(2):
        with pytest.raises(InvalidDefinitionError, match="tags"):
            from_proto_columns([broken])


def test_unknown_property_keys_are_ignored_and_comments_kept_even_empty() -> None:
    col = _stored(type=pb.INT4, properties={"comment": "", "other": "x"}, nullable=True)
    assert from_proto_column(col) == ColumnSpec("c", TypeSpec("int4"), True, "", 1)


def test_max_column_id() -> None:
    assert max_column_id([]) == 0
    spec = ColumnSpec("m", map_type(TypeSpec("int4"), TypeSpec("int4")))
    assert max_column_id([spec]) == 0
    proto, _ = to_proto_columns([spec], 41)
    assert max_column_id(proto) == 43
    assert max_column_id([from_proto_column(proto[0])]) == 43


# ---------------------------------------------------------------------------
# Property-based round trips
# ---------------------------------------------------------------------------

names = st.one_of(
    st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,6}", fullmatch=True),
    st.text(alphabet="ab `'\":,<>()é\t\n", min_size=1, max_size=6),
    st.text(min_size=1, max_size=4),
)
comments = st.none() | st.text(max_size=8)


def _time(kind: str, p: int | None) -> TypeSpec:
    return TypeSpec(kind, precision=p)


scalars = st.one_of(
    st.sampled_from(["boolean", "int2", "int4", "int8", "float4", "float8", "date"]).map(TypeSpec),
    st.builds(
        lambda p, s: TypeSpec("decimal", precision=p, scale=min(s, p)),
        st.integers(1, 38),
        st.integers(0, 38),
    ),
    st.builds(
        lambda k, n: TypeSpec(k, length=n), st.sampled_from(["char", "fixed"]), st.integers(1, MAX_LENGTH)
    ),
    st.builds(
        lambda k, n: TypeSpec(k, length=n),
        st.sampled_from(["varchar", "binary"]),
        st.none() | st.integers(1, MAX_LENGTH),
    ),
    st.builds(
        _time,
        st.sampled_from(["time", "timetz", "timestamp", "timestamptz"]),
        st.none() | st.integers(0, 9),
    ),
)


def _nested(children: st.SearchStrategy[TypeSpec]) -> st.SearchStrategy[TypeSpec]:
    field = st.builds(ColumnSpec, names, children, st.booleans(), comments)
    return st.one_of(
        st.builds(
            lambda t, n, c: list_type(t, element_nullable=n, element_comment=c),
            children, st.booleans(), comments,
        ),
        st.builds(
            lambda k, v, n, kc, vc: map_type(k, v, value_nullable=n, key_comment=kc,
                                             value_comment=vc),
            children, children, st.booleans(), comments, comments,
        ),
        st.lists(field, min_size=1, max_size=4, unique_by=lambda f: f.name).map(
            lambda fs: struct_type(*fs)
        ),
    )  # fmt: skip


types = st.recursive(scalars, _nested, max_leaves=10)
columns = st.lists(
    st.builds(ColumnSpec, names, types, st.booleans(), comments),
    min_size=1,
    max_size=5,
    unique_by=lambda c: c.name,
)


def _all_ids(proto: list[pb.Column]) -> list[int]:
    out = []
    for c in proto:
        out.append(c.id)
        nested = list(c.struct_fields)
        nested += [getattr(c, f) for f in ("map_key", "map_value", "list_element") if c.HasField(f)]
        out += _all_ids(nested)
    return out


@pytest.mark.slow  # 300 examples (~3.7 s of CPU): the full run only
@settings(max_examples=300, deadline=None)
@given(columns, st.integers(1, 1000))
def test_columns_round_trip_through_proto_and_a_table_def(cols, next_id) -> None:
    proto, after = to_proto_columns(cols, next_id)
    ids = _all_ids(proto)
    assert ids == list(range(next_id, after))  # unique, dense, depth-first
    assert max_column_id(proto) == after - 1

    back = from_proto_columns(proto)
    assert [without_ids(c) for c in back] == cols
    assert _all_ids(to_proto_columns(back, 1)[0]) == ids  # ids are kept
    assert to_proto_columns(back, after) == (proto, after)

    table = pb.TableDef(name="t")
    table.schema.columns.extend(proto)
    decoded = decode_table_def(encode(table), "table-t.binpb")
    assert from_proto_columns(decoded.schema.columns) == back


@settings(max_examples=300, deadline=None)
@given(types)
def test_canonical_text_round_trips(t: TypeSpec) -> None:
    text = type_to_sql(t)
    assert parse_type(text, column="c") == t
    if "'" not in text and "`" not in text:  # spacing is free outside quoted text
        loose = " " + text.replace(", ", " ,  ").replace(": ", ":").replace("<", " < ")
        assert parse_type(loose + " ", column="c") == t


def nested_list(levels: int) -> ColumnSpec:
    t = type_from_sql("int", column="element")
    for _ in range(levels):
        t = list_type(t)
    return ColumnSpec("deep", t)


@pytest.mark.parametrize("levels", [65, 99, 5_000])
def test_types_nested_deeper_than_the_limit_are_refused_naming_the_column(levels: int) -> None:
    # Issue 15, item 7 (rule N1): 99 levels were stored, then no reader could decode them.
    from trinitylake_dbapi.format.types import MAX_NESTING_DEPTH

    assert MAX_NESTING_DEPTH == 64
    with pytest.raises(InvalidDefinitionError, match=rf"column 'deep': the type nests {levels} levels"):
        to_proto_columns([nested_list(levels)], 1)


def test_the_deepest_allowed_type_is_stored_and_read_back() -> None:
    from trinitylake_dbapi.format.types import MAX_NESTING_DEPTH, nesting_depth

    column = nested_list(MAX_NESTING_DEPTH)
    assert nesting_depth(column.type) == MAX_NESTING_DEPTH
    protos, _ = to_proto_columns([column], 1)
    message = pb.TableDef(name="t")
    message.schema.columns.extend(protos)
    decoded = decode_table_def(encode(message), "t.binpb")
    assert without_ids(from_proto_columns(decoded.schema.columns)[0]) == column


def test_encode_refuses_a_definition_no_reader_could_decode() -> None:
    # Rule FD1 of definitions.py: bytes that protobuf's reader would refuse are never
    # returned, whatever built the message.
    message = pb.TableDef(name="t")
    column = message.schema.columns.add(name="deep", type=pb.LIST)
    for _ in range(120):
        column = column.list_element
        column.name, column.type = "element", pb.LIST
    with pytest.raises(InvalidDefinitionError, match="TableDef cannot be stored"):
        encode(message)
