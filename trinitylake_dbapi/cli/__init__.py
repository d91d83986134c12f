"""``trinitylake``: an SQL shell on a lakehouse.

Usage::

    trinitylake LOCATION [--create] [-c SQL | -f FILE] [--at VERSION] [--no-autocommit]
                         [--csv | --json | --markdown] [--no-headers]
                         [--storage-option KEY=VALUE ...]
    trinitylake verify LOCATION [--all-versions] [--data]   (see trinitylake_dbapi.verify)
    trinitylake serve LOCATION [--host H] [--port P] [--token-file F]  (cli/serve.py)
    python -m trinitylake_dbapi.cli ...                      (the same)

With ``-c`` or ``-f`` (``-`` is standard input) the statements and shell commands run in
order and the shell stops at the first error with exit status 1. Standard input that is
not a terminal is read as a script. Without them it reads from the terminal, like the
sqlite3 and duckdb shells (shell.py SH2-SH4: whole-statement history, shell commands,
Tab completion, a pager for results taller or wider than the terminal).

A line that starts with ``.`` or ``\\`` is a shell command (dotcommands.py), in a script
as at the terminal: ``.mode table|csv|json|markdown``, ``.headers on|off``, ``.output
[FILE]``, ``.once FILE``, ``.tables``, ``.schema``, ``.timer``, ``.help``, ``.quit``.
``--csv``, ``--json`` and ``--markdown`` set the first mode, ``--no-headers`` the headers.

Statements autocommit unless ``--no-autocommit`` is given or a ``BEGIN`` is open.
Results print as aligned tables unless a mode says otherwise (output.py OUT1-OUT5);
errors print as one line, ``ERROR: <message>``, on standard error, without a traceback.

The package: ``output`` (formats, pager), ``dotcommands`` (shell commands), ``history``,
``completion`` (Tab), ``shell`` (the loop); this module parses the command line.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
from typing import Any, Callable, NoReturn, Sequence

import trinitylake_dbapi
from trinitylake_dbapi import errors
from trinitylake_dbapi.cli.dotcommands import META_COMMANDS
from trinitylake_dbapi.cli.history import History
from trinitylake_dbapi.cli.output import (
    FORMATTERS, format_csv, format_json, format_markdown, format_table,
)  # fmt: skip
from trinitylake_dbapi.cli.shell import CONTINUATION, PROMPT, Shell, error_line, split_script

__all__ = [
    "main", "run", "SUBCOMMANDS", "META_COMMANDS", "FORMATTERS", "format_table", "format_csv",
    "format_json", "format_markdown", "Shell", "History", "PROMPT", "CONTINUATION",
    "split_script",
]  # fmt: skip

#: Subcommands: name -> function(argv) -> exit status. ``trinitylake NAME ...`` runs one
#: (a location cannot be spelled like a subcommand name).
SUBCOMMANDS: dict[str, Callable[[Sequence[str]], int]] = {}


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
    mode = p.add_mutually_exclusive_group()
    for name in ("csv", "json", "markdown"):
        mode.add_argument(f"--{name}", dest="mode", action="store_const", const=name,
                          help=f"print results as {name} (.mode {name})")  # fmt: skip
    p.add_argument("--headers", action=argparse.BooleanOptionalAction, default=True,
                   help="column names above table and csv results (.headers on|off)")  # fmt: skip
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
        print(error_line(e) + hint, file=err)
        return 1
    status = 0
    shell: Shell | None = None
    try:
        shell = Shell(conn, out, err)
        shell.mode = args.mode or "table"
        shell.headers = args.headers
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
        if shell is not None:
            shell.close()
        if conn.in_transaction:
            print("NOTICE: the open transaction was rolled back", file=err)
        try:
            conn.close()
        except errors.Error as e:
            print(error_line(e), file=err)
            status = 1
    return status


def _verify(argv: Sequence[str]) -> int:
    """``trinitylake verify LOCATION [--all-versions] [--data] [--storage-option KEY=VALUE ...]``.

    Prints every problem, then a summary line. Exit status: 0 when the lakehouse is
    valid (warnings such as orphan files allowed), 1 when problems were found (each a
    finding, damaged or unreadable files included), 2 when it could not run (a bad
    location, a storage failure): one line on stderr, never a traceback.
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
    parser.add_argument("--data", action="store_true",
                        help="also check the tables' Iceberg metadata and every file it reaches "
                        "(manifest lists, manifests, data files): present, of the recorded "
                        "size, whole Avro, Parquet ends")
    parser.add_argument("--storage-option", metavar="KEY=VALUE", type=_storage_option,
                        action="append", default=[], help="fsspec storage option (repeatable)")
    args = parser.parse_args(list(argv))
    try:
        report = verify(args.location, all_versions=args.all_versions, data=args.data,
                        storage_options=dict(args.storage_option) or None)
    except errors.Error as e:
        print(error_line(e), file=sys.stderr)
        return 2
    except Exception as e:  # noqa: BLE001 - could not run: one line and status 2, never a traceback
        print(f"ERROR: verify could not run: {type(e).__name__}: {e}".splitlines()[0], file=sys.stderr)
        return 2
    print(report.text())
    return 0 if report.ok else 1


SUBCOMMANDS["verify"] = _verify


def _serve(argv: Sequence[str]) -> int:
    """``trinitylake serve LOCATION ...``: the Iceberg REST catalog (cli/serve.py)."""
    from trinitylake_dbapi.cli.serve import serve_command

    return serve_command(argv, _storage_option)


SUBCOMMANDS["serve"] = _serve


def main(argv: Sequence[str] | None = None) -> int:
    """The ``trinitylake`` command's work; returns the exit status (tests call it in
    their own process; the command itself runs :func:`run`)."""
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


def run() -> NoReturn:
    """Entry point of the ``trinitylake`` command: :func:`main` in a process of its own,
    which then exits without collecting its garbage.

    When main returns, the connection is closed and the output written; what remains
    are the objects of the libraries the command imported (PyIceberg's models, sqlglot's,
    DuckDB's), which the interpreter's shutdown walks with the cyclic garbage collector
    before exiting: 0.1-0.3 s of a one-statement command (docs/performance.md). Frozen,
    they are out of the collector's reach, and their memory goes back with the process.
    ``atexit`` handlers (fsspec's sessions, for one) still run."""
    status = main()
    gc.freeze()
    sys.exit(status)
