"""Storage on real filesystems: local disk, memory:// and S3 (moto on 127.0.0.1)."""

from __future__ import annotations

import dataclasses
import errno
import os
from typing import Any

import fsspec
import pytest
from fsspec.spec import AbstractFileSystem

from trinitylake_dbapi.errors import (
    InvalidLocationError,
    MissingFileError,
    NotSupportedError,
    StorageError,
)
from trinitylake_dbapi.storage import Storage, StorageCounters

# --- round trips, parametrized over local / memory / s3 (fixture from conftest) ------


def test_write_read_exists_overwrite(storage: Storage) -> None:
    assert not storage.exists("a/b/c.bin")
    storage.write("a/b/c.bin", b"\x00one\xff")
    assert storage.exists("a/b/c.bin")
    assert storage.read("a/b/c.bin") == b"\x00one\xff"
    storage.write("a/b/c.bin", b"two")  # plain overwrite
    assert storage.read("a/b/c.bin") == b"two"
    storage.write("empty", b"")
    assert storage.read("empty") == b""
    assert storage.exists("empty")
    storage.write("buf", bytearray(b"ba") + memoryview(b"mv").tobytes())
    assert storage.read("buf") == b"bamv"


def test_exists_is_false_for_a_directory_like_prefix(storage: Storage) -> None:
    storage.write("dir/file", b"x")
    assert not storage.exists("dir")
    assert not storage.exists("dir/file/deeper")


def test_list_is_recursive_sorted_relative_and_directory_like(storage: Storage) -> None:
    for p in ["b/2", "a/x", "ab", "a/sub/y", "a/sub/deeper/z", "_root.arrow"]:
        storage.write(p, p.encode())
    assert storage.list() == sorted(["b/2", "a/x", "ab", "a/sub/y", "a/sub/deeper/z",
                                     "_root.arrow"])
    assert storage.list("a") == ["a/sub/deeper/z", "a/sub/y", "a/x"]  # never "ab"
    assert storage.list("a/") == storage.list("a")
    assert storage.list("a/sub") == ["a/sub/deeper/z", "a/sub/y"]
    assert storage.list("ab") == []  # a file is not a directory
    assert storage.list("nothing/here") == []


def test_list_of_an_empty_or_absent_root(lake: Any) -> None:
    s = lake.open()
    assert s.list() == []
    assert s.list("x") == []


def test_list_not_recursive_lists_only_the_files_directly_under_the_prefix(storage: Storage) -> None:
    for p in ["b/2", "a/x", "ab", "a/sub/y", "a/sub/deeper/z", "_root.arrow",
              ".tl-tmp-1", "a/.tl-tmp-2"]:
        storage.write(p, p.encode())
    assert storage.list(recursive=False) == ["_root.arrow", "ab"]  # no dirs, no .tl-*
    assert storage.list("", recursive=False) == storage.list(recursive=False)
    assert storage.list("a", recursive=False) == ["a/x"]
    assert storage.list("a/", recursive=False) == ["a/x"]
    assert storage.list("a/sub", recursive=False) == ["a/sub/y"]
    assert storage.list("a/sub/deeper", recursive=False) == ["a/sub/deeper/z"]
    assert storage.list("ab", recursive=False) == []  # a file is not a directory
    assert storage.list("nothing/here", recursive=False) == []
    assert ".tl-tmp-1" not in storage.list()  # the recursive listing filters them too
    # ... unless asked (expiration deletes the ones a killed writer left)
    assert storage.list(recursive=False, include_reserved=True) == [".tl-tmp-1", "_root.arrow", "ab"]
    assert {".tl-tmp-1", "a/.tl-tmp-2"} <= set(storage.list(include_reserved=True))


def test_list_not_recursive_of_an_empty_or_absent_root(lake: Any) -> None:
    s = lake.open()
    assert s.list(recursive=False) == []
    assert s.list("x", recursive=False) == []


def test_delete_and_delete_many(storage: Storage) -> None:
    for p in ["k/1", "k/2", "k/3", "keep"]:
        storage.write(p, b"v")
    storage.delete("k/1")
    assert not storage.exists("k/1")
    storage.delete("k/1")  # missing: not an error
    storage.delete("never/was")
    storage.delete_many(["k/2", "k/3", "k/2", "missing/too"])
    assert storage.list() == ["keep"]
    storage.delete_many([])
    assert storage.list() == ["keep"]
    with pytest.raises(TypeError):
        storage.delete_many("keep")  # a str is not a list of paths


def test_delete_many_in_several_batches(
    storage: Storage, monkeypatch: pytest.MonkeyPatch
) -> None:
    import trinitylake_dbapi.storage.objectstore as storage_module

    monkeypatch.setattr(storage_module, "_S3_DELETE_BATCH", 7)  # S3's real limit: 1000
    paths = [f"many/{i:02d}" for i in range(30)]
    for p in paths:
        storage.write(p, b"")
    storage.write("other", b"")
    before = storage.counters.snapshot()
    storage.delete_many(paths)
    assert (storage.counters - before).deletes == 1
    assert storage.list() == ["other"]


def test_create_exclusive_true_then_false(storage: Storage) -> None:
    assert storage.create_exclusive("_0001.arrow", b"first") is True
    assert storage.create_exclusive("_0001.arrow", b"second") is False
    assert storage.read("_0001.arrow") == b"first"
    assert storage.create_exclusive("deep/new/dir/_x", b"d") is True  # parents made
    assert storage.read("deep/new/dir/_x") == b"d"
    # No temp or probe file is visible, and none is left on disk.
    assert storage.list() == ["_0001.arrow", "deep/new/dir/_x"]


def test_create_exclusive_over_a_plain_written_file(storage: Storage) -> None:
    storage.write("taken", b"plain")
    assert storage.create_exclusive("taken", b"x") is False
    assert storage.read("taken") == b"plain"


def test_missing_file_error_names_the_path(storage: Storage) -> None:
    for read in (storage.read, storage.read_immutable):
        with pytest.raises(MissingFileError) as info:
            read("no/such/file.arrow")
        assert info.value.path == "no/such/file.arrow"
        assert "no/such/file.arrow" in str(info.value)
        assert isinstance(info.value, StorageError)


def test_read_below_a_file_is_missing(storage: Storage) -> None:
    storage.write("f", b"x")
    with pytest.raises(MissingFileError):
        storage.read("f/g")


def test_glob_characters_are_literal(storage: Storage) -> None:
    name = "a[1]*?.arrow"
    decoys = ["a1x.arrow", "a1.arrow", "ab?.arrow"]  # what a glob of `name` would match
    for d in decoys:
        storage.write(d, b"decoy")
    storage.write(name, b"literal")
    assert storage.exists(name)
    assert storage.read(name) == b"literal"
    assert storage.read_immutable(name) == b"literal"
    assert storage.create_exclusive(name, b"again") is False
    assert storage.create_exclusive("dir[x]/*/?.arrow", b"deep") is True
    assert storage.list("dir[x]") == ["dir[x]/*/?.arrow"]
    assert storage.list() == sorted(decoys + [name, "dir[x]/*/?.arrow"])
    storage.delete(name)
    storage.delete_many(["dir[x]/*/?.arrow", "*", "a?.arrow"])
    assert storage.list() == sorted(decoys)


def test_unusual_but_valid_names(storage: Storage) -> None:
    names = ["with space", "uni-\u00e9\u4e2d", "a::b", "x#y", "q?v=1", "%41", ".hidden", "a.", "..a"]
    for n in names:
        storage.write(n, n.encode())
    for n in names:
        assert storage.read(n) == n.encode()
    assert storage.list() == sorted(names)


# --- path checks -------------------------------------------------------------------

BAD_PATHS = ["", "/abs", "..", "../x", "a/../b", "a//b", "./a", "a/./b", "a/", "a\x00b"]


def _calls(storage: Storage, path: str) -> list[Any]:
    return [
        lambda: storage.read(path),
        lambda: storage.read_immutable(path),
        lambda: storage.write(path, b"x"),
        lambda: storage.create_exclusive(path, b"x"),
        lambda: storage.exists(path),
        lambda: storage.delete(path),
        lambda: storage.delete_many(["ok", path]),
        lambda: storage.uri(path),
    ]


@pytest.mark.parametrize("path", BAD_PATHS)
def test_bad_relative_paths_are_refused_before_any_io(storage: Storage, path: str) -> None:
    storage.write("ok", b"still here")
    before = storage.counters.snapshot()
    for call in _calls(storage, path):
        with pytest.raises(InvalidLocationError) as info:
            call()
        assert repr(path) in str(info.value) or path == ""
    assert storage.counters == before  # nothing was attempted
    assert storage.read("ok") == b"still here"  # delete_many checked all paths first


@pytest.mark.parametrize("prefix", ["/a", "..", "a//b", "./a", "a/../b", "//"])
def test_bad_list_prefixes_are_refused(storage: Storage, prefix: str) -> None:
    before = storage.counters.snapshot()
    with pytest.raises(InvalidLocationError):
        storage.list(prefix)
    with pytest.raises(InvalidLocationError):
        storage.list(prefix, recursive=False)
    assert storage.counters == before  # nothing was attempted


def test_non_string_path_is_refused(storage: Storage) -> None:
    with pytest.raises(InvalidLocationError):
        storage.read(None)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        storage.write("x", "text")  # type: ignore[arg-type]


def test_uri(storage: Storage) -> None:
    assert storage.root_uri.endswith("/lake/")
    assert storage.uri("a/b.arrow") == storage.root_uri + "a/b.arrow"


# --- root URIs ---------------------------------------------------------------------


@pytest.mark.parametrize("root", ["s3://b/x/../y", "file:///a/./b", "/a//b"])
def test_unqualified_root_uris_are_refused(root: str) -> None:
    with pytest.raises(InvalidLocationError) as info:
        Storage(root)
    assert repr(root) in str(info.value)
    assert "qualified" in str(info.value)


@pytest.mark.parametrize(
    "root",
    ["s3://b/x/./y", "s3://b//x", "memory://m/../n", "x/../y", "lake//x",
     "file:///a/b/..", "", "file://relative/x", "s3://", "s3:///x"],
)
def test_more_unqualified_root_uris_are_refused(root: str) -> None:
    with pytest.raises(InvalidLocationError):
        Storage(root)


def test_local_root_uris_are_qualified(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    base = os.getcwd()
    assert Storage("lake").root_uri == f"file://{base}/lake/"
    assert Storage("lake/").root_uri == f"file://{base}/lake/"
    assert Storage("a/b").root_uri == f"file://{base}/a/b/"
    assert Storage(f"{base}/lake").root_uri == f"file://{base}/lake/"
    assert Storage(f"file://{base}/lake").root_uri == f"file://{base}/lake/"
    assert Storage(f"file://{base}/lake/").protocol == "file"
    assert Storage("/").root_uri == "file:///"


def test_other_root_uris_are_accepted() -> None:
    s = Storage("memory://lake")
    assert (s.root_uri, s.protocol) == ("memory://lake/", "memory")
    s3 = Storage("s3://bucket/some/lake", {"anon": True, "skip_instance_cache": True})
    assert (s3.root_uri, s3.protocol) == ("s3://bucket/some/lake/", "s3")
    assert Storage("s3://bucket", {"anon": True}).root_uri == "s3://bucket/"


def test_local_root_need_not_exist(tmp_path: Any) -> None:
    s = Storage(str(tmp_path / "not" / "yet"))
    assert s.list() == []
    assert not s.exists("x")
    s.write("x", b"1")
    assert (tmp_path / "not" / "yet" / "x").read_bytes() == b"1"
    s2 = Storage(str(tmp_path / "other"))
    assert s2.create_exclusive("_r", b"1") is True


def test_unknown_protocol_is_not_supported() -> None:
    with pytest.raises(NotSupportedError) as info:
        Storage("nosuchproto://x/y")
    assert "nosuchproto" in str(info.value)


class _PlainFS(AbstractFileSystem):
    """A filesystem without its own pipe_file(mode="create")."""

    protocol = "plainfs"

    def __init__(self) -> None:
        super().__init__()
        self.files: dict[str, bytes] = {}

    def cat_file(self, path: str, start: Any = None, end: Any = None, **kw: Any) -> bytes:
        return self.files[self._strip_protocol(path)]

    def _open(self, path: str, mode: str = "rb", **kw: Any) -> Any:  # pragma: no cover
        raise NotImplementedError


def test_exclusive_create_needs_an_atomic_backend() -> None:
    s = Storage("plainfs://bucket/lake", filesystem=_PlainFS())
    with pytest.raises(NotSupportedError) as info:
        s.create_exclusive("_r", b"x")
    assert "plainfs" in str(info.value)


def test_filesystem_protocol_must_match_root() -> None:
    with pytest.raises(InvalidLocationError):
        Storage("s3://bucket/lake", filesystem=fsspec.filesystem("memory"))


# --- counters ----------------------------------------------------------------------


def test_every_call_counts_exactly_one(storage: Storage) -> None:
    c = storage.counters

    def delta(call: Any) -> dict[str, int]:
        before = c.snapshot()
        try:
            call()
        except MissingFileError:
            pass
        d = dataclasses.asdict(c - before)
        return {k: v for k, v in d.items() if v}

    assert delta(lambda: storage.write("a", b"12345")) == {"writes": 1, "bytes_written": 5}
    assert delta(lambda: storage.read("a")) == {"reads": 1, "bytes_read": 5}
    assert delta(lambda: storage.read("missing")) == {"reads": 1}
    assert delta(lambda: storage.exists("a")) == {"exists": 1}
    assert delta(lambda: storage.create_exclusive("r", b"xyz")) == {
        "exclusive_creates": 1, "bytes_written": 3}
    assert delta(lambda: storage.create_exclusive("r", b"xyz!")) == {
        "exclusive_creates": 1, "bytes_written": 4}
    assert delta(lambda: storage.list()) == {"lists": 1}
    assert delta(lambda: storage.list("d", recursive=False)) == {"lists": 1}
    assert delta(lambda: storage.delete("a")) == {"deletes": 1}
    assert delta(lambda: storage.delete_many(["r", "x", "y"])) == {"deletes": 1}
    assert delta(lambda: storage.uri("a")) == {}


def test_counters_snapshot_and_subtract() -> None:
    a = StorageCounters(reads=3, bytes_read=10)
    b = a.snapshot()
    a.reads += 2
    assert b.reads == 3
    assert (a - b) == StorageCounters(reads=2)


# --- the immutable-file cache --------------------------------------------------------


def test_second_read_immutable_is_a_cache_hit(storage: Storage) -> None:
    storage.write("node.arrow", b"n" * 100)
    before = storage.counters.snapshot()
    assert storage.read_immutable("node.arrow") == b"n" * 100
    assert storage.read_immutable("node.arrow") == b"n" * 100
    d = storage.counters - before
    assert (d.reads, d.cache_hits, d.bytes_read) == (1, 1, 100)
    assert storage.read("node.arrow") == b"n" * 100  # plain read never uses the cache
    assert (storage.counters - before).reads == 2


def test_cache_is_bounded_by_bytes(lake: Any) -> None:
    s = lake.open(cache_bytes=150)
    for name in "abc":
        s.write(name, name.encode() * 60)
    s.write("big", b"B" * 151)
    s.read_immutable("a")
    s.read_immutable("b")  # 120 bytes cached
    s.read_immutable("a")  # hit; "a" becomes most recent
    s.read_immutable("c")  # 180 > 150: evicts "b", the least recently used
    before = s.counters.snapshot()
    s.read_immutable("a")
    s.read_immutable("c")
    assert (s.counters - before).cache_hits == 2
    s.read_immutable("b")
    assert (s.counters - before).reads == 1
    s.read_immutable("big")
    s.read_immutable("big")  # larger than the whole cache: never cached
    assert (s.counters - before).reads == 3


def test_zero_cache_disables_caching(lake: Any) -> None:
    s = lake.open(cache_bytes=0)
    s.write("n", b"x")
    s.read_immutable("n")
    s.read_immutable("n")
    assert (s.counters.reads, s.counters.cache_hits) == (2, 0)


# --- error translation (no raw OSError or botocore error leaves Storage) --------------


def test_local_errors_are_translated(tmp_path: Any) -> None:
    s = Storage(str(tmp_path / "lake"))
    s.write("file", b"x")
    s.write("dir/inner", b"y")
    with pytest.raises(StorageError) as info:
        s.read("dir")  # a directory
    assert "dir" in str(info.value) and "read" in str(info.value)
    assert not isinstance(info.value, MissingFileError)
    with pytest.raises(StorageError) as info:
        s.write("file/below", b"z")  # parent is a file
    assert "file/below" in str(info.value)
    with pytest.raises(StorageError):
        s.create_exclusive("file/below", b"z")
    with pytest.raises(StorageError):
        s.delete("dir")  # a directory is not a file
    os.chmod(tmp_path / "lake" / "dir", 0o500)
    try:
        if os.access(tmp_path / "lake" / "dir", os.W_OK):
            pytest.skip("running as a user that ignores permissions")
        with pytest.raises(StorageError) as info:
            s.write("dir/new", b"z")
        assert "dir/new" in str(info.value) and "write" in str(info.value)
    finally:
        os.chmod(tmp_path / "lake" / "dir", 0o700)


def test_local_temp_files_are_not_left_behind(tmp_path: Any) -> None:
    s = Storage(str(tmp_path))
    s.create_exclusive("r", b"1")
    s.create_exclusive("r", b"2")
    s.write("w", b"3")
    s.write("w", b"4")
    assert sorted(os.listdir(tmp_path)) == ["r", "w"]


@pytest.mark.s3
def test_s3_missing_bucket_and_server_errors_are_translated(
    s3_storage_options: dict[str, Any]
) -> None:
    s = Storage("s3://no-such-bucket-tl/lake", s3_storage_options)
    with pytest.raises(MissingFileError):
        s.read("x")
    for call in (lambda: s.write("x", b"1"), lambda: s.create_exclusive("x", b"1")):
        with pytest.raises(StorageError) as info:
            call()
        assert "s3://no-such-bucket-tl/lake/" in str(info.value)
    dead = dict(s3_storage_options)
    dead["client_kwargs"] = {**dead["client_kwargs"], "endpoint_url": "http://127.0.0.1:9"}
    dead["config_kwargs"] = {"retries": {"max_attempts": 1}, "connect_timeout": 1}
    d = Storage("s3://bucket/lake", dead)
    d.fs.retries = 1
    for call in (lambda: d.read("x"), lambda: d.exists("x"), lambda: d.list(),
                 lambda: d.write("x", b"1"), lambda: d.delete_many(["x"])):
        with pytest.raises(StorageError) as info:
            call()
        assert "s3://bucket/lake/" in str(info.value)


def test_a_dot_slash_local_root_resolves_like_the_bare_name(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.chdir(tmp_path)
    assert Storage("./lake").root_uri == Storage("lake").root_uri == f"file://{tmp_path}/lake/"


def test_write_many_makes_new_names_durable_before_returning(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A commit's files must survive a crash once their root does: every written file's
    directory, and the parent of every directory created for them, is fsynced."""
    import trinitylake_dbapi.storage.local as storage_module

    synced: list[str] = []
    real = storage_module._fsync_dir
    monkeypatch.setattr(storage_module, "_fsync_dir", lambda d: (synced.append(d), real(d)))
    storage = Storage(str(tmp_path / "lake"))
    storage.write("top.binpb", b"x")  # the lake directory itself exists now
    synced.clear()
    files = {"0001/0010/0011/00000001-a.arrow": b"a", "0001/0010/0100/00000010-b.arrow": b"b"}
    storage.write_many(files, new=True)
    base = str(tmp_path / "lake")
    expected = {
        f"{base}/0001/0010/0011", f"{base}/0001/0010/0100",  # the files' directories
        f"{base}/0001/0010", f"{base}/0001", base,  # parents of the directories created
    }
    assert set(synced) == expected
    synced.clear()
    storage.write_many({"0001/0010/0011/00000011-c.arrow": b"c"}, new=True)
    assert synced == [f"{base}/0001/0010/0011"]  # nothing new created: only the file's directory


# --- local publishing and commit-file writes ------------------------------------------


def _entries(directory: Any) -> list[str]:
    return sorted(os.listdir(directory))


@pytest.mark.parametrize("anonymous", [True, False], ids=["o_tmpfile", "temp-name"])
def test_local_exclusive_create_publishes_whole_files_and_leaves_nothing_else(
    tmp_path: Any, anonymous: bool
) -> None:
    """Winning, losing, and a prepared file whose caller gives up between the two halves
    (discarded, or an error leaving the ``with`` block): the directory only ever holds
    the published file, with exactly the winner's bytes (either way of publishing)."""
    storage = Storage(str(tmp_path / "lake"))
    storage.write("keep.bin", b"k")
    storage.backend.anonymous_files = anonymous and storage.backend.anonymous_files
    data = os.urandom(100_000)
    with storage.prepare_exclusive("_root.arrow", data) as prepared:
        assert storage.publish(prepared)
    assert not storage.create_exclusive("_root.arrow", b"other")
    assert storage.read("_root.arrow") == data

    with pytest.raises(StorageError, match="C1 failed"):
        with storage.prepare_exclusive("_next.arrow", b"never"):
            raise StorageError("C1 failed")
    storage.prepare_exclusive("_next.arrow", b"never").discard()
    assert not storage.exists("_next.arrow")
    assert _entries(tmp_path / "lake") == ["_root.arrow", "keep.bin"]
    with pytest.raises(ValueError, match="already published or discarded"):
        storage.publish(prepared)


def test_local_files_get_the_same_permissions_whichever_way_they_are_written(tmp_path: Any) -> None:
    """Roots (published from an unnamed file), new files and overwritten files all get
    0666 less the umask, like any file the process creates."""
    previous = os.umask(0o002)  # a group-writable umask tells 0666 and 0644 apart
    try:
        storage = Storage(str(tmp_path / "lake"))
        storage.write("plain.bin", b"p")
        storage.write_many({"0000/0000/0000/00000000-new.arrow": b"n"}, new=True)
        assert storage.create_exclusive("_root.arrow", b"r")
    finally:
        os.umask(previous)
    for name in ("plain.bin", "0000/0000/0000/00000000-new.arrow", "_root.arrow"):
        assert os.stat(tmp_path / "lake" / name).st_mode & 0o777 == 0o664, name


def test_local_exclusive_create_in_a_missing_directory(tmp_path: Any) -> None:
    storage = Storage(str(tmp_path / "lake"))
    assert storage.create_exclusive("a/b/_root.arrow", b"x")
    assert storage.read("a/b/_root.arrow") == b"x"
    assert not storage.create_exclusive("a/b/_root.arrow", b"y")
    assert _entries(tmp_path / "lake" / "a" / "b") == ["_root.arrow"]


def test_write_many_new_files_in_several_batches(tmp_path: Any) -> None:
    """More files than are kept open at once, spread over new directories, one of them a
    leftover of an earlier attempt (replaced): all present, each counted once."""
    storage = Storage(str(tmp_path / "lake"))
    files = {f"{i % 7:04b}/{i % 3:04b}/0000/{i:08b}-node-{i}.arrow": os.urandom(i + 1) for i in range(150)}
    leftover = next(iter(files))
    os.makedirs(os.path.dirname(tmp_path / "lake" / leftover), exist_ok=True)
    (tmp_path / "lake" / leftover).write_bytes(b"half")
    before = storage.counters.snapshot()
    storage.write_many(files, new=True)
    assert (storage.counters.snapshot() - before).writes == len(files)
    for path, data in files.items():
        assert storage.read(path) == data
    assert not [p for p in storage.list() if p not in files and p != leftover]


def test_write_many_reports_a_failed_fsync_by_file_and_removes_the_batch(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A new file that cannot be made durable fails the whole write: the error names the
    file, and none of the batch's files stays behind to look committed."""
    storage = Storage(str(tmp_path / "lake"))
    storage.write("0000/0000/0000/x.arrow", b"dir exists")
    real_fsync = os.fsync
    doomed: set[int] = set()
    real_open = os.open

    def tracking_open(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        fd = real_open(path, flags, *args, **kwargs)
        if str(path).endswith("-bad.arrow"):
            doomed.add(fd)
        return fd

    def failing_fsync(fd: int) -> None:
        if fd in doomed:
            raise OSError(5, "Input/output error")
        real_fsync(fd)

    monkeypatch.setattr(os, "open", tracking_open)
    monkeypatch.setattr(os, "fsync", failing_fsync)
    files = {"0000/0000/0000/00000001-good.arrow": b"g", "0000/0000/0000/00000010-bad.arrow": b"b"}
    with pytest.raises(StorageError) as info:
        storage.write_many(files, new=True, background=True)()
    assert "00000010-bad.arrow" in str(info.value)
    assert "Input/output error" in str(info.value)
    assert storage.list() == ["0000/0000/0000/x.arrow"]


@pytest.mark.parametrize("new", [True, False], ids=["new", "overwrite"])
def test_write_many_reports_a_failed_directory_fsync_by_directory(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch, new: bool
) -> None:
    import trinitylake_dbapi.storage.local as storage_module

    def failing(directory: str) -> None:
        raise OSError(5, "Input/output error")

    storage = Storage(str(tmp_path / "lake"))
    monkeypatch.setattr(storage_module, "_fsync_dir", failing)
    with pytest.raises(StorageError) as info:
        storage.write_many({"0001/0010/0011/00000001-a.arrow": b"a", "0001/0010/0011/00000010-b.arrow": b"b"}, new=new)
    message = str(info.value)
    assert "directory fsync of 'file://" in message and "/lake/0001/0010/0011'" in message, message


def test_hint_style_write_overwrites_in_place(tmp_path: Any) -> None:
    """``durable=False`` rewrites the same file (longer, then shorter content)."""
    storage = Storage(str(tmp_path / "lake"))
    storage.write("_latest_hint.txt", b"12345", durable=False)
    inode = os.stat(tmp_path / "lake" / "_latest_hint.txt").st_ino
    storage.write("_latest_hint.txt", b"7", durable=False)
    assert storage.read("_latest_hint.txt") == b"7"
    assert os.stat(tmp_path / "lake" / "_latest_hint.txt").st_ino == inode


def test_local_publish_falls_back_to_a_temp_name_when_the_kernel_refuses_the_link(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An unnamed file that cannot be linked through /proc (found out at the first
    publish, LF3) is published through a temp file instead, and never tried again."""
    storage = Storage(str(tmp_path / "lake"))
    storage.write("keep.bin", b"k")
    if not storage.backend.anonymous_files:
        pytest.skip("no O_TMPFILE here")
    real_link = os.link

    def link(src: Any, dst: Any, **kw: Any) -> None:
        if str(src).startswith("/proc/self/fd/"):
            raise OSError(errno.ENOENT, "no such file")
        real_link(src, dst, **kw)

    monkeypatch.setattr(os, "link", link)
    with storage.prepare_exclusive("_root.arrow", b"r") as prepared:
        assert storage.publish(prepared)
    assert not storage.backend.anonymous_files
    assert storage.read("_root.arrow") == b"r"
    assert not storage.create_exclusive("_root.arrow", b"other")
    assert _entries(tmp_path / "lake") == ["_root.arrow", "keep.bin"]


def test_a_memory_exclusive_create_scans_no_other_file(monkeypatch: pytest.MonkeyPatch) -> None:
    """storage.memory MM1: the check of create_exclusive is a lookup in the store's dict,
    as exists() is; fsspec's info (every key of the process's store scanned for a
    directory of that name, O(all memory lakehouses' files) at each commit) is never
    asked. The answers are the same: True, then False, and the first data is kept."""
    import uuid

    from fsspec.implementations.memory import MemoryFileSystem

    storage = Storage(f"memory://mm1-{uuid.uuid4().hex}/lake")

    def scanned(self: Any, path: str, **kwargs: Any) -> Any:
        raise AssertionError(f"info({path!r}) scans the whole memory store")

    monkeypatch.setattr(MemoryFileSystem, "info", scanned)
    assert storage.create_exclusive("_0001.arrow", b"first") is True
    assert storage.create_exclusive("_0001.arrow", b"second") is False
    monkeypatch.undo()
    assert storage.read("_0001.arrow") == b"first"
    assert storage.list() == ["_0001.arrow"]


def test_duckdb_reads_a_memory_lakehouse_through_keyed_lookups(monkeypatch: pytest.MonkeyPatch) -> None:
    """storage.memory MM2: the filesystem DuckDB gets for a memory:// root shares the
    store and answers ``info`` as fsspec does (a file, a directory, a missing path), but
    that of a file without scanning every key of the process's store (fsspec's info,
    asked of nothing but the others)."""
    import uuid

    from fsspec.implementations.memory import MemoryFileSystem

    storage = Storage(f"memory://mm2-{uuid.uuid4().hex}/lake")
    storage.write("data/a.parquet", b"12345")
    duck = storage.duckdb_filesystem
    assert duck is not None and duck.store is storage.fs.store and duck.protocol == storage.fs.protocol
    root = storage.root_uri.removeprefix("memory://").rstrip("/")
    plain = MemoryFileSystem()
    expected = {p: plain.info(f"{root}/{p}") for p in ("data/a.parquet", "data")}
    for path, info in expected.items():
        assert duck.info(f"memory://{root}/{path}") == info
    with pytest.raises(FileNotFoundError):
        duck.info(f"{root}/data/b.parquet")

    def scanned(self: Any, path: str, **kwargs: Any) -> Any:
        raise AssertionError(f"info({path!r}) scans the whole memory store")

    monkeypatch.setattr(MemoryFileSystem, "info", scanned)
    assert duck.info(f"{root}/data/a.parquet") == expected["data/a.parquet"]
    assert duck.exists(f"{root}/data/a.parquet") and duck.size(f"{root}/data/a.parquet") == 5
