"""Writes never follow a symbolic link inside the lakehouse (issue 15, item 8; storage
rule LF1). Real links on the local disk, pointing outside the root."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

import trinitylake_dbapi
from trinitylake_dbapi.errors import StorageError


def snapshot_of(directory: Path) -> dict[str, bytes]:
    return {str(p.relative_to(directory)): p.read_bytes() for p in directory.rglob("*") if p.is_file()}


def test_a_linked_hint_file_is_never_written_through(tmp_path: Path) -> None:
    lake, outside = tmp_path / "lake", tmp_path / "precious.txt"
    outside.write_text("do not touch")
    conn = trinitylake_dbapi.connect(str(lake), create=True, autocommit=True)
    (lake / "_latest_hint.txt").unlink()
    (lake / "_latest_hint.txt").symlink_to(outside)
    cur = conn.cursor()
    for name in ("a", "b", "c"):  # each commit would rewrite the hint
        cur.execute(f"CREATE NAMESPACE {name}")
    assert outside.read_text() == "do not touch"
    assert (lake / "_latest_hint.txt").is_symlink()  # the hint is only a hint
    with trinitylake_dbapi.connect(str(lake)) as fresh:
        assert [r[0] for r in fresh.cursor().execute("SHOW NAMESPACES").fetchall()] == ["a", "b", "c", "default"]


def test_linked_hash_directories_make_a_commit_fail_naming_the_link(tmp_path: Path) -> None:
    lake, outside = tmp_path / "lake", tmp_path / "elsewhere"
    outside.mkdir()
    conn = trinitylake_dbapi.connect(str(lake), create=True, autocommit=True)
    conn.cursor().execute("CREATE NAMESPACE before")
    for bits in (f"{i:04b}" for i in range(16)):  # every first-level hash directory
        target = outside / bits
        if (lake / bits).exists():
            shutil.move(str(lake / bits), str(target))
        else:
            target.mkdir()
        (lake / bits).symlink_to(target, target_is_directory=True)
    before_outside = snapshot_of(outside)
    versions = conn.cursor().execute("SHOW VERSIONS").fetchall()  # reads follow links
    with pytest.raises(StorageError, match=r"is a symbolic link inside the lakehouse") as info:
        conn.cursor().execute("CREATE NAMESPACE after")
    assert str(lake) in str(info.value) and "rule LF1" in str(info.value)
    assert snapshot_of(outside) == before_outside  # nothing landed outside the root
    assert conn.cursor().execute("SHOW VERSIONS").fetchall() == versions
    assert not any(p.name.startswith(".tl-") for p in lake.rglob("*"))


def test_a_linked_file_name_is_refused_for_in_place_writes(tmp_path: Path) -> None:
    from trinitylake_dbapi.storage import Storage

    outside = tmp_path / "precious.txt"
    outside.write_text("do not touch")
    (tmp_path / "root").mkdir()
    (tmp_path / "root" / "file.txt").symlink_to(outside)
    storage = Storage(str(tmp_path / "root"))
    with pytest.raises(StorageError, match="file.txt': it is a symbolic link"):
        storage.write("file.txt", b"x", durable=False)
    assert outside.read_text() == "do not touch"
    storage.write("file.txt", b"x", new=True)  # replaces the link itself, never its target
    assert outside.read_text() == "do not touch"
    assert not (tmp_path / "root" / "file.txt").is_symlink()


def test_a_directory_written_before_then_linked_is_refused(tmp_path: Path) -> None:
    """LF1 holds for directories a Storage has written into before: one replaced by a
    link since is refused at the next write, by every kind of write (a directory found
    clean once used to be trusted for the Storage's life, so a commit could write
    through a hash directory linked after the connection's earlier commits)."""
    from trinitylake_dbapi.storage import Storage

    root, outside = tmp_path / "root", tmp_path / "elsewhere"
    root.mkdir()
    outside.mkdir()
    storage = Storage(str(root))
    writes = {
        "write": lambda path: storage.write(path, b"x"),
        "new": lambda path: storage.write(path, b"x", new=True),
        "exclusive": lambda path: storage.create_exclusive(path, b"x"),
    }
    for kind, write in writes.items():
        write(f"{kind}/0101/first")  # makes the directories
        write(f"{kind}/0101/again")  # finds them there, not links
        shutil.move(str(root / kind / "0101"), str(outside / kind))
        (root / kind / "0101").symlink_to(outside / kind, target_is_directory=True)
        for below in ("second", "1100/second"):  # in it, and in a directory still to make in it
            with pytest.raises(StorageError, match=rf"{kind}/0101' is a symbolic link inside the lakehouse"):
                write(f"{kind}/0101/{below}")
        assert sorted(p.name for p in (outside / kind).iterdir()) == ["again", "first"], kind
