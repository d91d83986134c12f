"""The dialect's types as SQLAlchemy and the tools over it use them (issue 15, items 1, 4).

* Item 1: every type of ``trinitylake_sqlalchemy.types`` survives ``adapt``
  (``constructor_copy``), ``copy``, pickling and ``eval(repr(t))`` with only its own
  class imported; a table with nested columns is reflected and selected from
  (``select(table)``, ``pandas.read_sql_table``) without breaking before the query is
  sent.
* Item 4: every generic SQLAlchemy type goes through ``create_all`` and reflection back
  to the generic type the format stores it as; the ones it cannot store are refused.
"""

from __future__ import annotations

import pickle

import pandas as pd
import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings, strategies as st
from sqlalchemy import exc

from trinitylake_sqlalchemy import types as tl
from trinitylake_sqlalchemy.base import TrinityLakeDialect

DIALECT = TrinityLakeDialect()


def ddl(type_: sa.types.TypeEngine) -> str:
    return type_.compile(dialect=DIALECT)


#: One instance of every dialect type, nested every way the format allows.
DIALECT_TYPES = [
    tl.TIME(),
    tl.TIME(timezone=True, precision=3),
    tl.TIMESTAMP(),
    tl.TIMESTAMP(timezone=True, precision=6),
    tl.FIXED(16),
    tl.MAP(sa.String(), sa.Integer()),
    tl.MAP(sa.VARCHAR(), sa.ARRAY(sa.BIGINT()), value_nullable=False),
    tl.MAP("VARCHAR(5)", "ARRAY<BIGINT>"),
    tl.MAP(sa.Integer, tl.STRUCT(("x", sa.Date()), ("y", tl.FIXED(2), False, "why"))),
    tl.STRUCT(tl.StructField("a", sa.Integer())),
    tl.STRUCT(("a", sa.Integer), tl.StructField("b-c", sa.String(3), False, "x's")),
    tl.STRUCT(("n", tl.STRUCT(("m", tl.MAP(sa.String, sa.ARRAY(sa.Numeric(10, 2), dimensions=2)))))),
    tl.STRUCT(("t", "TIMESTAMPTZ(3)"), ("k", "STRUCT<\"select\": INT NOT NULL>", True, "c")),
]
IDS = [repr(t) for t in DIALECT_TYPES]


def _same(copy: sa.types.TypeEngine, original: sa.types.TypeEngine) -> None:
    assert type(copy) is type(original)
    assert ddl(copy) == ddl(original)
    assert repr(copy) == repr(original)


@pytest.mark.parametrize("type_", DIALECT_TYPES, ids=IDS)
def test_adapt_keeps_the_type(type_):
    adapted = type_.adapt(type(type_))
    _same(adapted, type_)
    # The inner SQLAlchemy types are kept as they are, not rebuilt from their text.
    if isinstance(type_, tl.MAP):
        assert (type(adapted.key_type), type(adapted.value_type)) == (
            type(type_.key_type), type(type_.value_type))  # fmt: skip
    if isinstance(type_, tl.STRUCT):
        assert [type(f.type) for f in adapted.fields] == [type(f.type) for f in type_.fields]
    assert type_.dialect_impl(DIALECT) is not None  # what compiling a SELECT does


@pytest.mark.parametrize("type_", DIALECT_TYPES, ids=IDS)
def test_copy_keeps_the_type(type_):
    _same(type_.copy(), type_)
    table = sa.Table("t", sa.MetaData(), sa.Column("c", type_))
    _same(table.to_metadata(sa.MetaData()).c.c.type, type_)


@pytest.mark.parametrize("type_", DIALECT_TYPES, ids=IDS)
def test_pickle_keeps_the_type(type_):
    _same(pickle.loads(pickle.dumps(type_)), type_)


@pytest.mark.parametrize("type_", DIALECT_TYPES, ids=IDS)
def test_repr_evaluates_with_only_its_own_class_imported(type_):
    cls = type(type_)
    _same(eval(repr(type_), {cls.__name__: cls}), type_)


@pytest.mark.parametrize("type_", DIALECT_TYPES, ids=IDS)
def test_inside_an_array(type_):
    array = sa.ARRAY(type_)
    _same(array.adapt(sa.ARRAY).item_type, type_)
    _same(pickle.loads(pickle.dumps(array)).item_type, type_)
    _same(eval(repr(array), {"ARRAY": sa.ARRAY, type(type_).__name__: type(type_)}).item_type, type_)


# -- any nested type: hypothesis ----------------------------------------------------------

_LEAVES = st.sampled_from([
    sa.Integer(), sa.BigInteger(), sa.SmallInteger(), sa.Boolean(), sa.Date(), sa.String(),
    sa.String(7), sa.CHAR(2), sa.Numeric(12, 3), sa.Float(), sa.LargeBinary(), tl.FIXED(4),
    tl.TIME(precision=3), tl.TIMESTAMP(timezone=True), sa.DateTime(),
])  # fmt: skip
_NAMES = st.text(st.characters(codec="utf-8", exclude_categories=["Cs", "Cc", "Zs", "Zl", "Zp", "Cf"]),
                 min_size=1, max_size=8)  # fmt: skip


def _nested(children: st.SearchStrategy) -> st.SearchStrategy:
    field = st.tuples(_NAMES, children, st.booleans(), st.none() | st.text(max_size=5))
    return st.one_of(
        children.filter(lambda t: not isinstance(t, sa.ARRAY)).map(sa.ARRAY),
        _LEAVES.map(lambda t: sa.ARRAY(t, dimensions=2)),
        st.builds(tl.MAP, _LEAVES, children, st.booleans()),
        st.lists(field, min_size=1, max_size=3, unique_by=lambda f: f[0]).map(lambda fs: tl.STRUCT(*fs)),
    )


_TYPES = st.recursive(_LEAVES, _nested, max_leaves=8).filter(
    lambda t: isinstance(t, (tl.MAP, tl.STRUCT))
)


@pytest.mark.slow  # 150 examples (~3.3 s of CPU): the full run only
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])
@given(_TYPES)
def test_any_nested_type_survives_every_round_trip(type_):
    cls = type(type_)
    for copy in (type_.adapt(cls), type_.copy(), pickle.loads(pickle.dumps(type_)),
                 eval(repr(type_), {cls.__name__: cls})):  # fmt: skip
        _same(copy, type_)


# -- a real table with nested columns ----------------------------------------------------


def _nested_table(engine: sa.Engine) -> None:
    with engine.begin() as conn:
        conn.exec_driver_sql(
            "CREATE TABLE ns.nested (id BIGINT NOT NULL, "
            "address STRUCT<city: VARCHAR, zip: VARCHAR(10) NOT NULL COMMENT 'postal'>, "
            "tags MAP<VARCHAR, ARRAY<BIGINT>>, "
            "history ARRAY<STRUCT<at: TIMESTAMPTZ(6), what: MAP<INT, FIXED(2)>>>, "
            "raw BINARY, PRIMARY KEY (id))"
        )


def test_reflect_and_select_a_table_with_nested_columns(engine):
    _nested_table(engine)
    table = sa.Table("nested", sa.MetaData(), autoload_with=engine, schema="ns")
    assert [type(c.type) for c in table.columns] == [
        sa.BIGINT, tl.STRUCT, tl.MAP, sa.ARRAY, sa.LargeBinary,
    ]
    text = " ".join(str(sa.select(table).compile(engine)).split())
    assert text == "SELECT ns.nested.id, ns.nested.address, ns.nested.tags, ns.nested.history, ns.nested.raw FROM ns.nested"
    text = str(sa.select(table.c.address).where(table.c.id == 1).compile(engine))
    assert "WHERE ns.nested.id = ?" in text
    # The reflected table is written again, the same, elsewhere.
    with engine.begin() as conn:
        table.to_metadata(sa.MetaData(), schema="ns", name="again").create(conn)
    again = sa.Table("again", sa.MetaData(), autoload_with=engine, schema="ns")
    assert [ddl(c.type) for c in again.columns] == [ddl(c.type) for c in table.columns]


def test_pandas_read_sql_table_reads_the_reflected_table(engine):
    # pandas reflects the table, compiles SELECT ns.nested.id, ... and reads it.
    _nested_table(engine)
    frame = pd.read_sql_table("nested", engine, schema="ns")
    assert list(frame.columns) == ["id", "address", "tags", "history", "raw"]
    assert len(frame) == 0


# -- item 4: generic types through create_all and reflection ----------------------------

#: (type written, generic type it reflects as, attributes the reflected type has)
GENERIC_TYPES = [
    (sa.Integer(), sa.Integer, {}),
    (sa.SmallInteger(), sa.SmallInteger, {}),
    (sa.BigInteger(), sa.BigInteger, {}),
    (sa.Boolean(), sa.Boolean, {}),
    (sa.Numeric(12, 3), sa.Numeric, {"precision": 12, "scale": 3}),
    (sa.Numeric(5), sa.Numeric, {"precision": 5, "scale": 0}),
    (sa.Float(precision=10), sa.Float, {}),  # float4
    (sa.Double(), sa.Double, {}),
    (sa.String(), sa.String, {"length": None}),
    (sa.String(20), sa.String, {"length": 20}),
    (sa.CHAR(3), sa.String, {"length": 3}),
    (sa.Date(), sa.Date, {}),
    (sa.DateTime(), sa.DateTime, {"timezone": False}),
    (sa.DateTime(timezone=True), sa.DateTime, {"timezone": True}),
    (sa.Time(), sa.Time, {"timezone": False}),
    (sa.Time(timezone=True), sa.Time, {"timezone": True}),
    (sa.LargeBinary(), sa.LargeBinary, {"length": None}),
    (sa.LargeBinary(9), sa.LargeBinary, {"length": 9}),
    (sa.ARRAY(sa.Integer()), sa.ARRAY, {}),
    # Stored as the same format type as the one above them, so read back as that one:
    (sa.Float(), sa.Double, {}),  # float8
    (sa.Text(), sa.String, {"length": None}),
    (sa.Unicode(7), sa.String, {"length": 7}),
    (sa.UnicodeText(), sa.String, {"length": None}),
    (sa.VARBINARY(4), sa.LargeBinary, {"length": 4}),
]


@pytest.mark.parametrize(("written", "generic", "attributes"), GENERIC_TYPES, ids=[repr(t[0]) for t in GENERIC_TYPES])
def test_generic_type_round_trip(engine, written, generic, attributes):
    sa.Table("t", (metadata := sa.MetaData()), sa.Column("c", written), schema="ns")
    metadata.create_all(engine)
    (column,) = sa.inspect(engine).get_columns("t", "ns")
    reflected = column["type"]
    assert type(reflected.as_generic()) is generic, reflected
    if generic is sa.LargeBinary:  # not VARBINARY, which SQLAlchemy also calls LargeBinary
        assert type(reflected) is sa.LargeBinary
    for name, value in attributes.items():
        assert getattr(reflected, name) == value, name
    # The same format type: the DDL written, read back as canonical text, is the reflected DDL.
    assert ddl(reflected) == ddl(tl.from_type_text(ddl(written), column="c"))


@pytest.mark.parametrize(
    ("type_", "message"),
    [
        (sa.Uuid(), "no UUID type"),
        (sa.Interval(), "no INTERVAL type"),
        (sa.JSON(), "no JSON type"),
    ],
    ids=["Uuid", "Interval", "JSON"],
)
def test_generic_types_the_format_cannot_store_are_refused(engine, type_, message):
    table = sa.Table("t", sa.MetaData(), sa.Column("c", type_), schema="ns")
    with pytest.raises(exc.CompileError, match=message) as info:
        table.create(engine)
    assert "(in table 't', column 'c')" in str(info.value)  # the column is named
    assert sa.inspect(engine).get_table_names("ns") == []


def test_a_field_named_with_a_letter_that_only_looks_ascii_round_trips(engine) -> None:  # type: ignore[no-untyped-def]
    # Found by test_any_nested_type_survives_every_round_trip: SQLAlchemy took U+0131
    # (dotless i) for a plain identifier character and left it unquoted.
    type_ = tl.MAP(sa.Integer(), tl.STRUCT(("ı", "INT", False)), False)
    metadata = sa.MetaData()
    sa.Table("dotless", metadata, sa.Column("m", type_), schema="ns")
    metadata.create_all(engine)
    reflected = sa.inspect(engine).get_columns("dotless", "ns")[0]["type"]
    assert repr(reflected) == repr(type_)
