"""LIKE patterns (rules LK1-LK3 of sql/like.py), and the catalog listings' name filter that
SQL turns them into."""

from __future__ import annotations

import pytest

from lakes import Lake
from trinitylake_dbapi import errors, like_to_regex
from trinitylake_dbapi.sql.like import like_literal

NAMES = ["orders", "order_items", "orderXitems", "pct%", "we\\ird", "trailing\\", "a\nb", ""]


@pytest.mark.parametrize(
    "pattern, matched",
    [
        ("order%", ["orders", "order_items", "orderXitems"]),  # LK1
        ("order_items", ["order_items", "orderXitems"]),  # LK1: _ is one character
        ("order\\_items", ["order_items"]),  # LK2
        ("pct\\%", ["pct%"]),
        ("we\\\\ird", ["we\\ird"]),
        ("trailing\\", ["trailing\\"]),  # LK2: a trailing backslash is itself
        ("a_b", ["a\nb"]),  # any character, a newline too
        ("order", []),  # LK3: the whole name
        ("%", NAMES),
        ("", [""]),
        ("Orders", []),  # case-sensitive
    ],
)
def test_like_matches_whole_names(pattern: str, matched: list[str]) -> None:
    regex = like_to_regex(pattern)
    assert [n for n in NAMES if regex.fullmatch(n)] == matched


@pytest.mark.parametrize(
    "pattern", ["orders", "order\\_items", "pct\\%", "we\\\\ird", "trailing\\", "", "\\o"]
)
def test_a_pattern_without_wildcards_names_the_one_name_it_matches(pattern: str) -> None:
    name = like_literal(pattern)
    assert name is not None
    assert [n for n in [name, *NAMES] if like_to_regex(pattern).fullmatch(n)][0] == name


@pytest.mark.parametrize("pattern", ["order%", "order_items", "\\\\%", "%"])
def test_a_pattern_with_wildcards_names_no_one_name(pattern: str) -> None:
    assert like_literal(pattern) is None


def test_listings_take_a_predicate_and_refuse_a_pattern_by_name(memory_lake: Lake) -> None:
    conn = memory_lake.connect(autocommit=True)
    conn.cursor().execute("CREATE TABLE orders (id INT)")
    txn = conn.lakehouse.begin()
    assert txn.list_tables("default", like_to_regex("ord%").fullmatch) == [("default", "orders")]
    assert txn.list_tables(None, lambda name: name.startswith("x")) == []
    assert txn.list_namespaces(like_to_regex("def%").fullmatch) == ["default"]
    with pytest.raises(errors.ProgrammingError, match="like_to_regex"):
        txn.list_tables("default", "ord%")  # type: ignore[arg-type]
    with pytest.raises(errors.ProgrammingError, match="like_to_regex"):
        txn.list_namespaces("def%")  # type: ignore[arg-type]
    txn.rollback()
    conn.close()
