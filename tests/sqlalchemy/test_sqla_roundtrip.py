"""DDL from every generic type, then reflection back (issue 6, acceptance 3)."""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from sqlalchemy import exc
from sqlalchemy.schema import CreateIndex, CreateSchema, CreateTable, DropSchema

from sqla_helpers import versions
from trinitylake_sqlalchemy import types as tl
from trinitylake_sqlalchemy.base import TrinityLakeDialect

#: (column name, type written, (reflected class, attributes it must have))
TYPES = [
    ("s", sa.String(20), (sa.VARCHAR, {"length": 20})),
    ("s_unbounded", sa.String(), (sa.VARCHAR, {"length": None})),
    ("txt", sa.Text(), (sa.VARCHAR, {"length": None})),
    ("uni", sa.Unicode(7), (sa.VARCHAR, {"length": 7})),
    ("ch", sa.CHAR(3), (sa.CHAR, {"length": 3})),
    ("i", sa.Integer(), (sa.INTEGER, {})),
    ("bi", sa.BigInteger(), (sa.BIGINT, {})),
    ("si", sa.SmallInteger(), (sa.SMALLINT, {})),
    ("num", sa.Numeric(12, 3), (sa.DECIMAL, {"precision": 12, "scale": 3})),
    ("num_p", sa.Numeric(5), (sa.DECIMAL, {"precision": 5, "scale": 0})),
    ("fl", sa.Float(), (sa.DOUBLE, {})),
    ("fl4", sa.Float(precision=10), (sa.REAL, {})),
    ("dbl", sa.Double(), (sa.DOUBLE, {})),
    ("bo", sa.Boolean(), (sa.BOOLEAN, {})),
    ("d", sa.Date(), (sa.DATE, {})),
    ("t", sa.Time(), (tl.TIME, {"timezone": False, "precision": None})),
    ("ttz", sa.Time(timezone=True), (tl.TIME, {"timezone": True})),
    ("t3", tl.TIME(precision=3), (tl.TIME, {"precision": 3})),
    ("dt", sa.DateTime(), (tl.TIMESTAMP, {"timezone": False, "precision": None})),
    ("dttz", sa.DateTime(timezone=True), (tl.TIMESTAMP, {"timezone": True})),
    ("ts6", tl.TIMESTAMP(timezone=True, precision=6), (tl.TIMESTAMP, {"timezone": True, "precision": 6})),
    ("lb", sa.LargeBinary(), (sa.LargeBinary, {"length": None})),
    ("lb9", sa.LargeBinary(9), (sa.LargeBinary, {"length": 9})),
    ("fx", sa.BINARY(16), (tl.FIXED, {"length": 16})),
    ("arr", sa.ARRAY(sa.Integer), (sa.ARRAY, {"dimensions": None})),
    ("arr2", sa.ARRAY(sa.String(5), dimensions=2), (sa.ARRAY, {"dimensions": 2})),
    ("mp", tl.MAP(sa.String, sa.BigInteger, value_nullable=False), (tl.MAP, {"value_nullable": False})),
    ("st", tl.STRUCT(("a", sa.Integer), tl.StructField("b-c", sa.String(3), False, "x's")), (tl.STRUCT, {})),
]


def _everything(metadata: sa.MetaData) -> sa.Table:
    return sa.Table(
        "everything",
        metadata,
        sa.Column("id", sa.Integer, primary_key=True, comment="the key"),
        sa.Column("id2", sa.String(10), primary_key=True),
        *(sa.Column(name, type_, nullable=(i % 2 == 0), comment=f"{name} % ' \" \\ comment")
          for i, (name, type_, _) in enumerate(TYPES)),
        # Accepted and skipped: the format has none of these.
        sa.ForeignKeyConstraint(["i"], ["ns.other.id"]),
        sa.UniqueConstraint("s"),
        sa.CheckConstraint("i > 0"),
        sa.Index("ix_everything_s", "s"),
        schema="ns",
        comment="every type\nin one table",
    )


def _other(metadata: sa.MetaData) -> sa.Table:
    return sa.Table("other", metadata, sa.Column("id", sa.Integer, primary_key=True), schema="ns")


def test_create_all_inspect_autoload_drop_all(engine):
    metadata = sa.MetaData()
    table = _everything(metadata)
    _other(metadata)
    before = versions(engine)[-1][0]
    metadata.create_all(engine)
    assert versions(engine)[-1][0] == before + 1  # create_all is one transaction

    insp = sa.inspect(engine)
    assert insp.get_table_names("ns") == ["everything", "other"]
    assert insp.get_table_comment("everything", "ns") == {"text": "every type\nin one table"}
    assert insp.get_pk_constraint("everything", "ns") == {"constrained_columns": ["id", "id2"], "name": None}
    assert insp.get_foreign_keys("everything", "ns") == []
    assert insp.get_indexes("everything", "ns") == []
    assert insp.get_unique_constraints("everything", "ns") == []
    assert insp.get_check_constraints("everything", "ns") == []
    assert insp.get_view_names("ns") == []

    columns = {c["name"]: c for c in insp.get_columns("everything", "ns")}
    assert list(columns) == [c.name for c in table.columns]
    assert columns["id"]["comment"] == "the key" and columns["id"]["nullable"] is False
    assert all("autoincrement" not in c for c in columns.values())
    for i, (name, _, (cls, attributes)) in enumerate(TYPES):
        column = columns[name]
        assert type(column["type"]) is cls, (name, column["type"])
        for attribute, value in attributes.items():
            assert getattr(column["type"], attribute) == value, (name, attribute)
        assert column["nullable"] is (i % 2 == 0), name
        assert column["comment"] == f"{name} % ' \" \\ comment"

    assert type(columns["arr"]["type"].item_type) is sa.INTEGER
    assert columns["arr2"]["type"].item_type.length == 5
    mp = columns["mp"]["type"]
    assert (type(mp.key_type), type(mp.value_type)) == (sa.VARCHAR, sa.BIGINT)
    st = columns["st"]["type"]
    assert [(f.name, type(f.type), f.nullable, f.comment) for f in st.fields] == [
        ("a", sa.INTEGER, True, None), ("b-c", sa.VARCHAR, False, "x's"),
    ]

    reflected = sa.Table("everything", sa.MetaData(), autoload_with=engine, schema="ns")
    assert [c.name for c in reflected.primary_key] == ["id", "id2"]
    assert reflected.comment == "every type\nin one table"
    assert [type(c.type) for c in reflected.columns][2:] == [spec[0] for _, _, spec in TYPES]
    assert reflected.c.num.type.precision == 12 and reflected.c.s.type.length == 20

    # The reflected table is created again, the same, in another namespace.
    with engine.begin() as conn:
        conn.execute(CreateSchema("copy"))
        reflected.to_metadata(sa.MetaData(), schema="copy").create(conn)
    again = {c["name"]: c for c in sa.inspect(engine).get_columns("everything", "copy")}
    assert {n: repr(c["type"]) for n, c in again.items()} == {
        n: repr(c["type"]) for n, c in columns.items()
    }

    metadata.drop_all(engine)
    assert sa.inspect(engine).get_table_names("ns") == []


def test_metadata_reflect_of_a_namespace(engine):
    metadata = sa.MetaData()
    _other(metadata)
    sa.Table("plain", metadata, sa.Column("a", sa.Integer))  # the default namespace
    metadata.create_all(engine)
    found = sa.MetaData()
    found.reflect(engine, schema="ns")
    assert sorted(found.tables) == ["ns.other"]
    found.reflect(engine)
    assert sorted(found.tables) == ["ns.other", "plain"]


def test_schemas_and_comments(engine):
    metadata = sa.MetaData()
    table = sa.Table("t", metadata, sa.Column("a", sa.Integer), schema="s1")
    with engine.begin() as conn:
        conn.execute(CreateSchema("s1"))
        assert sa.inspect(conn).has_schema("s1")
        table.create(conn)
        table.comment = "later"
        conn.execute(sa.schema.SetTableComment(table))
        table.c.a.comment = "col"
        conn.execute(sa.schema.SetColumnComment(table.c.a))
    insp = sa.inspect(engine)
    assert insp.get_table_comment("t", "s1") == {"text": "later"}
    assert insp.get_columns("t", "s1")[0]["comment"] == "col"
    with engine.begin() as conn:
        conn.execute(sa.schema.DropColumnComment(table.c.a))
        conn.execute(sa.schema.DropTableComment(table))
        conn.execute(DropSchema("s1", cascade=True))
    insp = sa.inspect(engine)
    assert not insp.has_schema("s1")
    assert "s1" not in insp.get_schema_names()


def test_reflection_of_missing_tables(engine):
    insp = sa.inspect(engine)
    assert not insp.has_table("nope", "ns")
    assert not insp.has_table("nope", "no_such_namespace")
    for method in ("get_columns", "get_pk_constraint", "get_table_comment", "get_indexes",
                   "get_foreign_keys"):  # fmt: skip
        with pytest.raises(exc.NoSuchTableError):
            getattr(insp, method)("nope", "ns")


def test_reflection_without_the_default_namespace(lake_url):
    # Issue 15, item 2: a lakehouse whose default namespace is missing (dropped, or made
    # before every new lakehouse got one) reflects as an empty default schema.
    engine = sa.create_engine(lake_url)
    with engine.begin() as conn:
        conn.exec_driver_sql('DROP NAMESPACE IF EXISTS "default"')
        conn.exec_driver_sql("CREATE NAMESPACE ns")
        conn.exec_driver_sql("CREATE TABLE ns.t (a INT)")
    insp = sa.inspect(engine)
    assert insp.default_schema_name == "default"
    assert insp.get_table_names() == []
    assert insp.get_table_names("default") == []
    assert insp.get_view_names() == []
    assert not insp.has_table("t")
    assert insp.get_multi_columns() == {}
    assert insp.get_sorted_table_and_fkc_names() == [(None, [])]
    with pytest.raises(exc.NoSuchTableError):
        insp.get_columns("t")
    metadata = sa.MetaData()
    metadata.reflect(engine)
    assert list(metadata.tables) == []
    metadata.reflect(engine, schema="ns")
    assert list(metadata.tables) == ["ns.t"]
    # A namespace named explicitly must still exist.
    with pytest.raises(exc.ProgrammingError, match="namespace 'nope' does not exist"):
        insp.get_table_names("nope")
    engine.dispose()


def test_reflection_is_cached_per_inspector(engine):
    insp = sa.inspect(engine)
    assert insp.get_table_names("ns") == []
    assert not insp.has_table("other", "ns")
    _other(sa.MetaData()).create(engine)
    assert insp.get_table_names("ns") == []  # cached
    assert not insp.has_table("other", "ns")
    insp.clear_cache()
    assert insp.get_table_names("ns") == ["other"]
    assert insp.has_table("other", "ns")


def ddl(element) -> str:
    return " ".join(str(element.compile(dialect=TrinityLakeDialect())).split())


def test_ddl_text():
    metadata = sa.MetaData()
    table = _everything(metadata)
    text = ddl(CreateTable(table))
    assert text.startswith("CREATE TABLE ns.everything ( id INT NOT NULL COMMENT 'the key', ")
    assert "PRIMARY KEY (id, id2) ) COMMENT 'every type in one table'" in text
    for word in ("FOREIGN", "UNIQUE", "CHECK", "INDEX", "CONSTRAINT"):
        assert word not in text
    assert ("st STRUCT<a: INT, \"b-c\": VARCHAR(3) NOT NULL COMMENT 'x''s'>") in text
    assert "mp MAP<VARCHAR, BIGINT NOT NULL>" in text
    assert "arr2 ARRAY<ARRAY<VARCHAR(5)>>" in text
    assert "ts6 TIMESTAMPTZ(6)" in text and "fx FIXED(16)" in text
    assert ddl(CreateIndex(list(table.indexes)[0])) == ""
    assert ddl(CreateSchema("x", if_not_exists=True)) == "CREATE SCHEMA IF NOT EXISTS x"
    assert ddl(DropSchema("x", cascade=True)) == "DROP SCHEMA x CASCADE"
    quoted = sa.Table('a"b', sa.MetaData(), sa.Column("select", sa.Integer), schema="My NS")
    assert ddl(CreateTable(quoted)) == 'CREATE TABLE "My NS"."a""b" ( "select" INT )'


@pytest.mark.parametrize(
    "column",
    [
        sa.Column("a", sa.Integer, server_default="1"),
        sa.Column("a", sa.Integer, sa.Identity()),
        sa.Column("a", sa.Integer, sa.Computed("1")),
        sa.Column("a", sa.JSON),
    ],
    ids=["server_default", "identity", "computed", "json"],
)
def test_what_the_format_cannot_hold_is_refused(column):
    table = sa.Table("t", sa.MetaData(), column)
    with pytest.raises(exc.CompileError):
        ddl(CreateTable(table))


def test_skipped_ddl_is_not_sent(engine):
    metadata = sa.MetaData()
    table = _other(metadata)
    index = sa.Index("ix", table.c.id)
    table.create(engine)
    with engine.begin() as conn:
        conn.execute(CreateIndex(index))  # compiles to nothing; nothing is sent
    assert sa.inspect(engine).get_indexes("other", "ns") == []
