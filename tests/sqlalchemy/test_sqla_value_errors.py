"""pandas ``to_sql`` of a bytes column without ``dtype=`` (issue 32, item 4): pandas
makes the column TEXT; bytes that are not UTF-8 are a DataError naming the column, UTF-8
bytes are stored as their text (never as escaped ``'\\xFF'`` text)."""

from __future__ import annotations

import pandas as pd
import pytest
import sqlalchemy as sa

import trinitylake_dbapi


def test_to_sql_of_bytes_that_are_not_utf8_is_a_data_error_naming_the_column(engine: sa.Engine) -> None:
    frame = pd.DataFrame({"id": [1, 2], "payload": [b"fine", b"\xff\xfe"]})
    with pytest.raises(Exception) as info:  # pandas wraps SQLAlchemy's error in its own
        frame.to_sql("blobs", engine, schema="ns", index=False)
    chain = [info.value]
    while chain[-1].__cause__ is not None:
        chain.append(chain[-1].__cause__)
    ours = [e for e in chain if isinstance(e, trinitylake_dbapi.Error)]
    assert ours and type(ours[0]) is trinitylake_dbapi.DataError, chain
    assert "'payload'" in str(ours[0])
    with engine.connect() as conn:
        exists = conn.exec_driver_sql("SELECT count(*) FROM information_schema.tables WHERE table_name = 'blobs'").scalar()
        if exists:
            assert conn.exec_driver_sql("SELECT count(*) FROM ns.blobs").scalar() == 0


def test_to_sql_of_utf8_bytes_stores_their_text(engine: sa.Engine) -> None:
    frame = pd.DataFrame({"id": [1, 2], "payload": ["é".encode(), b"abc"]})
    frame.to_sql("texts", engine, schema="ns", index=False)
    back = pd.read_sql_query("SELECT id, payload FROM ns.texts ORDER BY id", engine)
    assert back.to_dict("records") == [{"id": 1, "payload": "é"}, {"id": 2, "payload": "abc"}]
