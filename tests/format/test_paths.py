"""SPEC 2 storage locations: root names, the hint, path optimisation, safe names, URIs."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trinitylake_dbapi.errors import InvalidLocationError
from trinitylake_dbapi.format import paths
from trinitylake_dbapi.format.paths import (
    LATEST_HINT_PATH,
    MAX_VERSION,
    check_relative_path,
    decode_hint,
    encode_hint,
    is_lakehouse_def_path,
    new_lakehouse_def_path,
    new_namespace_def_path,
    new_node_path,
    new_table_def_path,
    optimize_path,
    parse_root_node_path,
    qualify_root_uri,
    root_node_path,
)

# --- root node files ------------------------------------------------------------------


def test_root_node_spec_vector() -> None:
    assert root_node_path(100) == "_00100110000000000000000000000000.arrow"
    assert parse_root_node_path("_00100110000000000000000000000000.arrow") == 100
    assert root_node_path(0) == "_" + "0" * 32 + ".arrow"
    assert root_node_path(1) == "_1" + "0" * 31 + ".arrow"
    assert root_node_path(MAX_VERSION) == "_" + "1" * 32 + ".arrow"


@given(st.one_of(st.sampled_from([0, 1, MAX_VERSION]), st.integers(0, MAX_VERSION)))
def test_root_node_round_trip(version: int) -> None:
    name = root_node_path(version)
    assert len(name) == 1 + 32 + 6
    assert parse_root_node_path(name) == version
    check_relative_path(name)


@pytest.mark.parametrize("version", [-1, MAX_VERSION + 1, 2**40])
def test_root_node_path_refuses_out_of_range(version: int) -> None:
    with pytest.raises(ValueError):
        root_node_path(version)
    with pytest.raises(ValueError):
        encode_hint(version)


@pytest.mark.parametrize(
    "name",
    [
        "",
        "_" + "0" * 31 + ".arrow",  # 31 bits
        "_" + "0" * 33 + ".arrow",  # 33 bits
        "_" + "0" * 32 + ".ipc",  # seed 001 suffix is not written or read
        "_" + "0" * 32 + ".arrow\n",
        "_" + "0" * 32 + ".arrowx",
        "_" + "0" * 32 + "xarrow",
        "_" + "0" * 31 + "2.arrow",
        "_" + "0" * 31 + "\u0661.arrow",  # ARABIC-INDIC DIGIT ONE
        "0" * 32 + ".arrow",
        "x/_" + "0" * 32 + ".arrow",
        " _" + "0" * 32 + ".arrow",
        "_lakehouse_def_00000000-0000-0000-0000-000000000000.binpb",
        LATEST_HINT_PATH,
    ],
)
def test_parse_root_node_path_rejects_near_misses(name: str) -> None:
    assert parse_root_node_path(name) is None


# --- latest hint --------------------------------------------------------------------


@given(st.integers(0, MAX_VERSION))
def test_hint_round_trip(version: int) -> None:
    assert decode_hint(encode_hint(version)) == version


def test_hint_vector_and_whitespace() -> None:
    assert encode_hint(100) == b"100"
    assert decode_hint(b"100\n") == 100
    assert decode_hint(b"  7 \r\n") == 7
    assert decode_hint(bytearray(b"4294967295")) == MAX_VERSION


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"   \n",
        b"-1",
        b"+1",
        b"1_000",
        b"1 2",
        b"0x10",
        b"12a",
        b"4294967296",
        b"9" * 5000,
        "\u0663".encode(),  # non-ASCII digit
        b"\xff\xfe1",
        b"1\x00",
        b"1.0",
    ],
)
def test_hint_garbage_is_none(data: bytes) -> None:
    assert decode_hint(data) is None


# --- path optimisation -------------------------------------------------------------------


def _murmur3_x86_32(data: bytes, seed: int = 0) -> int:
    """Reference MurmurHash3 x86 32-bit, written from the algorithm, not from mmh3."""
    c1, c2, mask = 0xCC9E2D51, 0x1B873593, 0xFFFFFFFF

    def rotl(x: int, r: int) -> int:
        return ((x << r) | (x >> (32 - r))) & mask

    h = seed
    n_blocks = len(data) // 4
    for i in range(n_blocks):
        k = int.from_bytes(data[4 * i : 4 * i + 4], "little")
        k = rotl((k * c1) & mask, 15) * c2 & mask
        h = (rotl(h ^ k, 13) * 5 + 0xE6546B64) & mask
    tail = data[4 * n_blocks :]
    if tail:
        k = int.from_bytes(tail, "little")
        k = rotl((k * c1) & mask, 15) * c2 & mask
        h ^= k
    h ^= len(data)
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & mask
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & mask
    h ^= h >> 16
    return h


def test_reference_murmur_matches_published_vectors() -> None:
    assert _murmur3_x86_32(b"") == 0
    assert _murmur3_x86_32(b"", 1) == 0x514E28B7
    assert _murmur3_x86_32(b"hello") == 0x248BFA47


def test_optimize_path_hand_computed_vector() -> None:
    original = "node-00000000-0000-0000-0000-000000000000.arrow"
    # h = 960036981 = 0b00111001001110010000000001110101
    assert optimize_path(original) == "0011/1001/0011/10010000-" + original


def test_optimize_path_replaces_slashes() -> None:
    # mmh3("a/b/c") = 2379200214 = 0b10001101110011111011011011010110
    assert optimize_path("a/b/c") == "1000/1101/1100/11111011-a-b-c"


@given(st.text(st.characters(codec="utf-8"), max_size=60))
def test_optimize_path_matches_reference(original: str) -> None:
    bits = format(_murmur3_x86_32(original.encode("utf-8")), "032b")
    expected = f"{bits[:4]}/{bits[4:8]}/{bits[8:12]}/{bits[12:20]}-" + original.replace("/", "-")
    assert optimize_path(original) == expected


_OPTIMIZED_RE = re.compile(r"[01]{4}/[01]{4}/[01]{4}/[01]{8}-[^/]*")
_UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"


def test_generated_path_shapes() -> None:
    node = new_node_path()
    assert re.fullmatch(r"[01]{4}/[01]{4}/[01]{4}/[01]{8}-node-" + _UUID + r"\.arrow", node)
    ns = new_namespace_def_path("sales")
    assert re.fullmatch(
        r"[01]{4}/[01]{4}/[01]{4}/[01]{8}-namespace-sales-" + _UUID + r"\.binpb", ns
    )
    table = new_table_def_path("sales", "orders")
    assert re.fullmatch(
        r"[01]{4}/[01]{4}/[01]{4}/[01]{8}-table-orders-sales-" + _UUID + r"\.binpb", table
    )
    # the prefix really is the hash of the original (with "/" -> "-" it is unchanged here)
    original = table[24:]
    assert optimize_path(original) == table
    assert new_node_path() != node and new_table_def_path("sales", "orders") != table


def test_lakehouse_def_path() -> None:
    path = new_lakehouse_def_path()
    assert re.fullmatch(r"_lakehouse_def_" + _UUID + r"\.binpb", path)
    assert is_lakehouse_def_path(path)
    assert new_lakehouse_def_path() != path
    for bad in [
        "_lakehouse_def_.binpb",
        "_lakehouse_def_x.binpb",
        path + "x",
        "x/" + path,
        path.replace(".binpb", ".pb"),
        "_00100110000000000000000000000000.arrow",
    ]:
        assert not is_lakehouse_def_path(bad), bad


HOSTILE_NAMES = [
    "../x",
    "..",
    ".",
    "a/b",
    "/abs",
    "*?[",
    "a\\b",
    "%2e%2e",
    "~user",
    "a:b|c<d>\"e'",
    "名前" * 50,  # 600 bytes of 3-byte characters
    "é" * 150,  # 300 bytes
    "😀" * 75,  # 300 bytes of 4-byte characters
    "x" * 300,
    "\U0010ffff",
    "a\u0301",  # combining mark
]


def _check_safe(path: str) -> None:
    assert _OPTIMIZED_RE.fullmatch(path), path
    assert path.count("/") == 3
    components = path.split("/")
    assert all(c not in ("", ".", "..") for c in components)
    assert all(len(c.encode("utf-8")) <= 255 for c in components)
    assert len(path.encode("utf-8")) <= paths.MAX_GENERATED_PATH_BYTES
    assert not set(path[24:]) & set("*?[]\\:%~|<>\"' ")
    assert all(c.isalnum() or c in "._-" for c in path[24:])
    check_relative_path(path)


@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_hostile_names_give_safe_paths(name: str) -> None:
    _check_safe(new_namespace_def_path(name))
    _check_safe(new_table_def_path(name, name))
    _check_safe(new_table_def_path("ns", name))


_valid_name = st.text(
    st.characters(min_codepoint=0x21, exclude_characters="\x7f", codec="utf-8"), min_size=1
)


@given(_valid_name, _valid_name)
def test_any_valid_name_gives_safe_paths(ns: str, table: str) -> None:
    _check_safe(new_namespace_def_path(ns))
    _check_safe(new_table_def_path(ns, table))


def test_name_part_truncation_on_character_boundary() -> None:
    path = new_namespace_def_path("é" * 150)
    part = path[24:].split("-")[1]
    assert part == "é" * 32  # 64 bytes exactly
    path = new_namespace_def_path("a" + "\U00020000" * 20)  # 4-byte CJK letter
    assert path[24:].split("-")[1] == "a" + "\U00020000" * 15  # 61 bytes; one more would be 65
    assert paths.MAX_GENERATED_PATH_BYTES == 202
    longest = new_table_def_path("n" * 100, "t" * 100)
    assert len(longest.encode("utf-8")) == paths.MAX_GENERATED_PATH_BYTES


def test_table_name_comes_first() -> None:
    assert "-table-orders-sales-" in new_table_def_path("sales", "orders")


# --- relative paths ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path", ["a", "a/b", "_latest_hint.txt", "0011/1001/0011/10010000-node-x.arrow", "a..b/.c"]
)
def test_check_relative_path_accepts(path: str) -> None:
    assert check_relative_path(path) == path


@pytest.mark.parametrize(
    "path", ["", "/a", "a//b", "a/", "./a", "a/./b", "../a", "a/..", "a\x00b", "..", "."]
)
def test_check_relative_path_refuses(path: str) -> None:
    with pytest.raises(InvalidLocationError) as info:
        check_relative_path(path)
    assert repr(path) in str(info.value)


# --- root URIs -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("uri", "qualified"),
    [
        ("s3://bucket/lake", "s3://bucket/lake/"),
        ("s3://bucket/lake/", "s3://bucket/lake/"),
        ("s3://bucket", "s3://bucket/"),
        ("memory://lake", "memory://lake/"),
        ("memory:///lake", "memory:///lake/"),
        ("file:///tmp/x/", "file:///tmp/x/"),
        ("file:///tmp/x", "file:///tmp/x/"),
        ("file:///", "file:///"),
        ("/tmp/x", "/tmp/x/"),
        ("/tmp/x/", "/tmp/x/"),
        ("/", "/"),
        ("lake", "lake/"),
        ("data/lake", "data/lake/"),
        ("s3://b/a.b/..c/x...", "s3://b/a.b/..c/x.../"),
    ],
)
def test_qualify_root_uri_accepts(uri: str, qualified: str) -> None:
    assert qualify_root_uri(uri) == qualified


@pytest.mark.parametrize(
    ("uri", "why"),
    [
        ("s3://b/x/../y", "'..'"),
        ("s3://b/x/..", "'..'"),
        ("s3://b/../y", "'..'"),
        ("file:///a/./b", "'.'"),
        ("file:///a/.", "'.'"),
        ("/a//b", "'//'"),
        ("/a/b//", "'//'"),
        ("s3://b//x", "'//'"),
        ("file:////", "'//'"),
        ("/a/../b", "'..'"),
        ("./", "'.'"),
        ("a/./b", "'.'"),
        ("s3://", "no location"),
        ("memory://..", "relative path component"),
        ("", "empty"),
        ("/tmp/x\x00", "control character"),
        (" /tmp/x", "whitespace"),
        ("file:/tmp/x", "without '//'"),
    ],
)
def test_qualify_root_uri_refuses(uri: str, why: str) -> None:
    with pytest.raises(InvalidLocationError) as info:
        qualify_root_uri(uri)
    msg = str(info.value)
    assert repr(uri) in msg and why in msg


def test_root_uri_message() -> None:
    expected = r"root URI 's3://b/x/\.\./y' is not qualified: '\.\.'"
    with pytest.raises(InvalidLocationError, match=expected):
        qualify_root_uri("s3://b/x/../y")


def test_a_leading_dot_slash_on_a_local_path_is_the_same_place() -> None:
    from trinitylake_dbapi.format.paths import qualify_root_uri

    assert qualify_root_uri("./mylake") == "mylake/"
    assert qualify_root_uri("././mylake/") == "mylake/"
    for refused in ("./", "a/./b", ".//x", "s3://b/./x", "file:///./x"):
        with pytest.raises(InvalidLocationError):
            qualify_root_uri(refused)


# --- FP1: exactly the names the format produces --------------------------------------

NAMES = st.text(min_size=1, max_size=80)


@given(NAMES, NAMES, st.integers(0, paths.MAX_VERSION))
def test_every_name_the_format_produces_is_recognised_as_its_kind(ns: str, table: str, version: int) -> None:
    assert paths.parse_format_path(paths.new_node_path()) == paths.FormatPath("node")
    assert paths.parse_format_path(paths.new_namespace_def_path(ns)) == paths.FormatPath("namespace")
    assert paths.parse_format_path(paths.new_table_def_path(ns, table)) == paths.FormatPath("table")
    assert paths.parse_format_path(paths.new_lakehouse_def_path()) == paths.FormatPath("lakehouse_def")
    assert paths.parse_format_path(paths.root_node_path(version)) == paths.FormatPath("root", version)


@settings(deadline=None)  # a first example took 510 ms on a loaded host (run under xdist)
@given(st.sampled_from(["node", "namespace", "table"]), NAMES, st.data())
def test_a_name_that_only_looks_like_a_format_file_is_not_one(kind: str, name: str, data: st.DataObject) -> None:
    # Issue 15, item 10: a user's file whose path looks like a format file was deleted by
    # expiration (the old pattern's ".+" crossed "/").
    made = {"node": paths.new_node_path(), "namespace": paths.new_namespace_def_path(name),
            "table": paths.new_table_def_path(name, name)}[kind]
    prefix, original = made[:24], made[24:]
    cut = data.draw(st.integers(1, len(original) - 1))
    variants = [
        prefix + original[:cut] + "/" + original[cut:],  # a file inside a look-alike folder
        prefix + original + "/part-0001.parquet",
        made[:-1],  # another suffix
        made + "x",
        "0" + made[1:] if made[0] == "1" else "1" + made[1:],  # a prefix that is not the hash
        "x/" + made,
    ]
    for path in variants:
        assert paths.parse_format_path(path) is None, path


def test_the_reported_lookalike_is_not_a_format_file() -> None:
    assert paths.parse_format_path("0000/0000/0000/00000000-table-events/part-0001.binpb") is None
    original = "table-events-ns-00000000-0000-4000-8000-000000000000.binpb"
    assert paths.parse_format_path(paths.optimize_path(original)) == paths.FormatPath("table")
