"""How the shell prints a result: the formats of ``.mode`` and where the text goes.

Rules:

OUT1. A formatter is a pure function ``(column names, rows, headers) -> text`` without a
      trailing line break. NULL is ``NULL`` in the table and markdown modes, an empty
      field in CSV and ``null`` in JSON.
OUT2. CSV is RFC 4180 as the stdlib's ``csv`` writes it (fields with a comma, a quote, a
      CR or an LF are quoted, quotes doubled), records ending in LF as the duckdb shell's
      (RFC 4180 readers, the ``csv`` module's among them, accept it); values are written
      as the table mode shows them.
OUT3. JSON is one array of objects, one row a line, keys the column names in order (a
      repeated name is kept, not merged). Numbers stay numbers, except decimals, which
      are strings so that no digit is lost, and non-finite floats (``"nan"``); dates and
      times are ISO 8601 strings; binary is ``"0x..."`` hex; structs are objects, lists
      arrays.
OUT4. Markdown is a GitHub-flavoured pipe table: ``|`` and ``\\`` are escaped, a line
      break is ``<br>``, numeric columns are right-aligned. It always has its header row
      (a Markdown table needs one), as JSON always has its keys; ``.headers off`` drops
      the header of the table mode (with its rule and the row count) and of CSV.
OUT5. At an interactive prompt, a result taller or wider than the terminal goes through
      a pager (:class:`Pager`): ``$TRINITYLAKE_PAGER``, else ``$PAGER``, else ``less
      -FRX``, else ``more``; set to an empty string, no pager and no cap. Without any
      pager it is cut to the terminal's height, with a notice on standard error saying
      how many lines were left out and how to see them. Scripts and ``.output`` files
      are never paged or cut.
"""

from __future__ import annotations

import csv
import datetime as dt
import decimal
import io
import json
import math
import os
import shlex
import shutil
from typing import Any, Callable, Iterable, Sequence, TextIO

__all__ = [
    "FORMATTERS", "Formatter", "Pager", "cell_text", "format_csv", "format_json",
    "format_markdown", "format_table",
]  # fmt: skip

#: formatter(column names, rows, headers=True) -> text (OUT1).
Formatter = Callable[..., str]


def cell_text(value: Any) -> str:
    """A value as the table mode shows it (OUT1, OUT2)."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dt.datetime):
        # Fixed width: isoformat drops a zero fraction, which would jitter the columns.
        millis_only = value.microsecond % 1000 == 0
        return value.isoformat(sep=" ", timespec="milliseconds" if millis_only else "microseconds")
    if isinstance(value, (bytes, bytearray)):
        return "0x" + bytes(value).hex()
    return str(value)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float, decimal.Decimal)) and not isinstance(value, bool)


def format_table(columns: Sequence[str], rows: Iterable[Sequence[Any]], headers: bool = True) -> str:
    """An aligned table with a header and a row count, psql style. Numbers align right;
    a cell with line breaks spans several lines. Without ``headers``, the rows only."""
    rows = list(rows)
    cells = [[cell_text(v).split("\n") for v in row] for row in rows]
    widths = [len(c) if headers else 0 for c in columns]
    for row in cells:
        for i, lines in enumerate(row):
            widths[i] = max(widths[i], *(len(line) for line in lines))
    out = []
    if headers:
        out.append(" " + " | ".join(c.ljust(w) for c, w in zip(columns, widths)).rstrip())
        out.append("-" + "-+-".join("-" * w for w in widths) + "-")
    for raw, row in zip(rows, cells):
        height = max((len(lines) for lines in row), default=1)
        for k in range(height):
            parts = []
            for i, lines in enumerate(row):
                text = lines[k] if k < len(lines) else ""
                parts.append(text.rjust(widths[i]) if _is_number(raw[i]) else text.ljust(widths[i]))
            out.append(" " + " | ".join(parts).rstrip())
    if headers:
        n = len(rows)
        out.append(f"({n} row{'' if n == 1 else 's'})")
    return "\n".join(out)


def format_csv(columns: Sequence[str], rows: Iterable[Sequence[Any]], headers: bool = True) -> str:
    """RFC 4180 CSV (OUT2): a header line unless ``headers`` is false, then a line per row."""
    # The writer quotes a field holding any character of its line terminator: with CRLF,
    # a lone CR or LF in a value is quoted (with LF alone, a CR would end the record
    # for readers). Each record's CRLF then becomes the LF of OUT2.
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\r\n")
    records = []
    for row in ([columns] if headers else []) + [
        ["" if v is None else cell_text(v) for v in row] for row in rows
    ]:
        buffer.seek(0)
        buffer.truncate()
        writer.writerow(row)
        records.append(buffer.getvalue()[:-2])
    return "\n".join(records)


def _json_value(value: Any) -> Any:
    """A JSON-ready value (OUT3)."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, (dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, (bytes, bytearray)):
        return "0x" + bytes(value).hex()
    if isinstance(value, dict):
        return {str(k): _json_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_value(v) for v in value]
    return str(value)


def format_json(columns: Sequence[str], rows: Iterable[Sequence[Any]], headers: bool = True) -> str:
    """A JSON array with one object per row, one row a line, as duckdb's ``.mode json``
    (OUT3; the keys are always there, whatever ``headers`` says)."""

    def text(value: Any) -> str:
        return json.dumps(value, ensure_ascii=False)

    keys = [text(c) for c in columns]
    objects = [",".join(f"{k}:{text(_json_value(v))}" for k, v in zip(keys, row)) for row in rows]
    return "[" + ",\n".join("{" + o + "}" for o in objects) + "]"


def _markdown_cell(text: str) -> str:
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", "<br>")


def format_markdown(columns: Sequence[str], rows: Iterable[Sequence[Any]], headers: bool = True) -> str:
    """A GitHub-flavoured Markdown table (OUT4; always with its header row)."""
    rows = list(rows)
    header = [_markdown_cell(c) for c in columns]
    cells = [[_markdown_cell(cell_text(v)) for v in row] for row in rows]
    numeric = [
        any(_is_number(row[i]) for row in rows)
        and all(row[i] is None or _is_number(row[i]) for row in rows)
        for i in range(len(columns))
    ]
    widths = [max([3, len(h), *(len(row[i]) for row in cells)]) for i, h in enumerate(header)]

    def line(parts: Sequence[str]) -> str:
        return "| " + " | ".join(parts) + " |"

    out = [line([h.ljust(w) for h, w in zip(header, widths)])]
    rules = ["-" * (w + 1) + ":" if num else "-" * (w + 2) for w, num in zip(widths, numeric)]
    out.append("|" + "|".join(rules) + "|")
    for row in cells:
        out.append(line([c.rjust(w) if n else c.ljust(w) for c, w, n in zip(row, widths, numeric)]))
    return "\n".join(out)


#: ``.mode`` name (and ``--csv``, ``--json``, ``--markdown``) -> formatter.
FORMATTERS: dict[str, Formatter] = {
    "table": format_table,
    "csv": format_csv,
    "json": format_json,
    "markdown": format_markdown,
}


# ---------------------------------------------------------------------------
# The pager (OUT5)
# ---------------------------------------------------------------------------


class Pager:
    """Shows a text on a terminal: at once when it fits, else through a pager program, or
    cut to the terminal's height with a notice when there is none (OUT5)."""

    def __init__(self, out: TextIO, err: TextIO, command: str | None) -> None:
        self.out = out
        self.err = err
        #: The pager's command line; None: no program (cut), "": never page nor cut.
        self.command = command

    @classmethod
    def for_terminal(cls, out: TextIO, err: TextIO) -> "Pager":
        """The pager the environment asks for (OUT5)."""
        for name in ("TRINITYLAKE_PAGER", "PAGER"):
            if name in os.environ:
                return cls(out, err, os.environ[name].strip())
        for candidate in ("less -FRX", "more"):
            if shutil.which(candidate.split()[0]):
                return cls(out, err, candidate)
        return cls(out, err, None)

    @staticmethod
    def fits(text: str, size: os.terminal_size) -> bool:
        """Whether ``text`` shows whole on a terminal of ``size``, a line kept for the
        prompt."""
        lines = text.split("\n")
        return len(lines) < size.lines and all(len(line) <= size.columns for line in lines)

    def show(self, text: str) -> None:
        size = shutil.get_terminal_size()
        if self.command == "" or self.fits(text, size):
            print(text, file=self.out)
        elif self.command is None:
            lines = text.split("\n")
            keep = max(size.lines - 2, 1)
            print("\n".join(lines[:keep]), file=self.out)
            print(f"NOTICE: {len(lines) - keep} more lines not shown: no pager was found (set "
                  "PAGER, e.g. PAGER='less -S'), or write them all with .once FILE",
                  file=self.err)  # fmt: skip
        else:
            self._through(text)

    def _through(self, text: str) -> None:
        """Run the pager on ``text`` and wait for it; one that cannot start prints the
        text instead, after a notice."""
        import subprocess  # only when a pager runs: off the path of `trinitylake -c`

        self.out.flush()
        try:
            words = shlex.split(self.command or "")
        except ValueError:
            words = []
        try:
            pager = subprocess.Popen(words, stdin=subprocess.PIPE, encoding="utf-8", errors="replace")
        except (OSError, ValueError) as e:
            print(f"NOTICE: the pager {self.command!r} did not start ({e}); the result follows",
                  file=self.err)  # fmt: skip
            print(text, file=self.out)
            return
        assert pager.stdin is not None
        try:
            pager.stdin.write(text + "\n")
        except (OSError, KeyboardInterrupt):
            pass  # the user left the pager (or pressed Ctrl-C) before it read it all
        try:
            pager.stdin.close()
        except OSError:
            pass
        while True:
            try:
                pager.wait()
                return
            except KeyboardInterrupt:
                continue  # Ctrl-C is the pager's (less ignores it); wait for it to quit
