"""Transactions, versions and the catalog API (SPEC 7; issue "Transactions, versions and
the catalog API")."""

from __future__ import annotations

import warm_processes
import time
import uuid

import pytest

from catalog_helpers import columns, state
from transaction_workers import create_tables
from trinitylake_dbapi.catalog import LakehouseCatalog
from trinitylake_dbapi.errors import (
    ObjectExistsError,
    ObjectNotEmptyError,
    ObjectNotFoundError,
    ReadOnlyError,
    SerializationError,
)
from trinitylake_dbapi.format import paths
from trinitylake_dbapi.storage import Storage
from trinitylake_dbapi.tree import check_tree
from trinitylake_dbapi.transaction import Isolation
from trinitylake_dbapi import maintenance


def _new(location: str, **options) -> LakehouseCatalog:  # type: ignore[no-untyped-def]
    catalog = LakehouseCatalog(location, create=True, **options)
    txn = catalog.begin()
    txn.create_namespace("ns")
    txn.commit()
    return catalog


def _assert_contiguous(catalog: LakehouseCatalog, latest: int) -> None:
    history = catalog.versions()
    assert [v.version for v in history] == list(range(latest, -1, -1))
    for info in history[:-1]:
        assert info.previous_version == info.version - 1


def _run_writers(location: str, storage_options: dict | None, workers: int, each: int) -> None:
    _new(location, storage_options=storage_options)
    context = warm_processes.context("transaction_workers")  # spawn's imports were most of the run
    with context.Pool(workers) as pool:
        results = pool.starmap(
            create_tables, [(location, storage_options, w, each) for w in range(workers)]
        )
    acknowledged = [item for result in results for item in result]
    assert len(acknowledged) == workers * each
    committed_versions = sorted(version for _, version in acknowledged)
    assert len(set(committed_versions)) == len(committed_versions)
    catalog = LakehouseCatalog(location, storage_options=storage_options)
    latest = catalog.latest_version()
    assert latest == 1 + workers * each
    assert committed_versions == list(range(2, latest + 1))
    _assert_contiguous(catalog, latest)
    tables = {table for _, table in catalog.begin().list_tables("ns")}
    assert tables == {name for name, _ in acknowledged}


def test_four_processes_commit_100_tables_on_local_disk(tmp_path) -> None:  # type: ignore[no-untyped-def]
    _run_writers(str(tmp_path / "lake"), None, workers=4, each=25)


@pytest.mark.s3
def test_three_processes_commit_on_s3(s3_root, s3_storage_options) -> None:  # type: ignore[no-untyped-def]
    _run_writers(s3_root, s3_storage_options, workers=3, each=6)


@pytest.fixture
def lake(tmp_path) -> LakehouseCatalog:  # type: ignore[no-untyped-def]
    return _new(str(tmp_path / "lake"))


def test_same_table_from_two_transactions_one_wins(lake: LakehouseCatalog) -> None:
    first, second = lake.begin(), lake.begin()
    first.create_table("ns", "t", columns("a"))
    second.create_table("ns", "t", columns("b"))
    first.commit()
    with pytest.raises(SerializationError, match="table 'ns'.'t'"):
        second.commit()
    assert [c.name for c in lake.begin().describe_table("ns", "t").columns] == ["a"]


@pytest.mark.parametrize("isolation", [Isolation.SNAPSHOT, Isolation.SERIALIZABLE])
def test_listing_conflicts_only_under_serializable(lake: LakehouseCatalog, isolation: Isolation) -> None:
    reader = lake.begin(isolation)
    assert reader.list_tables("ns") == []
    reader.create_namespace("summary")
    writer = lake.begin()
    writer.create_table("ns", "added", columns("a"))
    writer.commit()
    if isolation is Isolation.SERIALIZABLE:
        with pytest.raises(SerializationError, match="SERIALIZABLE"):
            reader.commit()
    else:
        assert reader.commit() == lake.latest_version()


def test_create_table_and_drop_namespace_cannot_both_commit(lake: LakehouseCatalog) -> None:
    creator, dropper = lake.begin(), lake.begin()
    creator.create_table("ns", "t", columns("a"))
    dropper.drop_namespace("ns")
    dropper.commit()
    with pytest.raises(SerializationError, match="namespace 'ns'"):
        creator.commit()
    assert lake.begin().list_namespaces() == ["default"]


def test_disjoint_transactions_are_replayed_not_failed(lake: LakehouseCatalog) -> None:
    first, second = lake.begin(), lake.begin()
    first.create_table("ns", "a", columns("x"))
    second.create_table("ns", "b", columns("y"))
    assert first.commit() == 2
    assert second.commit() == 3
    assert lake.begin().list_tables("ns") == [("ns", "a"), ("ns", "b")]


def test_a_retry_after_its_backoff_aims_at_the_latest_version(lake: LakehouseCatalog, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """C4: a writer that lost a race backs off, and another writer commits meanwhile; the
    retry observes the latest version again and wins at once. (A retry aimed at the
    version seen before the backoff lost again, and under steady contention again and
    again: a writer gave up after 64 lost races among 4 writers.)"""
    from trinitylake_dbapi import transaction as transaction_module

    rivals = LakehouseCatalog(lake.storage.root_uri)
    mine, first = lake.begin(), rivals.begin()
    mine.create_table("ns", "mine", columns("x"))
    first.create_table("ns", "r1", columns("y"))
    assert first.commit() == 2  # mine's first attempt, at version 2, loses
    backoffs: list[float] = []

    def backoff(seconds: float) -> None:
        backoffs.append(seconds)
        if len(backoffs) == 1:  # another writer commits during the first backoff
            second = rivals.begin()
            second.create_table("ns", "r2", columns("z"))
            assert second.commit() == 3

    monkeypatch.setattr(transaction_module.time, "sleep", backoff)
    assert mine.commit() == 4
    assert len(backoffs) == 1
    assert [t for _, t in lake.begin().list_tables("ns")] == ["mine", "r1", "r2"]


def test_after_a_lost_race_a_writer_observes_before_committing(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """D4: a process that lost a race does not trust the version its next transaction
    began on (others are committing): it checks for newer ones before building its root,
    so it does not lose again to a version it could have seen."""
    lake = _new(f"memory://{uuid.uuid4().hex}")
    rival = LakehouseCatalog(lake.storage.root_uri)
    for name in ("a", "b"):
        mine, theirs = lake.begin(), rival.begin()
        mine.create_table("ns", f"mine_{name}", columns("x"))
        theirs.create_table("ns", f"theirs_{name}", columns("y"))
        assert theirs.commit() == mine.version + 1
        before = lake.storage.counters.exclusive_creates
        assert mine.commit() == mine.version + 2
        tries = lake.storage.counters.exclusive_creates - before
        assert tries == (2 if name == "a" else 1)  # a: lost once, then contended; b: no loss


def test_time_travel_by_version_and_by_time(lake: LakehouseCatalog) -> None:
    states = {}
    for i in range(6):
        txn = lake.begin()
        txn.create_table("ns", f"t{i}", columns("id"))
        if i >= 2:
            txn.drop_table("ns", f"t{i - 2}")
        version = txn.commit()
        states[version] = state(lake.begin())
        time.sleep(0.005)
    history = {v.version: v.created_at_millis for v in lake.versions()}
    for version, expected in states.items():
        assert state(lake.begin(version=version)) == expected
        at = lake.version_at(history[version])
        assert at == version
        assert state(lake.begin(version=lake.version_at(history[version] + 1))) == expected
    with pytest.raises(ObjectNotFoundError):
        lake.version_at(history[0] - 1)
    with pytest.raises(ObjectNotFoundError, match="version 999"):
        lake.begin(version=999)
    with pytest.raises(ReadOnlyError):
        lake.begin(version=2).create_namespace("nope")


def test_rollback_makes_a_new_version_equal_to_the_old_one(lake: LakehouseCatalog) -> None:
    for name in ("a", "b", "c"):
        txn = lake.begin()
        txn.create_table("ns", name, columns("id"))
        txn.commit()
    target_state = state(lake.begin(version=2))
    latest = lake.latest_version()
    new = lake.rollback_to(2)
    assert new == latest + 1
    assert state(lake.begin()) == target_state
    info = lake.versions()[0]
    assert info.version == new and info.rollback_from_version == latest and info.previous_version == latest
    assert info.changes == (f"rollback of version {latest}",)
    # A transaction that began before the rollback conflicts with it.
    stale = lake.begin(version=None)
    stale.create_table("ns", "z", columns("id"))
    lake.rollback_to(1)
    with pytest.raises(SerializationError, match="rollback"):
        stale.commit()


@pytest.mark.parametrize("hint", [None, b"0", b"1", b"999999", b"garbage", b"-4", b"\xff\xfe"])
def test_latest_version_whatever_the_hint(lake: LakehouseCatalog, hint: bytes | None) -> None:
    for name in "abcde":
        txn = lake.begin()
        txn.create_table("ns", name, columns("id"))
        txn.commit()
    storage = lake.storage
    if hint is None:
        storage.delete(paths.LATEST_HINT_PATH)
    else:
        storage.write(paths.LATEST_HINT_PATH, hint)
    fresh = LakehouseCatalog(storage.root_uri)
    assert fresh.latest_version() == 6
    assert len(fresh.begin().list_tables()) == 5


def test_latest_version_with_the_oldest_versions_expired_and_no_hint(lake: LakehouseCatalog) -> None:
    for name in "abcdefgh":
        txn = lake.begin()
        txn.create_table("ns", name, columns("id"))
        txn.commit()
    maintenance.expire_versions(lake, older_than_millis=int(time.time() * 1000) + 1000, orphan_grace_millis=0)
    assert not lake.storage.exists(paths.root_node_path(0))
    for hint in (None, b"0", b"3"):
        if hint is None:
            lake.storage.delete(paths.LATEST_HINT_PATH)
        else:
            lake.storage.write(paths.LATEST_HINT_PATH, hint)
        assert LakehouseCatalog(lake.storage.root_uri).latest_version() == 9


def test_latest_version_lists_only_the_top_level_to_find_roots(lake: LakehouseCatalog, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    for name in "abc":
        txn = lake.begin()
        txn.create_table("ns", name, columns("id"))
        txn.commit()
    maintenance.expire_versions(lake, older_than_millis=int(time.time() * 1000) + 1000, orphan_grace_millis=0)
    lake.storage.delete(paths.LATEST_HINT_PATH)
    calls: list[tuple[str, bool]] = []
    listing = Storage.list

    def spy(self: Storage, prefix: str = "", *, recursive: bool = True) -> list[str]:
        calls.append((prefix, recursive))
        return listing(self, prefix, recursive=recursive)

    monkeypatch.setattr(Storage, "list", spy)
    assert LakehouseCatalog(lake.storage.root_uri).latest_version() == 4
    assert calls == [("", False)]  # roots live at the top level: no node directory listed


def test_opening_a_missing_lakehouse_is_an_error(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ObjectNotFoundError, match="no lakehouse"):
        LakehouseCatalog(str(tmp_path / "nothing-here"))
    assert not (tmp_path / "nothing-here").exists()


def test_catalog_errors(lake: LakehouseCatalog) -> None:
    txn = lake.begin()
    txn.create_table("ns", "t", columns("id"))
    with pytest.raises(ObjectExistsError):
        txn.create_namespace("ns")
    assert txn.create_namespace("ns", if_not_exists=True) is False
    with pytest.raises(ObjectNotEmptyError, match="CASCADE"):
        txn.drop_namespace("ns")
    with pytest.raises(ObjectNotFoundError, match="namespace 'missing'"):
        txn.create_table("missing", "t", columns("id"))
    with pytest.raises(ObjectNotFoundError, match="table 'ns'.'nope'"):
        txn.describe_table("ns", "nope")
    assert txn.drop_namespace("ns", cascade=True) is True
    txn.commit()
    assert lake.begin().list_namespaces() == ["default"]


def test_expiration_keeps_newest_and_exported_and_dry_run_matches(lake: LakehouseCatalog) -> None:
    for i in range(12):
        txn = lake.begin()
        txn.create_table("ns", f"t{i}", columns("id"))
        if i % 3 == 2:
            txn.drop_table("ns", f"t{i - 1}")
        txn.commit()
    exported_state = state(lake.begin(version=4))
    lake.export_snapshot("keep-me", 4)
    latest = lake.latest_version()
    cutoff = int(time.time() * 1000) + 1000
    before = set(lake.storage.list(""))
    dry = maintenance.expire_versions(lake, older_than_millis=cutoff, dry_run=True, orphan_grace_millis=0)
    assert set(lake.storage.list("")) == before
    real = maintenance.expire_versions(lake, older_than_millis=cutoff, orphan_grace_millis=0)
    assert (dry.versions, dry.files) == (real.versions, real.files)
    kept = {latest, latest - 1, latest - 2, 4}
    assert set(real.versions) == set(range(latest + 1)) - kept
    after = set(lake.storage.list(""))
    assert after == before - set(real.files)
    # Exactly the files no kept root reaches were deleted.
    from trinitylake_dbapi.maintenance import is_format_file, reachable_files

    reached = reachable_files(lake.lakehouse, kept)
    assert {f for f in after if is_format_file(f)} == reached
    for version in kept:
        snapshot = lake.lakehouse.snapshot(version)
        assert check_tree(snapshot.tree.store, snapshot.root, snapshot.tree.config, str(version)) == []
    assert state(lake.begin(version="keep-me")) == exported_state
    again = maintenance.expire_versions(lake, older_than_millis=cutoff, orphan_grace_millis=0)
    assert again.files == []


def test_expiration_deletes_temp_files_a_killed_writer_left_once_they_are_old(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """E4/E6: a writer killed between writing a temp file and renaming (or linking) it
    leaves a ``.tl-tmp-*`` file that listings hide. Expiration deletes it once it is
    older than the orphan grace period, like any orphan, and leaves young ones (a
    write in flight) and files that are not the library's alone."""
    import os

    location = str(tmp_path / "lake")
    lake = _new(location)
    node_dir = next(os.path.dirname(p) for p in lake.storage.list("") if "/" in p)
    past = time.time() - 2 * 3600
    made = {}
    for age in ("old", "young"):
        for directory in ("", node_dir):
            path = f"{directory}/.tl-tmp-{age}" if directory else f".tl-tmp-{age}"
            full = os.path.join(location, path)
            with open(full, "wb") as f:
                f.write(b"partial")
            if age == "old":
                os.utime(full, (past, past))
            made.setdefault(age, []).append(path)
    foreign = os.path.join(location, "tl-tmp-not-ours")
    with open(foreign, "wb") as f:
        f.write(b"user file")
    os.utime(foreign, (past, past))
    assert not any(".tl-tmp" in p for p in lake.storage.list(""))  # hidden from listings

    dry = maintenance.expire_versions(lake, dry_run=True)
    assert set(made["old"]) <= set(dry.files) and not set(made["young"]) & set(dry.files)
    done = maintenance.expire_versions(lake)
    assert done.files == dry.files
    for path in made["old"]:
        assert not os.path.exists(os.path.join(location, path))
    for path in made["young"]:
        assert os.path.exists(os.path.join(location, path))
    assert os.path.exists(foreign)
    assert lake.begin().list_tables() == []


def test_unique_table_names_per_process_run(tmp_path) -> None:  # type: ignore[no-untyped-def]
    catalog = _new(str(tmp_path / uuid.uuid4().hex))
    txn = catalog.begin()
    assert txn.create_table("ns", "t", columns("id"), if_not_exists=True) is True
    assert txn.create_table("ns", "t", columns("id"), if_not_exists=True) is False
    txn.commit()


def _commit_four_then_expire_all_but_the_newest(location: str, export: int | None) -> int:
    """Another connection exports ``export`` (if given), commits tables t0..t3 one
    version each, then expires every version but the newest. Returns the newest."""
    busy = LakehouseCatalog(location)
    if export is not None:
        busy.export_snapshot("kept", export)
    for i in range(4):
        txn = busy.begin()
        txn.create_table("ns", f"t{i}", columns("a"))
        txn.commit()
    maintenance.expire_versions(busy, retain_last=1, older_than_millis=int(time.time() * 1000) + 1000, orphan_grace_millis=0)
    return busy.latest_version()


def test_a_stale_connection_does_not_commit_into_a_gap_left_by_expiration(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A connection last saw version v; meanwhile v was exported, more versions were
    committed and every version between v and the newest expired. Its next transaction
    must start at the newest version, not at v (committing "v+1" into the hole would fork
    the history and lose the commit)."""
    location = str(tmp_path / "lake")
    idle = _new(location)
    stale = idle.latest_version()
    newest = _commit_four_then_expire_all_but_the_newest(location, export=stale)
    storage = Storage(location)
    assert storage.exists(paths.root_node_path(stale))
    assert not storage.exists(paths.root_node_path(stale + 1))

    txn = idle.begin()  # expiration waited (E7): idle's observation is no longer fresh
    assert txn.version == newest
    assert txn.table_exists("ns", "t3")
    txn.create_table("ns", "late", columns("a"))
    assert txn.commit() == newest + 1
    assert {t for _, t in LakehouseCatalog(location).begin().list_tables("ns")} == {"t0", "t1", "t2", "t3", "late"}


@pytest.mark.parametrize("exported", [False, True])
def test_a_transaction_begun_before_its_successors_expired_fails_instead_of_forking(tmp_path, exported: bool) -> None:  # type: ignore[no-untyped-def]
    """A transaction began at v; then v+1..w were committed and every version but w
    expired (v too, unless exported). Its commit must not create "v+1" inside the hole
    (a fork nobody would ever find): the versions it would have to be checked against
    are gone, so it fails with a SerializationError and the history is untouched."""
    location = str(tmp_path / "lake")
    slow = _new(location)
    txn = slow.begin()
    begun_at = txn.version
    txn.create_table("ns", "late", columns("a"))
    newest = _commit_four_then_expire_all_but_the_newest(location, export=begun_at if exported else None)
    storage = Storage(location)
    assert storage.exists(paths.root_node_path(begun_at)) is exported
    assert not storage.exists(paths.root_node_path(begun_at + 1))

    with pytest.raises(SerializationError, match=f"version {begun_at + 1}.*expired"):
        txn.commit()
    assert not storage.exists(paths.root_node_path(begun_at + 1))
    assert not storage.exists(paths.root_node_path(newest + 1))
    assert LakehouseCatalog(location).latest_version() == newest
    retry = slow.begin()
    retry.create_table("ns", "late", columns("a"))
    assert retry.commit() == newest + 1


def test_expiration_deletes_a_root_only_after_the_delay_since_listing_it(lake: LakehouseCatalog, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """E7: the window in which a writer trusts "root v+1 is missing" (FRESH_LATEST_S)
    is shorter than the time between a root being listed and being deleted."""
    from trinitylake_dbapi.lakehouse import EXPIRED_ROOT_DELETE_DELAY_S, FRESH_LATEST_S

    assert EXPIRED_ROOT_DELETE_DELAY_S > FRESH_LATEST_S
    for name in "abcd":
        txn = lake.begin()
        txn.create_table("ns", name, columns("id"))
        txn.commit()
    events: list[tuple[str, float, list[str]]] = []
    listing, deleting = Storage.list, Storage.delete_many

    def spy_list(self: Storage, prefix: str = "", **options: bool) -> list[str]:
        found = listing(self, prefix, **options)
        events.append(("list", time.monotonic(), found))
        return found

    def spy_delete(self: Storage, paths_: list[str]) -> None:
        events.append(("delete", time.monotonic(), list(paths_)))
        deleting(self, paths_)

    monkeypatch.setattr(Storage, "list", spy_list)
    monkeypatch.setattr(Storage, "delete_many", spy_delete)
    result = maintenance.expire_versions(lake, retain_last=1, older_than_millis=int(time.time() * 1000) + 1000)
    assert result.versions == list(range(lake.latest_version() - 2))  # 3 kept by default
    deleted_roots = [(at, p) for kind, at, found in events if kind == "delete" for p in found
                     if paths.parse_root_node_path(p) is not None]
    assert sorted(p for _, p in deleted_roots) == sorted(paths.root_node_path(v) for v in result.versions)
    for at, root in deleted_roots:
        last_listed = max(t for kind, t, found in events if kind == "list" and root in found and t <= at)
        assert at - last_listed >= EXPIRED_ROOT_DELETE_DELAY_S, root


def test_expiration_never_deletes_user_files_that_look_like_format_files(tmp_path) -> None:  # type: ignore[no-untyped-def]
    # Issue 15, item 10: these were deleted as orphans.
    import os

    from trinitylake_dbapi.format import paths

    location = str(tmp_path / "lake")
    lake = _new(location)
    for i in range(4):
        txn = lake.begin()
        txn.create_table("ns", f"t{i}", columns("id"))
        txn.commit()
    node = next(p for p in lake.storage.list("") if paths.parse_format_path(p) and "/" in p)
    lookalikes = [
        "0000/0000/0000/00000000-table-events/part-0001.binpb",
        "0000/0000/0000/00000000-node-x/data.arrow",
        node + ".bak",
        node[:24] + "table-copy/" + node[24:],
    ]
    past = time.time() - 2 * 3600
    for path in lookalikes:
        full = os.path.join(location, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "wb") as f:
            f.write(b"user data")
        os.utime(full, (past, past))
    result = maintenance.expire_versions(lake, older_than_millis=int(time.time() * 1000) + 1000, orphan_grace_millis=0)
    assert result.versions  # it did expire versions and delete their files
    for path in lookalikes:
        assert os.path.exists(os.path.join(location, path)), path
        assert path not in result.files


@pytest.mark.parametrize("options", [[("order", 4)], "order=4", 4, ("order",)])
def test_lakehouse_options_that_are_not_a_mapping_are_a_programming_error(tmp_path, options) -> None:  # type: ignore[no-untyped-def]
    # Issue 15, item 12: a TypeError from deep inside became an InternalError.
    import trinitylake_dbapi
    from trinitylake_dbapi.errors import InvalidDefinitionError

    with pytest.raises(InvalidDefinitionError, match="lakehouse_options must be a mapping"):
        trinitylake_dbapi.connect(str(tmp_path / "lake"), create=True, lakehouse_options=options)
    assert not (tmp_path / "lake").exists() or not any((tmp_path / "lake").iterdir())


def test_no_commit_past_the_last_version_and_nothing_written(tmp_path) -> None:  # type: ignore[no-untyped-def]
    # Issue 15, item 12 (rule C6): the commit after version 2^32-1 raised an InternalError
    # and left its files behind.
    import os

    from trinitylake_dbapi.errors import CommitFailedError
    from trinitylake_dbapi.format import keys as keyfmt
    from trinitylake_dbapi.format import paths
    from trinitylake_dbapi.format.nodefile import NodeFile, decode_node_file, encode_node_file

    location = str(tmp_path / "lake")
    lake = _new(location)
    # The latest root, re-published as version 2^32-1 (its predecessors expired).
    latest = lake.latest_version()
    root = decode_node_file(lake.storage.read(paths.root_node_path(latest)), "root")
    for version in (paths.MAX_VERSION - 1, paths.MAX_VERSION):
        system = dict(root.system, **{keyfmt.PREVIOUS_ROOT: paths.root_node_path(version - 1)})
        copy = NodeFile(root.order, system, root.keys, root.values, root.children, root.buffer)
        lake.storage.write(paths.root_node_path(version), encode_node_file(copy))
    for version in range(latest + 1):
        lake.storage.delete(paths.root_node_path(version))
    lake.storage.delete(paths.LATEST_HINT_PATH)
    reopened = LakehouseCatalog(location)
    assert reopened.latest_version() == paths.MAX_VERSION
    before = sorted(os.listdir(location))
    txn = reopened.begin()
    txn.create_namespace("one_too_many")
    with pytest.raises(CommitFailedError, match="the last one its root file names can hold"):
        txn.commit()
    with pytest.raises(CommitFailedError, match="no further commit is possible"):
        reopened.rollback_to(paths.MAX_VERSION - 1)
    assert sorted(os.listdir(location)) == before
    assert reopened.begin().list_namespaces() == ["default", "ns"]


def test_keys_that_do_not_fit_the_lakehouse_definition_are_a_corrupt_definition(tmp_path) -> None:  # type: ignore[no-untyped-def]
    # Issue 15, item 12: a lakehouse definition whose name limits are below its existing
    # keys gave an InternalError (ValueError: malformed key).
    import os

    import trinitylake_dbapi
    from trinitylake_dbapi.errors import CorruptFileError
    from trinitylake_dbapi.format.definitions import LakehouseDef, encode

    location = str(tmp_path / "lake")
    lake = _new(location)
    txn = lake.begin()
    txn.create_namespace("a_long_namespace")
    txn.create_table("a_long_namespace", "a_long_table", columns("id"))
    txn.commit()
    def_path = lake.lakehouse.snapshot().lakehouse_def_path
    definition = LakehouseDef.FromString(lake.storage.read(def_path))
    definition.namespace_name_max_size_bytes = definition.table_name_max_size_bytes = 4
    os.chmod(os.path.join(location, def_path), 0o644)
    with open(os.path.join(location, def_path), "wb") as f:
        f.write(encode(definition))
    cur = trinitylake_dbapi.connect(location).cursor()
    for sql in ("SHOW NAMESPACES", "SHOW TABLES", "SELECT * FROM information_schema.tables"):
        with pytest.raises(CorruptFileError, match="name limits of this lakehouse definition") as info:
            cur.execute(sql)
        assert def_path in str(info.value)


def test_a_commit_that_loses_a_conflict_leaves_no_file(tmp_path) -> None:  # type: ignore[no-untyped-def]
    # Issue 15, item 16 (rule C5): its definition and node files stayed as orphans.
    import os

    from trinitylake_dbapi.errors import SerializationError

    location = str(tmp_path / "lake")
    lake = _new(location)
    first, second = lake.begin(), LakehouseCatalog(location).begin()
    for i in range(30):  # enough to flush and split: node files as well as definitions
        first.create_table("ns", f"t{i}", columns("id"))
        second.create_table("ns", f"t{i}", columns("id", "other"))
    first.commit()

    def files() -> set[str]:
        return {os.path.relpath(os.path.join(d, f), location)
                for d, _, names in os.walk(location) for f in names}

    before = files()
    with pytest.raises(SerializationError):
        second.commit()
    assert files() == before
