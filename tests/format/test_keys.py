"""SPEC 3 key encoding: the spec's vectors, name validation, and the order property."""

from __future__ import annotations

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from trinitylake_dbapi.errors import InvalidNameError
from trinitylake_dbapi.format import keys
from trinitylake_dbapi.format.keys import (
    KeyCodec,
    ObjectKey,
    decode_schema_id,
    encode_name,
    encode_schema_id,
    prefix_range,
    validate_name,
)

NS_MAX = 8
TABLE_MAX = 6
CODEC = KeyCodec(namespace_max_bytes=NS_MAX, table_max_bytes=TABLE_MAX)

# Every character a name may hold: code points > 0x20 except DEL and surrogates.
# A small alphabet is mixed in so that names often share prefixes or are prefixes of
# each other, which is where a padding mistake would break the order.
_any_char = st.characters(min_codepoint=0x21, exclude_characters="\x7f", codec="utf-8")
_name_char = st.one_of(st.sampled_from("ab\x21\x7e\x80é中😀"), _any_char)


def names(max_bytes: int) -> st.SearchStrategy[str]:
    return st.text(_name_char, min_size=1, max_size=max_bytes).filter(
        lambda s: len(s.encode("utf-8")) <= max_bytes
    )


# --- SPEC vectors -----------------------------------------------------------------


def test_spec_vectors() -> None:
    codec = KeyCodec(8, 8)
    assert codec.namespace_key("default") == "B===default "
    assert codec.table_key("default", "table") == "C===default table   "
    assert [encode_schema_id(i) for i in range(5)] == ["A===", "B===", "C===", "D===", "E==="]
    assert encode_schema_id(63) == "/==="
    assert encode_schema_id(64) == "BA=="
    assert encode_schema_id(64**3) == "BAAA"  # exactly 4 digits: no padding
    assert encode_schema_id(64**4) == "BAAAA==="
    assert encode_schema_id(64**4 - 1) == "////"
    assert encode_schema_id(keys.NAMESPACE_SCHEMA_ID) == "B==="
    assert encode_schema_id(keys.TABLE_SCHEMA_ID) == "C==="
    assert encode_schema_id(keys.LAKEHOUSE_SCHEMA_ID) == "A==="


def test_system_keys() -> None:
    assert keys.SYSTEM_KEYS == {
        "lakehouse_def",
        "previous_root",
        "rollback_from_root",
        "created_at_millis",
        "n_keys",
    }


def test_encode_name_pads_to_bytes_not_characters() -> None:
    assert encode_name("é", 4) == "é  "  # 2 bytes + 2 spaces
    assert len(encode_name("é", 4).encode("utf-8")) == 4
    assert encode_name("abcd", 4) == "abcd"


@given(st.integers(min_value=0, max_value=2**80))
def test_schema_id_round_trip(schema_id: int) -> None:
    text = encode_schema_id(schema_id)
    assert len(text) % 4 == 0 and len(text) >= 4
    assert decode_schema_id(text) == schema_id


@pytest.mark.parametrize(
    "text", ["", "A", "A==", "====", "AB==", "B=======", "B=B=", "*===", "B== ", "AA=="]
)
def test_decode_schema_id_refuses_malformed(text: str) -> None:
    with pytest.raises(ValueError):
        decode_schema_id(text)


def test_encode_schema_id_refuses_negative_and_non_int() -> None:
    with pytest.raises(ValueError):
        encode_schema_id(-1)
    with pytest.raises(TypeError):
        encode_schema_id(True)


# --- name validation --------------------------------------------------------------


@pytest.mark.parametrize("code", [*range(0x00, 0x21), 0x7F])
def test_forbidden_bytes_are_refused(code: int) -> None:
    name = "ab" + chr(code) + "c"
    with pytest.raises(InvalidNameError) as info:
        validate_name(name, 100, "namespace")
    msg = str(info.value)
    assert "namespace name" in msg and repr(name) in msg
    assert f"0x{code:02X}" in msg and "at byte 2" in msg


def test_space_message() -> None:
    with pytest.raises(InvalidNameError, match=r"namespace name 'a b' contains a space "
                       r"\(byte 0x20\) at byte 1"):
        validate_name("a b", 100, "namespace")


def test_byte_offset_counts_utf8_bytes() -> None:
    with pytest.raises(InvalidNameError, match="at byte 4"):
        validate_name("éé\tx", 100, "table")


def test_empty_name_refused() -> None:
    with pytest.raises(InvalidNameError, match="table name is empty"):
        validate_name("", 100, "table")


def test_too_many_utf8_bytes_refused() -> None:
    validate_name("é" * 50, 100, "column")  # 100 bytes: fits
    with pytest.raises(InvalidNameError, match="102 bytes.*maximum for a column name is 100"):
        validate_name("é" * 51, 100, "column")  # 51 characters but 102 bytes


def test_lone_surrogate_refused() -> None:
    with pytest.raises(InvalidNameError, match="surrogate U\\+D800"):
        validate_name("a\ud800", 100, "namespace")


def test_non_string_refused() -> None:
    with pytest.raises(InvalidNameError, match="must be a string"):
        validate_name(b"abc", 100, "namespace")  # type: ignore[arg-type]


def test_codec_validates_names_with_their_kind() -> None:
    with pytest.raises(InvalidNameError, match="namespace name 'toolongnamespace'"):
        CODEC.namespace_key("toolongnamespace")
    with pytest.raises(InvalidNameError, match="table name 'a b'"):
        CODEC.table_key("ns", "a b")
    with pytest.raises(InvalidNameError, match="namespace name"):
        CODEC.tables_range("a\x00")


def test_long_name_is_abbreviated_in_message() -> None:
    with pytest.raises(InvalidNameError) as info:
        validate_name("x" * 10_000, 100, "table")
    assert len(str(info.value)) < 300 and "10000" in str(info.value)


def test_a_key_in_words_for_messages() -> None:
    """What a transaction's conflict message calls an object; a key that does not decode
    is still named, as its repr."""
    assert CODEC.describe_key(CODEC.namespace_key("ns")) == "namespace 'ns'"
    assert CODEC.describe_key(CODEC.table_key("ns", "t")) == "table 'ns'.'t'"
    assert CODEC.describe_key("C===short") == repr("C===short")


def test_codec_refuses_bad_limits() -> None:
    with pytest.raises(ValueError):
        KeyCodec(0, 8)
    with pytest.raises(ValueError):
        KeyCodec(8, -1)


# --- decode -------------------------------------------------------------------------


@given(names(NS_MAX), names(TABLE_MAX))
def test_decode_inverts_encode(ns: str, table: str) -> None:
    assert CODEC.decode(CODEC.namespace_key(ns)) == ObjectKey("namespace", ns, None)
    assert CODEC.decode(CODEC.table_key(ns, table)) == ObjectKey("table", ns, table)


@pytest.mark.parametrize(
    "key",
    [
        "",
        "B===",
        "A===default ",  # lakehouse schema id has no object keys
        "D===default ",
        "B==default  ",
        "B===default",  # one byte short
        "B===default  ",  # one byte long
        "B===        ",  # empty name
        "B=== default",  # padding before the name
        "B===de ault ",  # space inside the name
        "B===de\x00ault",
        "C===default ",  # table key without a table
        "C===default table",  # table field one byte short
        "C===default table  ",  # table field one byte long
        "C===default tab  x",  # non-space after padding
        "C===defaulté" + "table",  # 'é' straddles the namespace/table boundary
        "lakehouse_def",
        "C===\ud800efault table ",
    ],
)
def test_decode_refuses_malformed(key: str) -> None:
    with pytest.raises(ValueError):
        KeyCodec(8, 6).decode(key)


# --- order properties ----------------------------------------------------------------


def _utf8(name: str) -> bytes:
    return name.encode("utf-8")


@settings(max_examples=300)
@given(st.lists(st.tuples(names(NS_MAX), names(TABLE_MAX)), min_size=2, max_size=20))
def test_key_order_equals_name_tuple_order(pairs: list[tuple[str, str]]) -> None:
    by_key = sorted(pairs, key=lambda p: CODEC.table_key(*p))
    by_tuple = sorted(pairs, key=lambda p: (_utf8(p[0]), _utf8(p[1])))
    assert by_key == by_tuple
    # str order of keys is also their UTF-8 byte order
    table_keys = [CODEC.table_key(*p) for p in pairs]
    assert sorted(table_keys) == sorted(table_keys, key=_utf8)
    namespaces = [p[0] for p in pairs]
    assert sorted(namespaces, key=CODEC.namespace_key) == sorted(namespaces, key=_utf8)


@given(names(NS_MAX), names(NS_MAX), names(TABLE_MAX), names(TABLE_MAX))
def test_pairwise_order(ns1: str, ns2: str, t1: str, t2: str) -> None:
    k1, k2 = CODEC.table_key(ns1, t1), CODEC.table_key(ns2, t2)
    expected = (_utf8(ns1), _utf8(t1)) < (_utf8(ns2), _utf8(t2))
    assert (k1 < k2) == expected
    assert (CODEC.namespace_key(ns1) < CODEC.namespace_key(ns2)) == (_utf8(ns1) < _utf8(ns2))


def test_prefix_name_sorts_first() -> None:
    # "a" < "a!" < "ab": padding must not push a shorter name behind a longer one.
    ks = [CODEC.table_key("ns", t) for t in ("a", "a!", "ab", "b")]
    assert ks == sorted(ks)
    ks = [CODEC.table_key(n, "t") for n in ("a", "a!", "ab", "b")]
    assert ks == sorted(ks)


@given(names(NS_MAX), names(NS_MAX), names(TABLE_MAX))
def test_ranges_partition_the_keys(ns: str, other: str, table: str) -> None:
    ns_lo, ns_hi = CODEC.namespaces_range()
    all_lo, all_hi = CODEC.tables_range()
    one_lo, one_hi = CODEC.tables_range(ns)
    nkey = CODEC.namespace_key(ns)
    tkey = CODEC.table_key(ns, table)
    okey = CODEC.table_key(other, table)
    # namespace keys and table keys never interleave
    assert ns_lo <= nkey < ns_hi <= all_lo <= tkey < all_hi
    assert not (all_lo <= nkey < all_hi)
    assert not (ns_lo <= tkey < ns_hi)
    # one namespace's range holds exactly its tables
    assert one_lo <= tkey < one_hi
    assert (one_lo <= okey < one_hi) == (other == ns)
    assert not (one_lo <= nkey < one_hi)


@given(
    st.lists(st.tuples(names(4), names(3)), min_size=1, max_size=30),
    names(4),
)
def test_tables_range_scan_lists_exactly_one_namespace(
    pairs: list[tuple[str, str]], ns: str
) -> None:
    codec = KeyCodec(4, 3)
    all_keys = sorted(
        {codec.table_key(*p) for p in pairs} | {codec.namespace_key(p[0]) for p in pairs}
    )
    lo, hi = codec.tables_range(ns)
    in_range = [k for k in all_keys if lo <= k < hi]
    expected = sorted({codec.table_key(n, t) for n, t in pairs if n == ns})
    assert in_range == expected
    assert [codec.decode(k).table for k in in_range] == sorted(
        {t for n, t in pairs if n == ns}, key=_utf8
    )


@given(st.text(min_size=1, max_size=6), st.text(max_size=8))
def test_prefix_range_is_exact(prefix: str, s: str) -> None:
    lo, hi = prefix_range(prefix)
    assert lo == prefix
    assert (lo <= s < hi) == s.startswith(prefix)
    assert (lo <= prefix + s < hi)


@given(st.text(st.characters(codec="utf-8"), min_size=1, max_size=4), st.text(max_size=4))
def test_prefix_range_bounds_are_valid_utf8(prefix: str, s: str) -> None:
    lo, hi = prefix_range(prefix)
    hi.encode("utf-8")  # never a lone surrogate
    assume(all(not 0xD800 <= ord(c) <= 0xDFFF for c in s))
    assert (lo <= s < hi) == s.startswith(prefix)


def test_prefix_range_edge_cases() -> None:
    assert prefix_range("B===") == ("B===", "B==>")
    assert prefix_range("a\U0010ffff") == ("a\U0010ffff", "b")
    assert prefix_range("\ud7ff") == ("\ud7ff", "\ue000")
    with pytest.raises(ValueError):
        prefix_range("")
    with pytest.raises(ValueError):
        prefix_range("\U0010ffff")


# --- N2: names this library writes -------------------------------------------------

import re  # noqa: E402
import unicodedata  # noqa: E402

from hypothesis import given as _given  # noqa: E402
from hypothesis import strategies as _st  # noqa: E402

from trinitylake_dbapi.format.keys import validate_new_name  # noqa: E402


def written_name_ok(name: str, max_bytes: int) -> bool:
    """The rule of docs/format.md, written out independently of keys.py."""
    try:
        data = name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return (
        0 < len(data) <= max_bytes
        and unicodedata.normalize("NFC", name) == name
        and not any(unicodedata.category(c) in ("Zs", "Zl", "Zp", "Cc", "Cf") for c in name)
        and b"\x7f" not in data and not any(b <= 0x20 for b in data)
    )


@_given(_st.text(max_size=40), _st.integers(1, 60))
def test_a_new_name_is_accepted_exactly_when_it_follows_the_rule(name: str, max_bytes: int) -> None:
    # Issue 15, item 15: NFC, no Zs/Zl/Zp/Cc/Cf, and the byte limit.
    try:
        validate_new_name(name, max_bytes, "column")
        accepted = True
    except InvalidNameError as e:
        accepted = False
        assert str(e).startswith("column name")
    assert accepted == written_name_ok(name, max_bytes)


@pytest.mark.parametrize(
    "name, why",
    [
        ("e\u0301", "not in Unicode normalization form NFC; write it as 'é'"),
        ("a\u00a0b", "U+00A0 (NO-BREAK SPACE, category Zs) at character 1"),
        ("a\u3000b", "U+3000 (IDEOGRAPHIC SPACE, category Zs)"),
        ("a\u2028b", "a line separator U+2028"),
        ("a\u200bb", "a format character U+200B (ZERO WIDTH SPACE, category Cf)"),
        ("\u202eevil", "U+202E (RIGHT-TO-LEFT OVERRIDE, category Cf) at character 0"),
        ("\ufeffbom", "U+FEFF"),
        ("a\u0085b", "U+0085"),
        ("a b", "a space (byte 0x20)"),
    ],
)
def test_refused_new_names_say_which_character_and_where(name: str, why: str) -> None:
    with pytest.raises(InvalidNameError, match=re.escape(why)):
        validate_new_name(name, 100, "table")
