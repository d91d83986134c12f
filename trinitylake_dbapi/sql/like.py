"""SQL ``LIKE`` patterns, as ``SHOW NAMESPACES LIKE``, ``SHOW TABLES LIKE`` and the shell's
``.tables`` read them.

Rules, shared by both functions below:

  LK1 ``%`` matches any run of characters (none included), ``_`` exactly one character;
     every other character matches itself, case-sensitively (names are case-sensitive).
  LK2 A backslash makes the next character literal (``\\%``, ``\\_``, ``\\\\``); a
     trailing backslash, with nothing to escape, is itself.
  LK3 A pattern matches a whole name, never a part of one.

LIKE is SQL's business: the catalog lists names through a predicate
(``CatalogTransaction.list_tables(ns, matching)``), so this module turns a pattern into
one (``like_to_regex(pattern).fullmatch``), and tells when a pattern names one name
only, which the SQL layer answers by one key lookup instead of a listing.
"""

from __future__ import annotations

import re
from typing import Callable

__all__ = ["like_to_regex", "like_literal", "like_filter"]


def like_to_regex(pattern: str) -> re.Pattern[str]:
    """The regex of a LIKE ``pattern`` (LK1, LK2); match it with ``fullmatch`` (LK3)."""
    out = []
    chars = iter(pattern)
    for ch in chars:
        if ch == "\\":
            out.append(re.escape(next(chars, "\\")))
        elif ch == "%":
            out.append(".*")
        elif ch == "_":
            out.append(".")
        else:
            out.append(re.escape(ch))
    return re.compile("".join(out), re.DOTALL)


def like_filter(pattern: str | None) -> Callable[[str], object] | None:
    """The name predicate the catalog's listings take for a LIKE ``pattern`` (LK1-LK3);
    None, which lists every name, for no pattern."""
    return None if pattern is None else like_to_regex(pattern).fullmatch


def like_literal(pattern: str) -> str | None:
    """The one name a LIKE pattern matches when it has no wildcard (``%`` or ``_`` not
    escaped by ``\\``, LK2), else None."""
    if "\\" not in pattern:
        return None if "%" in pattern or "_" in pattern else pattern
    out = []
    chars = iter(pattern)
    for ch in chars:
        if ch == "\\":
            out.append(next(chars, "\\"))
        elif ch == "%" or ch == "_":
            return None
        else:
            out.append(ch)
    return "".join(out)
