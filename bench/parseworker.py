"""One side of the sqlglot / sqlglotc comparison (bench/parsing.py), in a process of its own.

Which sqlglot a process runs is decided by its import path: sqlglotc ships no module of
its own, it puts compiled ``.so`` files next to sqlglot's ``.py`` files, and Python loads
an extension module before a source file of the same name. So the parent starts this
script twice, once with the project's venv as it is (pure-Python sqlglot) and once with
a ``pip install --target`` directory holding sqlglot and sqlglotc of the same version
first on ``PYTHONPATH``.

``python parseworker.py LAKEHOUSE`` answers ``info`` once (the sqlglot version, whether
it is the compiled build, and why the DB-API cannot run here, if it cannot), then reads
requests from stdin and answers on stdout, one JSON document per line each. A request is
``{"round": r, "iterations": k, "statements": {name: template}}``; the answer gives, per
kind of work and statement, the seconds per statement, measured here (the pipe's round
trip is never part of a measurement), and under ``cpu`` the same in CPU time of this
process (``time.process_time``: on a loaded host the wall time of CPU-bound work is
mostly waiting for a core; DuckDB's threads count in it too):

* ``tokenize``: the TrinityLake tokenizer (runs on both builds: its compiled core is
  used by composition, not subclassed);
* ``parse``: what the cursor does with a text it has not seen: ``sql.plain.recognise``
  (the plainest DESCRIBE, SHOW TABLES and DROP TABLE, which then run without sqlglot),
  and for any other text ``sql.dialect.parse``, tokenize + the TrinityLake parser; on
  the compiled build the parser fails, and the answer names the error instead of a time;
* ``parse_spark``: sqlglot's own Spark dialect, no subclass: what compiling sqlglot gives
  a parser that it allows (the dialect TrinityLake SQL is built on);
* ``dbapi``: ``cursor.execute`` + ``fetchall`` in autocommit: the whole statement,
  including its parse, as every text is new to the cursor (its cache of parsed texts
  never answers). ``{n}`` in a template is replaced by a name part unique in the run
  (``<round>_<i>``): CREATE TABLE makes a new table each time, and the later statements
  name that table, so their texts are unique too, in the plain spelling a client sends
  (a comment, another way to make a text unique, would turn the fast path off).

Rules: no timing in the parent; an error of a kind of work is answered once, as text, and
that kind is not tried again in this process.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from typing import Any, Callable


def sqlglot_build() -> dict[str, Any]:
    """The sqlglot this process imported: version, compiled or not, and where from."""
    import sqlglot
    import sqlglot.tokens

    compiled = bool(getattr(sqlglot.tokens, "SQLGLOTC_INSTALLED", False))
    return {"version": sqlglot.__version__, "compiled": compiled, "path": sqlglot.__file__}


class Worker:
    """The four kinds of work over one lakehouse (see the module docstring)."""

    def __init__(self, lakehouse: str) -> None:
        import sqlglot

        import trinitylake_dbapi
        from trinitylake_dbapi.sql.dialect import parse, tokenize
        from trinitylake_dbapi.sql.plain import recognise

        # sqlglot's Spark parser logs a warning for each statement it reads as a Command
        # (SHOW TABLES): not what is measured.
        logging.getLogger("sqlglot").setLevel(logging.ERROR)
        self.sqlglot = sqlglot
        self.tokenize = tokenize
        self.parse = lambda text: recognise(text) or parse(text)
        self.errors: dict[str, str] = {}
        self.cursor = None
        try:
            conn = trinitylake_dbapi.connect(lakehouse, autocommit=True)
            self.cursor = conn.cursor()
            self.cursor.execute("SHOW NAMESPACES")
            self.cursor.fetchall()
        except Exception as exc:  # noqa: BLE001 - reported, the other kinds still run
            self.errors["dbapi"] = f"{type(exc).__name__}: {exc}"

    def info(self) -> dict[str, Any]:
        """The sqlglot build, and the errors met so far (the DB-API's, at start)."""
        return {"sqlglot": sqlglot_build(), "errors": dict(self.errors)}

    def run(self, round_: int, iterations: int, statements: dict[str, str]) -> dict[str, Any]:
        """One round: every kind of work over every statement, ``iterations`` times each."""
        spark = self.sqlglot.parse_one
        kinds: dict[str, Callable[[str], Any]] = {
            "tokenize": self.tokenize,
            "parse": self.parse,
            "parse_spark": lambda text: spark(text, read="spark"),
            "dbapi": self._execute,
        }
        out: dict[str, Any] = {kind: {} for kind in kinds}
        out["cpu"] = {kind: {} for kind in kinds}
        for name, template in statements.items():
            for kind, work in kinds.items():
                if kind in self.errors:
                    continue
                texts = [template.format(n=f"{round_}_{i}") for i in range(iterations)]
                try:
                    started, cpu = time.perf_counter(), time.process_time()
                    for text in texts:
                        work(text)
                    out["cpu"][kind][name] = (time.process_time() - cpu) / iterations
                    out[kind][name] = (time.perf_counter() - started) / iterations
                except Exception as exc:  # noqa: BLE001 - reported once, not retried
                    self.errors[kind] = f"{type(exc).__name__}: {exc}"
        out["errors"] = dict(self.errors)
        return out

    def _execute(self, text: str) -> None:
        """One statement through the cursor, fetched to the end."""
        assert self.cursor is not None
        self.cursor.execute(text)
        if self.cursor.description is not None:
            self.cursor.fetchall()


def main(argv: list[str]) -> int:
    """``parseworker.py LAKEHOUSE``: answer the info, then every request until ``close``."""
    (lakehouse,) = argv
    answers = sys.stdout
    sys.stdout = sys.stderr  # nothing but answers on the pipe
    try:
        worker = Worker(lakehouse)
        answer: Any = {"ok": worker.info()}
    except Exception as exc:  # noqa: BLE001 - the parent reports why the side is missing
        answer = {"error": f"{type(exc).__name__}: {exc}"}
    answers.write(json.dumps(answer) + "\n")
    answers.flush()
    if "error" in answer:
        return 1
    for line in sys.stdin:
        request = json.loads(line)
        if request.get("close"):
            break
        try:
            answer = {"ok": worker.run(request["round"], request["iterations"], request["statements"])}
        except Exception as exc:  # noqa: BLE001 - sent to the parent, which raises it
            answer = {"error": f"{type(exc).__name__}: {exc}"}
        answers.write(json.dumps(answer) + "\n")
        answers.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
