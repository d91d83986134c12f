"""Runs the python and sql blocks of one documentation page (see test_docs.py).

Started by the docs test with the page's temporary directory as the working directory.
Requests and answers are JSON lines: the requests on stdin, the answers on the file
descriptor that was standard output when the worker started. Standard output itself is
then pointed at standard error, so output written below Python (a JVM, a C library)
never mixes with the answers; what Python code prints is captured per block.

    {"kind": "python", "code": "..."}  ->  {"output": "...", "error": null | "traceback"}
    {"kind": "sql", "code": "..."}     ->  {"output": "...", "error": null}

Python blocks share one namespace. SQL blocks run, statement by statement, through the
``trinitylake`` shell's own ``Shell`` (so the output is what the shell prints) on one
connection, in autocommit mode as the shell runs, to the lakehouse ``lake`` in the
working directory, created by the first SQL block.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
import traceback


def main() -> None:
    answers = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = io.TextIOWrapper(os.fdopen(1, "wb", closefd=False), encoding="utf-8")
    namespace: dict = {"__name__": "__main__"}
    shell = None
    for line in sys.stdin:
        request = json.loads(line)
        buffer = io.StringIO()
        error = None
        try:
            with contextlib.redirect_stdout(buffer):
                if request["kind"] == "python":
                    code = compile(request["code"], request.get("where", "<docs>"), "exec")
                    exec(code, namespace)
                else:
                    if shell is None:
                        import trinitylake_dbapi
                        from trinitylake_dbapi.cli import Shell

                        conn = trinitylake_dbapi.connect("lake", create=True, autocommit=True)
                        shell = Shell(conn, buffer, buffer)
                    shell.out = shell.err = buffer
                    shell.script(request["code"])
        except BaseException:  # noqa: BLE001 - reported to the test
            error = traceback.format_exc()
        answers.write(json.dumps({"output": buffer.getvalue(), "error": error}) + "\n")
        answers.flush()


if __name__ == "__main__":
    main()
