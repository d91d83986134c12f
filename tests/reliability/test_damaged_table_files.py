"""Damaged Iceberg files of a table (issue 32, items 1 and 2): every statement that
meets one gets a PEP 249 error naming the file, never InternalError, never a
message that does not say which file.

Each test builds a real lakehouse, damages a real file the way disks and people do
(garbage, truncation, a flipped bit, deletion, a read-only directory), and runs real
statements. Iceberg records absolute locations, so a lakehouse cannot be copied to
another place: the module builds one (small: one table, one snapshot) and keeps a copy
of its files, and each test gets them back at the same place (``lake``).
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
from typing import Any, Callable, Iterator

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import trinitylake_dbapi as tl
from trinitylake_dbapi.iceberg import planning
from trinitylake_dbapi import errors

ROWS = [(1, "a"), (2, "b"), (3, "c")]


def build(location: str) -> str:
    """A lakehouse with table ns.t holding ROWS in one data file; the table's folder."""
    with tl.connect(location, create=True, autocommit=True) as conn:
        cur = conn.cursor()
        cur.execute("CREATE NAMESPACE ns")
        cur.execute("CREATE TABLE ns.t (id INT, s STRING)")
        cur.execute("INSERT INTO ns.t VALUES (1, 'a'), (2, 'b'), (3, 'c')")
    (table,) = glob.glob(os.path.join(location, "tables", "ns", "t-*"))
    # The tests damage files as if between processes: a process keeps what it decoded
    # before a file was damaged (iceberg.planning PC2, Iceberg files never change), and
    # a later process meets the damage on its first read. Forget the decoded files, as
    # a new process would have none.
    planning.clear_cache()
    return table


def table_of(location: str) -> str:
    """The folder of table ns.t of the lakehouse at ``location``."""
    (table,) = glob.glob(os.path.join(location, "tables", "ns", "t-*"))
    return table


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """The module's lakehouse location and a copy of its files as ``build`` left them."""
    base = tmp_path_factory.mktemp("damaged")
    location, copy = str(base / "lake"), str(base / "pristine")
    build(location)
    shutil.copytree(location, copy, symlinks=True)
    return location, copy


def restore(pristine: tuple[str, str]) -> str:
    """The module's lakehouse as ``build`` left it, whatever an earlier test did to it
    (its files copied back to the same place: the absolute locations Iceberg recorded
    stay right), and no decoded file in the process (as in ``build``); its location.
    The copy costs a tenth of a build."""
    location, copy = pristine
    if os.path.exists(location):
        shutil.rmtree(location)
    shutil.copytree(copy, location, symlinks=True)
    planning.clear_cache()
    return location


@pytest.fixture
def lake(pristine: tuple[str, str]) -> str:
    """A fresh copy of the module's lakehouse (``restore``): its location."""
    return restore(pristine)


def one(pattern: str) -> str:
    (found,) = glob.glob(pattern)
    return found


def metadata_file(table: str) -> str:
    return sorted(glob.glob(os.path.join(table, "metadata", "*.metadata.json")))[-1]


def manifest_list(table: str) -> str:
    return one(os.path.join(table, "metadata", "snap-*.avro"))


def manifest(table: str) -> str:
    return one(os.path.join(table, "metadata", "*-m*.avro"))


def data_file(table: str) -> str:
    return one(os.path.join(table, "data", "*.parquet"))


def rewrite(path: str, change: Callable[[bytes], bytes]) -> None:
    with open(path, "rb") as f:
        data = f.read()
    with open(path, "wb") as f:
        f.write(change(data))


def flip(offset: int) -> Callable[[bytes], bytes]:
    def change(data: bytes) -> bytes:
        out = bytearray(data)
        out[offset % len(out)] ^= 0x10
        return bytes(out)

    return change


STATEMENTS = {
    "select": "SELECT * FROM ns.t ORDER BY id",
    "aggregate": "SELECT count(*), max(s) FROM ns.t",
    "insert": "INSERT INTO ns.t VALUES (4, 'd')",
    "delete": "DELETE FROM ns.t WHERE id = 1",
    "update": "UPDATE ns.t SET s = 'z' WHERE id = 2",
}


def run(location: str, sql: str) -> list[tuple] | None:
    with tl.connect(location, autocommit=True) as conn:
        cur = conn.cursor()
        cur.execute(sql)
        return cur.fetchall() if cur.description else None


def expect_named(location: str, sql: str, kind: type[errors.Error], path: str) -> errors.Error:
    """``sql`` raises ``kind`` whose message and ``path`` name the file at ``path``."""
    with pytest.raises(errors.Error) as info:
        run(location, sql)
    error = info.value
    assert not isinstance(error, errors.InternalError), error
    assert isinstance(error, kind), f"{type(error).__name__}: {error}"
    name = os.path.basename(path)
    assert name in str(error) and name in error.path  # type: ignore[attr-defined]
    return error


# -- metadata JSON ----------------------------------------------------------------------

METADATA_DAMAGE = {
    "garbage": lambda data: b"{not json",
    "not-iceberg": lambda data: b'{"a": 1}',
    "truncated": lambda data: data[: len(data) // 2],
    "empty": lambda data: b"",
    "not-utf8": lambda data: b"\xff\xfe" + data[2:],
    "flipped": flip(0),
}


@pytest.mark.parametrize("damage", sorted(METADATA_DAMAGE))
def test_a_damaged_metadata_file_is_a_corrupt_file_error_naming_it(lake: str, damage: str) -> None:
    location = lake
    path = metadata_file(table_of(location))
    rewrite(path, METADATA_DAMAGE[damage])
    for sql in STATEMENTS.values():
        error = expect_named(location, sql, errors.CorruptFileError, path)
        assert "ValidationError" not in str(error) and "TableMetadataWrapper" not in str(error)
    assert run(location, "SHOW TABLES IN ns") == [("ns", "t")]  # the catalog still reads


# -- manifest lists and manifests (Avro) --------------------------------------------------


@pytest.mark.parametrize("which", ["manifest list", "manifest"])
def test_a_deleted_avro_file_is_a_missing_file_error_naming_it(lake: str, which: str) -> None:
    location = lake
    table = table_of(location)
    path = manifest_list(table) if which == "manifest list" else manifest(table)
    os.remove(path)
    statements = dict(STATEMENTS)
    if which == "manifest":
        del statements["insert"]  # a fast append copies the list's entries, never opens a manifest
    for sql in statements.values():
        expect_named(location, sql, errors.MissingFileError, path)


def _more_records(data: bytes) -> bytes:
    """The first block claims one record more than it holds: the framing is whole, the
    records do not decode (PyIceberg: EOFError)."""
    sync = data[-16:]
    start = data.index(sync) + len(sync)  # the first block, right after the header
    assert data[start] < 0x7F, "a one-byte record count"
    return data[:start] + bytes([data[start] + 2]) + data[start + 1 :]  # zig-zag: +1 record


AVRO_DAMAGE = {
    "record-count": _more_records,
    "truncated-half": lambda data: data[: len(data) // 2],
    "truncated-end": lambda data: data[:-1],
    "no-magic": lambda data: b"XXXX" + data[4:],
    "garbage": lambda data: os.urandom(len(data)),
    "empty": lambda data: b"",
    "schema-not-utf8": lambda data: data.replace(b'"type"', b'"t\xffpe"', 1),
    "sync-flipped": flip(-3),
    "appended": lambda data: data + b"\x00",
}


@pytest.mark.parametrize("which", ["manifest list", "manifest"])
@pytest.mark.parametrize("damage", sorted(AVRO_DAMAGE))
def test_a_damaged_avro_file_is_a_corrupt_file_error_naming_it(lake: str, which: str, damage: str) -> None:
    """A truncated manifest must not read as a shorter one (PyIceberg's reader stops at
    an early end of file): the damage is named, the rows are never silently fewer."""
    location = lake
    table = table_of(location)
    path = manifest_list(table) if which == "manifest list" else manifest(table)
    rewrite(path, AVRO_DAMAGE[damage])
    statements = dict(STATEMENTS)
    if which == "manifest":
        del statements["insert"]
    for sql in statements.values():
        expect_named(location, sql, errors.CorruptFileError, path)


@pytest.mark.slow
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(which=st.sampled_from(["manifest list", "manifest"]), fraction=st.floats(0.0, 1.0, exclude_max=True), bit=st.integers(0, 7))
def test_a_flipped_bit_anywhere_in_an_avro_file_never_gives_internal_error(
    pristine: tuple[str, str], which: str, fraction: float, bit: int
) -> None:
    """Wherever a bit flips in a manifest list or manifest, a statement either reads the
    right rows or fails with a CorruptFileError (or MissingFileError, when the flip
    lands in a path the file records): never InternalError (iceberg.files IF2, IF4).
    A flip in a recorded path names the path it became, which is all a reader knows."""
    location = restore(pristine)
    table = table_of(location)
    path = manifest_list(table) if which == "manifest list" else manifest(table)
    with open(path, "rb") as f:
        data = bytearray(f.read())
    data[int(fraction * len(data))] ^= 1 << bit
    with open(path, "wb") as f:
        f.write(data)
    for sql in (STATEMENTS["select"], STATEMENTS["insert"]):
        try:
            found = run(location, sql)
        except errors.Error as e:
            assert isinstance(e, (errors.CorruptFileError, errors.MissingFileError)), f"{type(e).__name__}: {e}"
        else:
            if found is not None:
                assert found == ROWS


def test_a_table_whose_avro_files_are_whole_reads_as_before(lake: str) -> None:
    location = lake
    for n in range(4, 8):
        run(location, f"INSERT INTO ns.t VALUES ({n}, 'x')")
    run(location, "DELETE FROM ns.t WHERE id > 3")
    assert run(location, STATEMENTS["select"]) == ROWS


# -- Parquet data files ------------------------------------------------------------------


def _footer_offset(data: bytes) -> int:
    """The first byte of the Parquet footer (thrift FileMetaData's first field header)."""
    length = int.from_bytes(data[-8:-4], "little")
    return len(data) - 8 - length


PARQUET_DAMAGE = {
    "truncated": lambda data: data[: len(data) // 2],
    "no-end-magic": lambda data: data[:-4] + b"XXXX",
    "footer-length": flip(-6),
    "footer-flipped": lambda data: flip(_footer_offset(data))(data),
    "first-page-header-flipped": flip(8),
    "garbage": lambda data: b"\x00" * len(data),
    # the value 'a' (stored plain: four bytes of length, then the bytes) as a byte
    # that is not UTF-8: DuckDB's client failed with RuntimeError, unnamed
    "string-not-utf8": lambda data: data.replace(b"\x01\x00\x00\x00a\x01", b"\x01\x00\x00\x00\xe1\x01", 1),
    "empty": lambda data: b"",
}


@pytest.mark.parametrize("damage", sorted(PARQUET_DAMAGE))
def test_a_damaged_data_file_is_a_corrupt_file_error_naming_it(lake: str, damage: str) -> None:
    location = lake
    path = data_file(table_of(location))
    rewrite(path, PARQUET_DAMAGE[damage])
    statements = {k: v for k, v in STATEMENTS.items() if k != "insert"}  # an append reads no data
    raised = 0
    for sql in statements.values():
        try:
            run(location, sql)
        except errors.Error:
            expect_named(location, sql, errors.CorruptFileError, path)
            raised += 1
    assert raised >= 1, "no statement noticed the damage"
    run(location, STATEMENTS["insert"])


def test_a_deleted_data_file_is_a_missing_file_error_naming_it(lake: str) -> None:
    location = lake
    path = data_file(table_of(location))
    os.remove(path)
    for key in ("select", "aggregate", "delete", "update"):
        expect_named(location, STATEMENTS[key], errors.MissingFileError, path)


@pytest.fixture(scope="module")
def flip_target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str, bytes]]:
    location = str(tmp_path_factory.mktemp("flips") / "lake")
    path = data_file(build(location))
    with open(path, "rb") as f:
        original = f.read()
    yield location, path, original


@pytest.mark.slow
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(fraction=st.floats(min_value=0.0, max_value=1.0, exclude_max=True), bit=st.integers(0, 7))
@example(fraction=0.2578125, bit=7)  # a string that is not UTF-8: DuckDB's client raised RuntimeError, unnamed
def test_a_flipped_bit_anywhere_in_a_data_file_never_gives_an_unnamed_error(
    flip_target: tuple[str, str, bytes], fraction: float, bit: int
) -> None:
    """Wherever a bit flips, a statement either reads (Parquet data pages carry no
    checksum here, so a flipped value can read as another value) or fails with an
    error naming the file: never InternalError, never DuckDB's bare "invalid TType"."""
    location, path, original = flip_target
    damaged = bytearray(original)
    damaged[int(fraction * len(original))] ^= 1 << bit
    try:
        with open(path, "wb") as f:
            f.write(damaged)
        try:
            run(location, "SELECT * FROM ns.t")
        except errors.Error as e:
            assert not isinstance(e, errors.InternalError), e
            assert isinstance(e, errors.CorruptFileError) and os.path.basename(path) in str(e), f"{type(e).__name__}: {e}"
    finally:
        with open(path, "wb") as f:
            f.write(original)


# -- a read-only lakehouse -----------------------------------------------------------------


@pytest.fixture
def read_only_lake(lake: str) -> Iterator[str]:
    """A lakehouse made immutable with ``chattr +i`` (root ignores permission bits, not
    the immutable attribute): no file in it can be created, changed or removed."""
    location = lake
    if shutil.which("chattr") is None:
        pytest.skip("chattr is not installed")
    made = subprocess.run(["chattr", "-R", "+i", location], capture_output=True, text=True)
    if made.returncode != 0:
        subprocess.run(["chattr", "-R", "-i", location], capture_output=True)
        pytest.skip(f"this file system has no immutable attribute: {made.stderr.strip()}")
    try:
        yield location
    finally:
        subprocess.run(["chattr", "-R", "-i", location], check=True)


WRITES = [
    "INSERT INTO ns.t VALUES (4, 'd')",
    "DELETE FROM ns.t WHERE id = 1",
    "UPDATE ns.t SET s = 'z'",
    "CREATE TABLE ns.u (a INT)",
    "CREATE TABLE ns.v AS SELECT 1 AS a",
    "CREATE NAMESPACE other",
    "DROP TABLE ns.t",
]


@pytest.mark.parametrize("autocommit", [True, False], ids=["autocommit", "commit"])
def test_a_write_to_a_read_only_lakehouse_is_an_operational_error_naming_the_path(
    read_only_lake: str, autocommit: bool
) -> None:
    location = read_only_lake
    for sql in WRITES:
        conn = tl.connect(location, autocommit=autocommit)
        try:
            with pytest.raises(errors.Error) as info:
                conn.cursor().execute(sql)
                conn.commit()
            error = info.value
            assert not isinstance(error, errors.InternalError), f"{sql}: {error}"
            assert isinstance(error, errors.OperationalError), f"{sql}: {type(error).__name__}: {error}"
            assert location in str(error) or "tables/" in str(error) or ".arrow" in str(error), f"{sql}: {error}"
        finally:
            conn.rollback()  # a failed commit leaves the transaction open, for a retry or this
            conn.close()
    assert run(location, STATEMENTS["select"]) == ROWS  # reads still work, and nothing changed
