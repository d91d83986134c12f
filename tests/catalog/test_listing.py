"""Listing a namespace (the derived, cached scan) agrees with the table keys at every
version, inside transactions with their own writes, and with malformed keys."""

from __future__ import annotations

import random
import uuid

from lake_builders import SMALL_TREE, columns
from trinitylake_dbapi.catalog import LakehouseCatalog
from trinitylake_dbapi import like_to_regex


def test_listings_match_a_model_at_every_version() -> None:
    catalog = LakehouseCatalog(f"memory://listing-{uuid.uuid4().hex}/lake", create=True,
                               lakehouse_options=SMALL_TREE)
    txn = catalog.begin()
    for ns in ("a", "b", "c"):
        txn.create_namespace(ns)
    txn.commit()
    rng = random.Random(7)
    model: dict[str, set[str]] = {"a": set(), "b": set(), "c": set()}
    history: list[tuple[int, dict[str, list[str]]]] = []
    for step in range(120):
        txn = catalog.begin()
        for _ in range(rng.randint(1, 4)):
            ns = rng.choice("abc")
            if model[ns] and rng.random() < 0.35:
                name = rng.choice(sorted(model[ns]))
                txn.drop_table(ns, name)
                model[ns].discard(name)
            else:
                name = f"t{rng.randint(0, 300):03d}"
                if name not in model[ns]:
                    txn.create_table(ns, name, columns("id"))
                    model[ns].add(name)
            # The transaction's own writes show in its listings.
            assert txn.list_tables(ns) == [(ns, t) for t in sorted(model[ns])]
        version = txn.commit()
        history.append((version, {ns: sorted(tables) for ns, tables in model.items()}))
        if step % 10 == 0:
            for old_version, old in rng.sample(history, min(4, len(history))):
                view = catalog.begin(version=old_version)
                for ns in "abc":
                    assert view.list_tables(ns) == [(ns, t) for t in old[ns]]
                    assert view.list_tables(ns, like_to_regex("t1%").fullmatch) == [(ns, t) for t in old[ns] if t.startswith("t1")]
    # A new process (no caches) agrees with this one.
    fresh = LakehouseCatalog(catalog.storage.root_uri)
    for ns in "abc":
        expected = [(ns, t) for t in sorted(model[ns])]
        assert fresh.begin().list_tables(ns) == expected == catalog.begin().list_tables(ns)
    assert catalog.begin().list_tables() == sorted(
        (ns, t) for ns, tables in model.items() for t in tables
    )


def test_a_malformed_key_in_a_namespace_range_is_decoded_key_by_key() -> None:
    from trinitylake_dbapi.errors import CorruptFileError

    catalog = LakehouseCatalog(f"memory://listing-{uuid.uuid4().hex}/lake", create=True,
                               lakehouse_options=SMALL_TREE)
    txn = catalog.begin()
    txn.create_namespace("ns")
    for i in range(12):
        txn.create_table("ns", f"t{i:02d}", columns("id"))
    txn.commit()
    view = catalog.begin()
    listed = view.list_tables("ns")
    prefix, _ = view._codec.tables_range("ns")
    txn = catalog.begin()
    txn._txn.put(prefix + "ok", "x")  # too short: not a well formed table key
    try:
        txn.list_tables("ns")
    except CorruptFileError as exc:  # issue 15, item 12: once a raw ValueError
        assert "malformed key" in str(exc)
    else:
        raise AssertionError("a malformed key must not be listed as a table")
    assert catalog.begin().list_tables("ns") == listed


def test_table_names_are_cut_only_from_well_formed_keys() -> None:
    from trinitylake_dbapi.format.keys import TableNamesOfKeys as _TableNames

    prefix = "C===" + "ns".ljust(8)
    names = _TableNames(prefix, len(prefix) + 6)
    assert names([prefix + "a     ", prefix + "abcdef", prefix + "b1    "]) == ["a", "abcdef", "b1"]
    assert names([]) == []
    for bad in ("      ", "a b   ", "a    b", "a   b ", "abcdefg", "a    ", "a\x01    ", "é     "):
        assert names([prefix + "a     ", prefix + bad]) is None, bad
    assert names(["C===" + "nt".ljust(8) + "a     "]) is None
