"""The shell's history of whole inputs, kept in a file between sessions.

Rules:

HIS1. One entry is one whole input: the lines that completed a statement are one entry
      (recalled whole with the up arrow), a shell command is one entry, a repeat of the
      last entry is not added again.
HIS2. The file (``~/.trinitylake_history``, or ``$TRINITYLAKE_HISTORY``) holds one entry a
      line, ``\\`` written ``\\\\`` and a line break ``\\n``; it is replaced whole (a
      temporary file renamed over it), so a crash never leaves half of it. A read-only
      home directory only loses the history.
"""

from __future__ import annotations

import os
import re
from typing import Any

__all__ = ["History", "HISTORY_LENGTH", "escape_entry", "unescape_entry"]


def _history_path() -> str:
    return os.environ.get("TRINITYLAKE_HISTORY") or os.path.join(
        os.path.expanduser("~"), ".trinitylake_history"
    )


HISTORY_LENGTH = 1000


def escape_entry(entry: str) -> str:
    return entry.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r")


_ESCAPES = re.compile(r"\\(.)", re.DOTALL)


def unescape_entry(line: str) -> str:
    """The inverse of :func:`escape_entry`; an unknown escape (``\\q`` written by an older
    shell that stored lines raw) stays as it is."""
    return _ESCAPES.sub(
        lambda m: {"\\": "\\", "n": "\n", "r": "\r"}.get(m.group(1), m.group(0)), line
    )


class History:
    """Whole-input history on top of readline: ``input()`` adds nothing by itself
    (auto-history off); the shell adds one entry per complete input, which may span
    lines. Persisted by :meth:`save` in a file of one escaped entry a line (readline's
    own file format splits entries at line breaks)."""

    def __init__(self, readline: Any | None, path: str) -> None:
        self.readline = readline
        self.path = path

    @classmethod
    def open(cls) -> "History":
        """Load the history file into readline (nothing happens without readline)."""
        try:
            import readline
        except ImportError:  # pragma: no cover - platforms without readline
            return cls(None, _history_path())
        history = cls(readline, _history_path())
        readline.set_auto_history(False)
        readline.clear_history()
        try:
            with open(history.path, encoding="utf-8", errors="surrogateescape") as f:
                entries = [unescape_entry(line.rstrip("\n")) for line in f if line.strip()]
        except OSError:
            entries = []
        for entry in entries[-HISTORY_LENGTH:]:
            readline.add_history(entry)
        return history

    def entries(self) -> list[str]:
        if self.readline is None:
            return []
        n = self.readline.get_current_history_length()
        return [self.readline.get_history_item(i) or "" for i in range(1, n + 1)]

    def add(self, entry: str) -> None:
        """Add one entry (a whole statement, line breaks included); a repeat of the last
        entry is not added twice."""
        entry = entry.strip("\n")
        if self.readline is None or not entry.strip():
            return
        n = self.readline.get_current_history_length()
        if n and self.readline.get_history_item(n) == entry:
            return
        self.readline.add_history(entry)

    def save(self) -> None:
        """Write the last :data:`HISTORY_LENGTH` entries (best effort: a read-only home
        directory only loses the history). Bytes typed that are not UTF-8 (readline
        gives them as lone surrogates) are written back as they were typed."""
        if self.readline is None:
            return
        text = "".join(escape_entry(e) + "\n" for e in self.entries()[-HISTORY_LENGTH:])
        temporary = f"{self.path}.tmp{os.getpid()}"
        try:
            with open(temporary, "w", encoding="utf-8", errors="surrogateescape") as f:
                f.write(text)
            os.replace(temporary, self.path)
        except OSError:
            try:
                os.unlink(temporary)
            except OSError:
                pass

