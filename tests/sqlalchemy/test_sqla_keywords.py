"""The dialect quotes every word the driver cannot read as a plain name (issue 16, item 3).

``trinitylake_dbapi.KEYWORDS`` is the driver's list of such words; the dialect takes its
reserved words from it, so a table whose column names are those words is created and
reflected.
"""

from __future__ import annotations

import sqlalchemy as sa

import trinitylake_dbapi


def test_the_dialect_quotes_every_keyword_the_driver_names(engine: sa.Engine) -> None:
    preparer = engine.dialect.identifier_preparer
    plain = [w for w in trinitylake_dbapi.KEYWORDS if preparer.quote(w.lower()) == w.lower()]
    assert plain == []


def test_a_table_with_every_keyword_as_a_column_name_round_trips(engine: sa.Engine) -> None:
    words = sorted(w.lower() for w in trinitylake_dbapi.KEYWORDS)
    metadata = sa.MetaData()
    sa.Table(
        "words", metadata,
        sa.Column("id", sa.Integer, primary_key=True),
        *(sa.Column(w, sa.Integer) for w in words),
        schema="ns",
    )  # fmt: skip
    metadata.create_all(engine)
    reflected = sa.Table("words", sa.MetaData(), schema="ns", autoload_with=engine)
    assert [c.name for c in reflected.columns] == ["id", *words]
