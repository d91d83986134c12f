"""``trinitylake``: an SQL shell on a lakehouse.

Usage::

    trinitylake LOCATION [--create] [-c SQL | -f FILE] [--at VERSION] [--no-autocommit]
                         [--storage-option KEY=VALUE ...]
    trinitylake verify LOCATION [--all-versions]   (see trinitylake_dbapi.verify)

With ``-c`` or ``-f`` (``-`` is standard input) the statements run in order and the
shell stops at the first error with exit status 1. Without them it reads statements
from the terminal: a statement ends with ``;`` and may span lines; history is kept with
readline in ``~/.trinitylake_history`` (``TRINITYLAKE_HISTORY`` overrides); ``\\q``
quits, ``\\?`` helps. Standard input that is not a terminal is read as a script.

Statements autocommit unless ``--no-autocommit`` is given or a ``BEGIN`` is open.
Results print as aligned tables; errors print as one line, ``ERROR: <message>``, on
standard error, without a traceback.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
from typing import Any, Callable, Iterable, Sequence, TextIO

import trinitylake_dbapi
from trinitylake_dbapi import errors
from trinitylake_dbapi.sql.dialect import split_statements

__all__ = ["main", "SUBCOMMANDS", "format_table"]

PROMPT = "trinitylake> "
CONTINUATION = "         ...> "
HELP = """\
Statements end with ';' and may span several lines. Examples:
  SHOW NAMESPACES;   SHOW TABLES [IN ns];   DESCRIBE ns.t;   SHOW CREATE TABLE ns.t;
  CREATE NAMESPACE ns;   CREATE TABLE ns.t (id BIGINT NOT NULL, name STRING, PRIMARY KEY (id));
  SHOW VERSIONS;   SHOW TABLES FOR SYSTEM_VERSION AS OF 3;   ROLLBACK TO VERSION 3;
  SELECT * FROM information_schema.columns WHERE table_schema = 'ns';
  BEGIN; ...; COMMIT;   (otherwise every statement commits on its own)
Shell commands: \\q quit, \\? this help."""

#: Subcommands: name -> function(argv) -> exit status. ``trinitylake NAME ...`` runs one
#: (a location cannot be spelled like a subcommand name).
SUBCOMMANDS: dict[str, Callable[[Sequence[str]], int]] = {}


# ---------------------------------------------------------------------------
# Output
# ---------------------------------------------------------------------------


def _cell(value: Any) -> str:
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
    return isinstance(value, (int, float)) and not isinstance(value, bool) or (
        type(value).__name__ == "Decimal"
    )


def format_table(columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """An aligned table with a header and a row count, psql style. Numbers align right;
    a cell with line breaks spans several lines."""
    rows = list(rows)
    cells = [[_cell(v).split("\n") for v in row] for row in rows]
    widths = [len(c) for c in columns]
    for row in cells:
        for i, lines in enumerate(row):
            widths[i] = max(widths[i], *(len(line) for line in lines))
    out = [" " + " | ".join(c.ljust(w) for c, w in zip(columns, widths)).rstrip()]
    out.append("-" + "-+-".join("-" * w for w in widths) + "-")
    for raw, row in zip(rows, cells):
        height = max((len(lines) for lines in row), default=1)
        for k in range(height):
            parts = []
            for i, lines in enumerate(row):
                text = lines[k] if k < len(lines) else ""
                parts.append(text.rjust(widths[i]) if _is_number(raw[i]) else text.ljust(widths[i]))
            out.append(" " + " | ".join(parts).rstrip())
    n = len(rows)
    out.append(f"({n} row{'' if n == 1 else 's'})")
    return "\n".join(out)


def _one_line(error: BaseException) -> str:
    text = " ".join(str(error).split())
    return f"ERROR: {text}" if text else f"ERROR: {type(error).__name__}"


# ---------------------------------------------------------------------------
# Running statements
# ---------------------------------------------------------------------------


class Shell:
    def __init__(self, conn: trinitylake_dbapi.Connection, out: TextIO, err: TextIO) -> None:
        self.conn = conn
        self.cur = conn.cursor()
        self.out = out
        self.err = err

    def run(self, sql: str) -> bool:
        """Run one statement and print its outcome; False after an error."""
        try:
            self.cur.execute(sql)
            if self.cur.description is None:
                print("OK", file=self.out)
            else:
                names = [d[0] for d in self.cur.description]
                print(format_table(names, self.cur.fetchall()), file=self.out)
            return True
        except BrokenPipeError:
            raise  # the reader went away (`| head`): main() exits quietly
        except errors.Error as e:
            print(_one_line(e), file=self.err)
        except Exception as e:  # noqa: BLE001 - the shell never shows a traceback
            print(_one_line(errors.InternalError(f"{type(e).__name__}: {e}")), file=self.err)
        return False

    def script(self, text: str) -> bool:
        """Run every statement of a script; stop at the first error."""
        statements, rest = split_statements(text)
        if rest:
            statements.append(rest)
        for sql in statements:
            if not self.run(sql):
                return False
        return True

    def interactive(self, stdin: TextIO) -> None:
        _setup_readline()
        print(
            f"trinitylake {trinitylake_dbapi.__version__} on {self.conn.location}"
            + (f" (read-only, version {self.conn.version})" if self.conn.read_only else "")
            + ". End statements with ';', \\? for help, \\q to quit.",
            file=self.out,
        )
        buffer = ""
        while True:
            try:
                line = input(CONTINUATION if buffer.strip() else PROMPT)
            except EOFError:
                print(file=self.out)
                break
            except KeyboardInterrupt:
                print("^C", file=self.out)
                buffer = ""
                continue
            if not buffer.strip() and line.strip() in ("\\q", "quit", "exit", "quit;", "exit;"):
                break
            if not buffer.strip() and line.strip() in ("\\?", "help", "\\h", "help;"):
                print(HELP, file=self.out)
                continue
            buffer += line + "\n"
            statements, rest = split_statements(buffer)
            for sql in statements:
                try:
                    self.run(sql)
                except KeyboardInterrupt:
                    print("^C", file=self.out)
            buffer = rest + "\n" if rest else ""
        _save_history()


def _history_path() -> str:
    return os.environ.get("TRINITYLAKE_HISTORY") or os.path.join(
        os.path.expanduser("~"), ".trinitylake_history"
    )


def _setup_readline() -> None:
    try:
        import readline
    except ImportError:  # pragma: no cover - platforms without readline
        return
    try:
        readline.read_history_file(_history_path())
    except OSError:
        pass
    readline.set_history_length(1000)


def _save_history() -> None:
    try:
        import readline

        readline.write_history_file(_history_path())
    except (ImportError, OSError):
        pass


# ---------------------------------------------------------------------------
# Arguments
# ---------------------------------------------------------------------------


def _storage_option(text: str) -> tuple[str, Any]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    try:
        return key, json.loads(value)
    except ValueError:
        return key, value


def _version(text: str) -> int | str:
    return int(text) if text.isdigit() else text


def _shell_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="trinitylake",
        description="SQL shell on a TrinityLake lakehouse. Subcommands: "
        + (", ".join(sorted(SUBCOMMANDS)) or "none yet") + ".",
        epilog="Locations: /path, file:///path, s3://bucket/lake, memory://name.",
    )
    p.add_argument("location", help="the lakehouse location")
    p.add_argument("--create", action="store_true", help="create the lakehouse if missing")
    source = p.add_mutually_exclusive_group()
    source.add_argument("-c", "--command", metavar="SQL", help="run these statements and exit")
    source.add_argument("-f", "--file", metavar="FILE", help="run a script ('-' = stdin) and exit")
    p.add_argument("--at", metavar="VERSION", type=_version,
                   help="open read-only at a version number or exported snapshot name")  # fmt: skip
    p.add_argument("--no-autocommit", action="store_true",
                   help="run statements in a transaction; COMMIT publishes it")  # fmt: skip
    p.add_argument("--storage-option", metavar="KEY=VALUE", type=_storage_option,
                   action="append", default=[], help="fsspec storage option (repeatable)")  # fmt: skip
    return p


def _shell(argv: Sequence[str]) -> int:
    args = _shell_parser().parse_args(list(argv))
    out, err = sys.stdout, sys.stderr
    try:
        conn = trinitylake_dbapi.connect(
            args.location,
            create=args.create,
            storage_options=dict(args.storage_option) or None,
            autocommit=not args.no_autocommit,
            version=args.at,
        )
    except errors.Error as e:
        hint = " (use --create)" if isinstance(e, errors.ObjectNotFoundError) and not args.create else ""
        print(_one_line(e) + hint, file=err)
        return 1
    status = 0
    try:
        shell = Shell(conn, out, err)
        if args.command is not None:
            status = 0 if shell.script(args.command) else 1
        elif args.file is not None:
            try:
                if args.file == "-":
                    text = sys.stdin.read()
                else:
                    with open(args.file, encoding="utf-8") as f:
                        text = f.read()
            except OSError as e:
                print(f"ERROR: cannot read {args.file!r}: {e.strerror or e}", file=err)
                return 1
            status = 0 if shell.script(text) else 1
        elif sys.stdin.isatty():
            shell.interactive(sys.stdin)
        else:
            status = 0 if shell.script(sys.stdin.read()) else 1
    finally:
        if conn.in_transaction:
            print("NOTICE: the open transaction was rolled back", file=err)
        try:
            conn.close()
        except errors.Error as e:
            print(_one_line(e), file=err)
            status = 1
    return status


def _verify(argv: Sequence[str]) -> int:
    """``trinitylake verify LOCATION [--all-versions] [--storage-option KEY=VALUE ...]``.

    Prints every problem, then a summary line. Exit status: 0 when the lakehouse is
    valid (warnings such as orphan files allowed), 1 on a violation, 2 when it could
    not be verified (a bad location, a storage failure).
    """
    from trinitylake_dbapi.verify import verify

    parser = argparse.ArgumentParser(
        prog="trinitylake verify",
        description="Check every SPEC rule on every file of a lakehouse and list orphan "
        "files. Exit status 0: valid; 1: violations; 2: could not verify.",
    )
    parser.add_argument("location", help="the lakehouse location")
    parser.add_argument("--all-versions", action="store_true",
                        help="parse every version's definitions and check K3 per version")
    parser.add_argument("--storage-option", metavar="KEY=VALUE", type=_storage_option,
                        action="append", default=[], help="fsspec storage option (repeatable)")
    args = parser.parse_args(list(argv))
    try:
        report = verify(args.location, all_versions=args.all_versions,
                        storage_options=dict(args.storage_option) or None)
    except errors.Error as e:
        print(_one_line(e), file=sys.stderr)
        return 2
    print(report.text())
    return 0 if report.ok else 1


SUBCOMMANDS["verify"] = _verify


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``trinitylake`` command; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in SUBCOMMANDS:
        return SUBCOMMANDS[argv[0]](argv[1:])
    try:
        return _shell(argv)
    except KeyboardInterrupt:
        print(file=sys.stderr)
        return 130
    except BrokenPipeError:
        # Standard output was closed early (`trinitylake lake -c ... | head`): stop
        # quietly, and keep Python from complaining when it flushes stdout at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141


if __name__ == "__main__":
    sys.exit(main())
