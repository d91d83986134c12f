"""SQLAlchemy's dialect compliance suite, the classes that apply to TrinityLake.

Run with the rest of the tests (the plugin set-up is in this directory's conftest.py).
Classes of the suite that need rows (about 47 of them) are not imported: TrinityLake
tables hold definitions only.

Overrides, each with its reason:

* ``run_deletes = None`` on ``QuotedNameArgumentTest`` and ``CompositeKeyReflectionTest``
  (the suite's default empties every table with DELETE after each test): tables hold no
  rows, and TrinityLake SQL has no DELETE.
* ``HasTableTest.define_views``: the suite creates views when ``requires.view_reflection``
  is truthy, which a requirement object always is (it forgets ``.enabled``); the format
  has no views, so none are defined.
* ``ComponentReflectionTest.test_get_view_names``: runs without a requirement and expects
  the views of its fixture; the format has no views, so the test checks that
  ``get_view_names`` is empty in both schemas.
* ``ComponentReflectionTest.test_get_indexes`` and ``QuotedNameArgumentTest.
  test_get_foreign_keys`` / ``test_get_indexes``: gated by their requirements, as
  SQLAlchemy 2.x's suite does and 1.4's forgets (the suite also runs on 1.4: issue 20).
  ``ArgSignatureTest`` and ``PingTest`` exist in 2.x only.
* ``InsertBehaviorTest.test_no_results_for_non_returning_insert`` and
  ``test_insert_from_select_autoinc``: they insert into a table whose key is left to
  the database (autoincrement) without the ``autoincrement_insert`` requirement; the
  format has no generated values, so they are skipped.
* ``QuotedNameArgumentTest.define_tables`` and the tests that run (``test_get_columns``,
  ``test_get_pk_constraint``, ``test_get_table_comment``, ``test_get_table_options``):
  the suite's table names ``quote ' one`` / ``quote " two`` contain spaces, which object
  names may not hold (SPEC 3: no byte 0x00-0x20); the same tests run on ``quote'one``
  and ``quote"two``, which keep the quote characters the test is about.
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy import inspect, testing
from sqlalchemy.testing import config, eq_
from sqlalchemy.testing.schema import Column, Table
from sqlalchemy.testing.suite import test_dialect, test_insert, test_reflection
from sqlalchemy.testing.suite.test_ddl import TableDDLTest  # noqa: F401 - runs as the suite wrote it
from sqlalchemy.testing.suite.test_insert import *  # noqa: F401,F403
from sqlalchemy.testing.suite.test_results import *  # noqa: F401,F403
from sqlalchemy.testing.suite.test_rowcount import *  # noqa: F401,F403
from sqlalchemy.testing.suite.test_select import *  # noqa: F401,F403


class ComponentReflectionTest(test_reflection.ComponentReflectionTest):
    # SQLAlchemy 1.4's suite runs this one whatever index_reflection says (2.x asks it).
    @testing.requires.index_reflection
    @testing.combinations((False,), (True,), argnames="use_schema")
    def test_get_indexes(self, connection, use_schema):
        super().test_get_indexes(connection, use_schema)

    @testing.combinations((True,), (False,), argnames="use_schema")
    def test_get_view_names(self, connection, use_schema):
        schema = config.test_schema if use_schema else None
        eq_(inspect(connection).get_view_names(schema), [])


class ComponentReflectionTestExtra(test_reflection.ComponentReflectionTestExtra):
    pass


class CompositeKeyReflectionTest(test_reflection.CompositeKeyReflectionTest):
    run_deletes = None


class HasTableTest(test_reflection.HasTableTest):
    @classmethod
    def define_views(cls, metadata):
        pass


_QUOTED_NAMES = testing.combinations(("quote'one",), ('quote"two',), argnames="name")


class QuotedNameArgumentTest(test_reflection.QuotedNameArgumentTest):
    run_deletes = None

    @classmethod
    def define_tables(cls, metadata):
        for name in ("quote'one", 'quote"two'):
            Table(
                name,
                metadata,
                Column("id", sa.Integer),
                Column("name", sa.String(50)),
                Column("data", sa.String(50)),
                Column("related_id", sa.Integer),
                sa.PrimaryKeyConstraint("id", name=f"pk {name}"),
                sa.Index(f"ix {name}", "name"),
                sa.UniqueConstraint("data", name=f"uq {name}"),
                sa.ForeignKeyConstraint(["id"], ["related.id"], name=f"fk {name}"),
                sa.CheckConstraint("name != 'foo'", name=f"ck {name}"),
                comment=f"{name} comment",
                test_needs_fk=True,
            )
        Table(
            "related",
            metadata,
            Column("id", sa.Integer, primary_key=True),
            Column("related", sa.Integer),
            test_needs_fk=True,
        )

    # SQLAlchemy 1.4's suite runs these whatever the requirements say (2.x asks them).
    @testing.requires.foreign_key_constraint_reflection
    @_QUOTED_NAMES
    def test_get_foreign_keys(self, name):
        super().test_get_foreign_keys(name)

    @testing.requires.index_reflection
    @_QUOTED_NAMES
    def test_get_indexes(self, name):
        super().test_get_indexes(name)

    # The suite's test bodies (one line each), on names without spaces; a little
    # stricter than the suite's truthiness checks.

    @_QUOTED_NAMES
    def test_get_table_options(self, name):
        eq_(inspect(config.db).get_table_options(name), {})

    @_QUOTED_NAMES
    def test_get_columns(self, name):
        columns = inspect(config.db).get_columns(name)
        eq_([c["name"] for c in columns], ["id", "name", "data", "related_id"])

    @_QUOTED_NAMES
    def test_get_pk_constraint(self, name):
        eq_(inspect(config.db).get_pk_constraint(name)["constrained_columns"], ["id"])

    @_QUOTED_NAMES
    def test_get_table_comment(self, name):
        eq_(inspect(config.db).get_table_comment(name), {"text": f"{name} comment"})


if hasattr(test_dialect, "ArgSignatureTest"):  # SQLAlchemy 2.x only

    class ArgSignatureTest(test_dialect.ArgSignatureTest):
        pass


if hasattr(test_dialect, "PingTest"):  # SQLAlchemy 2.x only

    class PingTest(test_dialect.PingTest):
        pass


class InsertBehaviorTest(test_insert.InsertBehaviorTest):
    @testing.skip("trinitylake", "the format has no generated (autoincrement) values")
    def test_no_results_for_non_returning_insert(self):
        pass

    @testing.skip("trinitylake", "the format has no generated (autoincrement) values")
    def test_insert_from_select_autoinc(self):
        pass
